//! The engine's answers to what the caller reports: responses, watch events, transport errors,
//! and the checks of the CertificateSigningRequest object they carry.

use super::*;

impl Engine<'_> {
    /// The request could not be sent or no (complete) response arrived (connection refused, TLS
    /// failure, timeout, a broken stream). Retried with backoff until the deadline. Ignored when
    /// no request is outstanding.
    pub fn on_transport_error(&mut self, now: i64) {
        match self.phase {
            Phase::Creating => self.backoff(now, Phase::Create),
            Phase::Fetching => self.backoff(now, Phase::Fetch),
            Phase::Watching => self.watch_broke(now),
            _ => {}
        }
    }

    pub(super) fn watch_broke(&mut self, now: i64) {
        if self.events_seen {
            // A stream that delivered events and ended: just watch again.
            self.watch_failures = 0;
            self.phase = Phase::Watch;
            return;
        }
        self.watch_failures = self.watch_failures.saturating_add(1);
        if self.watch_failures >= WATCH_FAILURES_BEFORE_POLL {
            self.poll_mode = true;
        }
        self.backoff(now, Phase::Watch);
    }

    /// The whole response to the outstanding request, with the response headers the engine
    /// reads (a 429 or 5xx with `Retry-After` is retried when the server asked:
    /// [`crate::pushback`]). For a watch this may be the complete stream (a transport that cannot
    /// stream delivers it this way). An issued certificate is checked against `expect`. Ignored
    /// when no request is outstanding; failures come out of the next [`Engine::poll`].
    pub fn on_response(
        &mut self,
        now: i64,
        status: u16,
        headers: &Headers<'_>,
        body: &[u8],
        expect: &Expect<'_>,
    ) {
        let phase = self.phase;
        match phase {
            Phase::Creating | Phase::Fetching | Phase::Watching => {}
            _ => return,
        }
        if phase == Phase::Watching && status == 200 {
            if self.on_stream_data(now, body, expect) == StreamControl::Continue {
                self.on_stream_end(now, expect);
            }
            return;
        }
        let _ = self.response(now, status, body, phase, pushback::asked(status, headers), expect);
    }

    pub(super) fn response(
        &mut self,
        now: i64,
        status: u16,
        body: &[u8],
        phase: Phase,
        asked: Option<u32>,
        expect: &Expect<'_>,
    ) -> Result<()> {
        match status {
            200 | 201 => {
                self.unauthorized = 0;
                let len = body.len();
                if len > self.work_len() {
                    self.fail(Error::TooLarge, Some(status), "", "response larger than the buffer");
                    return Err(Error::TooLarge);
                }
                if let Some(dst) = self.buf.get_mut(..len) {
                    dst.copy_from_slice(body);
                }
                self.on_object(now, status, len, phase, expect)
            }
            409 if phase == Phase::Creating => {
                if self.name.is_empty() {
                    self.fail_status(Error::HttpStatus, status, body);
                    return Err(Error::HttpStatus);
                }
                self.phase = Phase::Fetch;
                Ok(())
            }
            // Only a token waits out a 401: a restarted apiserver takes a moment to sync its
            // bootstrap tokens, while a client certificate it refuses (expired, another CA) is
            // refused for good, and the agent falls back at once.
            401 if phase != Phase::Creating
                && !self.bearer.is_empty()
                && self.unauthorized < UNAUTHORIZED_RETRIES =>
            {
                self.unauthorized += 1;
                let retry = if phase == Phase::Fetching { Phase::Fetch } else { Phase::Watch };
                self.backoff(now, retry);
                Ok(())
            }
            401 => {
                self.fail_status(Error::Unauthorized, status, body);
                Err(Error::Unauthorized)
            }
            403 => {
                self.fail_status(Error::Forbidden, status, body);
                Err(Error::Forbidden)
            }
            404 if phase == Phase::Fetching => {
                self.fail(Error::CsrDeleted, Some(404), "NotFound", "csr was deleted");
                Err(Error::CsrDeleted)
            }
            // A server that does not offer watch on this resource: poll instead.
            404 | 405 | 406 | 501 if phase == Phase::Watching => {
                self.poll_mode = true;
                self.phase = Phase::Fetch;
                Ok(())
            }
            408 | 429 | 500..=599 => {
                let retry = match phase {
                    Phase::Creating => Phase::Create,
                    Phase::Fetching => Phase::Fetch,
                    _ => Phase::Watch,
                };
                // Pushback on a watch says nothing against watching: it is no watch failure.
                if phase == Phase::Watching && asked.is_none() {
                    self.watch_broke(now);
                } else {
                    self.backoff(now, retry);
                }
                if let Some(secs) = asked {
                    self.wait_as_asked(now, secs);
                }
                Ok(())
            }
            _ => {
                self.fail_status(Error::HttpStatus, status, body);
                Err(Error::HttpStatus)
            }
        }
    }

    pub(super) fn fail_status(&mut self, e: Error, status: u16, body: &[u8]) {
        let mut reason = "";
        let mut message = "";
        let mut rbuf = [0u8; MAX_MESSAGE];
        let mut mbuf = [0u8; MAX_MESSAGE];
        if let Ok(Value::Object(o)) = json::parse(body) {
            if let Ok(Some(Value::String(s))) = o.get("reason") {
                reason = decode_lossy(s, &mut rbuf);
            }
            if let Ok(Some(Value::String(s))) = o.get("message") {
                message = decode_lossy(s, &mut mbuf);
            }
        }
        if message.is_empty() {
            message = e.message();
        }
        self.fail(e, Some(status), reason, message);
    }

    /// A chunk of a watch response with status 200. Events are newline-delimited JSON objects;
    /// chunk boundaries may fall anywhere. Answers whether to keep reading; when no watch is
    /// outstanding the chunk is ignored and the answer is [`StreamControl::Close`].
    pub fn on_stream_data(
        &mut self,
        now: i64,
        mut chunk: &[u8],
        expect: &Expect<'_>,
    ) -> StreamControl {
        if self.phase != Phase::Watching {
            return StreamControl::Close;
        }
        self.unauthorized = 0; // the stream was accepted
        while !chunk.is_empty() && self.phase == Phase::Watching {
            let nl = chunk.iter().position(|&b| b == b'\n');
            let (part, rest, complete) = match nl {
                Some(i) => (chunk.get(..i).unwrap_or(&[]), chunk.get(i + 1..).unwrap_or(&[]), true),
                None => (chunk, &[][..], false),
            };
            let end = self.pending + part.len();
            if end > self.work_len() {
                self.fail(Error::TooLarge, None, "", "watch event larger than the buffer");
                return StreamControl::Close;
            }
            if let Some(dst) = self.buf.get_mut(self.pending..end) {
                dst.copy_from_slice(part);
            }
            self.pending = end;
            chunk = rest;
            if complete {
                let len = core::mem::take(&mut self.pending);
                if self.on_event(now, len, expect).is_err() {
                    return StreamControl::Close;
                }
            }
        }
        if self.phase == Phase::Watching { StreamControl::Continue } else { StreamControl::Close }
    }

    /// The watch stream ended (server timeout or closed connection). Call it after the last
    /// [`Engine::on_stream_data`]; ignored when no watch is open.
    pub fn on_stream_end(&mut self, now: i64, expect: &Expect<'_>) {
        if self.phase != Phase::Watching {
            return;
        }
        let len = core::mem::take(&mut self.pending);
        if len > 0
            && self.buf.get(..len).is_some_and(|b| b.iter().any(|c| !c.is_ascii_whitespace()))
        {
            // A final event without a trailing newline.
            if self.on_event(now, len, expect).is_err() || self.phase != Phase::Watching {
                return;
            }
        }
        self.watch_broke(now);
    }

    pub(super) fn on_event(&mut self, now: i64, len: usize, expect: &Expect<'_>) -> Result<()> {
        let mut kind = EventKind::Other;
        let mut object: Option<usize> = None;
        {
            let line = self.buf.get(..len).unwrap_or(&[]);
            if line.iter().all(|c| c.is_ascii_whitespace()) {
                return Ok(());
            }
            let Ok(Value::Object(ev)) = json::parse(line) else {
                self.fail(Error::MalformedResponse, None, "", "malformed watch event");
                return Err(Error::MalformedResponse);
            };
            if let Ok(Some(Value::String(t))) = ev.get("type") {
                kind = if t.eq_str("ADDED") || t.eq_str("MODIFIED") {
                    EventKind::Object
                } else if t.eq_str("DELETED") {
                    EventKind::Deleted
                } else if t.eq_str("ERROR") {
                    EventKind::Error
                } else {
                    EventKind::Other
                };
            }
            if let Ok(Some(Value::Object(o))) = ev.get("object") {
                // Offset of the object inside the line (it is a sub-slice of it).
                let start = (o.raw().as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
                object = Some(start);
            }
        }
        self.events_seen = true;
        self.watch_failures = 0;
        match (kind, object) {
            (EventKind::Deleted, _) => {
                self.fail(Error::CsrDeleted, None, "", "csr was deleted");
                Err(Error::CsrDeleted)
            }
            (EventKind::Error, Some(start)) => {
                // Usually 410 Gone (too old resource version): watch again.
                let code = {
                    let obj = self.buf.get(start..len).unwrap_or(&[]);
                    json::parse_prefix(obj)
                        .ok()
                        .and_then(|(v, _)| v.as_object())
                        .and_then(|o| o.get("code").ok().flatten())
                        .and_then(|v| v.as_i64())
                };
                if code == Some(410) {
                    self.phase = Phase::Watch;
                    return Ok(());
                }
                self.watch_broke(now);
                Ok(())
            }
            (EventKind::Object, Some(start)) => {
                let obj_len = {
                    let obj = self.buf.get(start..len).unwrap_or(&[]);
                    json::parse_prefix(obj).map(|(v, _)| v.as_object().map(|o| o.raw().len()))
                };
                match obj_len {
                    Ok(Some(n)) => {
                        self.buf.copy_within(start..start + n, 0);
                        self.on_object(now, 200, n, Phase::Watching, expect)
                    }
                    _ => {
                        self.fail(Error::MalformedResponse, None, "", "malformed watch event");
                        Err(Error::MalformedResponse)
                    }
                }
            }
            _ => Ok(()),
        }
    }

    /// A CertificateSigningRequest object in `buf[..len]` (create response, GET, watch event).
    pub(super) fn on_object(
        &mut self,
        now: i64,
        status: u16,
        len: usize,
        phase: Phase,
        expect: &Expect<'_>,
    ) -> Result<()> {
        // Two steps so that the parser's frame is gone before the verifier's is pushed (on a
        // microcontroller's stack the two together are what counts).
        if self.take_object(now, status, len, phase)? { self.validate(now, expect) } else { Ok(()) }
    }

    /// Take the CSR object in `buf[..len]`: `Ok(true)` when it carries the issued certificate
    /// (now in `cert`, to be validated).
    #[inline(never)]
    pub(super) fn take_object(
        &mut self,
        now: i64,
        status: u16,
        len: usize,
        phase: Phase,
    ) -> Result<bool> {
        let mut outcome = ObjectOutcome::Pending;
        let mut detail = FailureDetail::default();
        {
            let body = self.buf.get(..len).unwrap_or(&[]);
            let parsed = match json::parse(body) {
                Ok(Value::Object(o)) => o,
                _ => {
                    self.fail(
                        Error::MalformedResponse,
                        Some(status),
                        "",
                        "response is not a JSON object",
                    );
                    return Err(Error::MalformedResponse);
                }
            };
            let read = read_csr_object(parsed);
            let csr = match read {
                Ok(c) => c,
                Err(e) => {
                    self.fail(e, Some(status), "", "response is not a CertificateSigningRequest");
                    return Err(e);
                }
            };
            // Identity: name and UID.
            let mut nbuf = [0u8; MAX_NAME];
            let name = csr.name.and_then(|s| s.decode_into(&mut nbuf).ok()).unwrap_or("");
            let mut ubuf = [0u8; MAX_NAME];
            let uid = csr.uid.and_then(|s| s.decode_into(&mut ubuf).ok()).unwrap_or("");
            if phase == Phase::Creating {
                self.name.clear();
                self.uid.clear();
                if self.name.push_str(name).is_err()
                    || self.uid.push_str(uid).is_err()
                    || name.is_empty()
                {
                    self.fail(
                        Error::MalformedResponse,
                        Some(status),
                        "",
                        "created object has no name",
                    );
                    return Err(Error::MalformedResponse);
                }
            } else if self.uid.is_empty() {
                // First sight of a pre-existing object (409): check it is ours, adopt its UID.
                if let Err(why) = self.compatible(&csr) {
                    self.fail(Error::CsrIncompatible, Some(status), "", why);
                    return Err(Error::CsrIncompatible);
                }
                if self.uid.push_str(uid).is_err() {
                    self.fail(Error::MalformedResponse, Some(status), "", "bad uid");
                    return Err(Error::MalformedResponse);
                }
            } else if !uid.is_empty() && uid != self.uid.as_str() {
                outcome = ObjectOutcome::Fail(Error::CsrUidChanged);
                push_lossy(&mut detail.message, "csr changed UIDs");
            }
            if matches!(outcome, ObjectOutcome::Pending) {
                // Conditions by type only, as client-go does.
                match csr.condition {
                    Condition::Denied { reason, message }
                    | Condition::Failed { reason, message } => {
                        let e = if matches!(csr.condition, Condition::Denied { .. }) {
                            Error::CsrDenied
                        } else {
                            Error::CsrFailed
                        };
                        let mut b = [0u8; MAX_MESSAGE];
                        push_lossy(
                            &mut detail.reason,
                            reason.map(|s| decode_lossy(s, &mut b)).unwrap_or(""),
                        );
                        let mut b = [0u8; MAX_MESSAGE];
                        push_lossy(
                            &mut detail.message,
                            message.map(|s| decode_lossy(s, &mut b)).unwrap_or(""),
                        );
                        outcome = ObjectOutcome::Fail(e);
                    }
                    Condition::Approved => {
                        if let Some(cert) = csr.certificate {
                            match self.cert.fill(|b| decode_base64_str(cert, b)) {
                                Ok(()) if !self.cert.is_empty() => {
                                    outcome = ObjectOutcome::Issued;
                                }
                                Ok(()) => {}
                                Err(e) => outcome = ObjectOutcome::Fail(e),
                            }
                        }
                    }
                    Condition::None => {}
                }
            }
        }
        if !matches!(outcome, ObjectOutcome::Issued) {
            self.cert.clear();
        }
        match outcome {
            ObjectOutcome::Pending => {
                if matches!(phase, Phase::Creating | Phase::Fetching) {
                    self.phase = if self.poll_mode && phase == Phase::Fetching {
                        self.until = now.saturating_add(POLL_INTERVAL_SECS);
                        self.resume = Phase::Fetch;
                        Phase::Backoff
                    } else {
                        Phase::Watch
                    };
                }
                self.attempt = 0;
                Ok(false)
            }
            ObjectOutcome::Fail(e) => {
                self.error = Some(e);
                self.phase = Phase::Failed;
                detail.status = Some(status);
                if detail.message.is_empty() {
                    push_lossy(&mut detail.message, e.message());
                }
                self.detail = detail;
                Err(e)
            }
            ObjectOutcome::Issued => Ok(true),
        }
    }

    /// ensureCompatible: same subject, same signer, and the CSR's key is ours and signed it.
    pub(super) fn compatible(&self, csr: &CsrView<'_>) -> core::result::Result<(), &'static str> {
        let Some(req_b64) = csr.request else { return Err("retrieved csr has no spec.request") };
        if let Some(signer) = csr.signer {
            if !signer.eq_str(self.cfg.signer_name()) {
                return Err("retrieved csr is not compatible: signer name differs");
            }
        }
        let mut pem = Filled::<MAX_CSR_PEM>::new();
        let pem = pem
            .fill(|b| decode_base64_str(req_b64, b))
            .map_err(|_| "retrieved csr: spec.request is not base64")?;
        let mut der = [0u8; MAX_CSR_DER];
        let req = CertificateRequest::from_pem(pem, &mut der)
            .map_err(|_| "retrieved csr: spec.request is not a CSR")?;
        // Subject: exactly O=system:nodes, CN=system:node:<name>.
        let cn_ok = req.common_name().is_some_and(|cn| {
            cn.starts_with(NODE_USER_PREFIX)
                && cn.as_str().is_some_and(|s| {
                    s.get(NODE_USER_PREFIX.len()..) == Some(self.cfg.node_name.as_str())
                })
        });
        let mut orgs = req.organizations();
        let o_ok = orgs.next().is_some_and(|o| o.eq_str(NODES_GROUP)) && orgs.next().is_none();
        if !cn_ok || !o_ok || req.subject().count() != 2 {
            return Err("retrieved csr is not compatible: subject differs");
        }
        if req.spki_der() != self.spki.as_slice()
            || req.verify_signature_with(self.cfg.verifier.unwrap_or(SOFTWARE)).is_err()
        {
            return Err("retrieved csr is not compatible: not signed by our key");
        }
        Ok(())
    }

    pub(super) fn validate(&mut self, now: i64, expect: &Expect<'_>) -> Result<()> {
        let expected = Expected {
            node_name: &self.cfg.node_name,
            public_key: &self.spki,
            profile: expect.profile,
        };
        let verifier = self.cfg.verifier.unwrap_or(SOFTWARE);
        let (mut result, mut unanchored) =
            check_issued(verifier, &self.cert, expect, &expected, now, self.buf);
        self.clock_off = false;
        // Only the time wrong: the apiserver has just issued it for our new key, so it is the
        // clock that is off, not the certificate (NTP not there yet, a clock stepped). Judged
        // in the middle of its validity instead, it is stored; the edge-clock rule judges it
        // from then on.
        if let Err(Error::Verify(v)) = &result {
            if let (
                crate::error::Reason::Expired | crate::error::Reason::NotYetValid,
                crate::error::Detail::Validity { not_before, not_after, .. },
            ) = (v.reason, v.detail)
            {
                let mid = not_before.saturating_add(not_after.saturating_sub(not_before) / 2);
                let (again, u) =
                    check_issued(verifier, &self.cert, expect, &expected, mid, self.buf);
                match again {
                    Ok(_) => (result, unanchored, self.clock_off) = (again, u, true),
                    // Refused for something else too: that is the reason to give.
                    Err(Error::Verify(w))
                        if !matches!(
                            w.reason,
                            crate::error::Reason::Expired | crate::error::Reason::NotYetValid
                        ) =>
                    {
                        result = again;
                    }
                    Err(_) => {}
                }
            }
        }
        self.unanchored = unanchored;
        match result {
            Ok(v) => {
                self.verified = Some(v);
                self.phase = Phase::Done;
                Ok(())
            }
            Err(e) => {
                let e = match e {
                    Error::BufferTooSmall { .. } => Error::TooLarge,
                    e => e,
                };
                let mut msg = heapless::String::<MAX_MESSAGE>::new();
                let _ = fmt::write(&mut msg, format_args!("issued certificate rejected: {e}"));
                self.fail(e, None, "", &msg);
                Err(e)
            }
        }
    }
}

/// The issued chain checked at `now` against the CA bundle, or (with [`Expect::prove`]) alone
/// when it chains to none of it; and whether it was checked alone.
fn check_issued(
    verifier: &dyn crate::backend::SignatureVerifier,
    cert: &[u8],
    expect: &Expect<'_>,
    expected: &Expected<'_>,
    now: i64,
    buf: &mut [u8],
) -> (Result<Verified>, bool) {
    let result = verify::verify_issued_with(verifier, cert, expect.ca_pem, expected, now, buf);
    match result {
        Err(Error::Verify(ref v))
            if expect.prove && v.reason == crate::error::Reason::Untrusted =>
        {
            let alone = verify::verify_issued_unanchored(cert, expected, now, buf);
            let ok = alone.is_ok();
            (alone, ok)
        }
        r => (r, false),
    }
}
