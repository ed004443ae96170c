//! Small helpers of the agent: bounded copies, kubeconfig values, certificate jitter, timestamps.

use super::*;

pub(super) fn put<const M: usize>(dst: &mut heapless::String<M>, s: &str) -> Result<()> {
    dst.clear();
    dst.push_str(s).map_err(|_| Error::TooLarge)
}

pub(super) fn put_bytes<const M: usize>(dst: &mut heapless::Vec<u8, M>, b: &[u8]) -> Result<()> {
    dst.clear();
    dst.extend_from_slice(b).map_err(|_| Error::TooLarge)
}

/// A scalar's text into `dst`.
pub(super) fn scalar_into<const M: usize>(
    s: Scalar<'_>,
    dst: &mut heapless::String<M>,
) -> Result<()> {
    dst.clear();
    let mut buf = [0u8; M];
    let text = s.decode_into(&mut buf).map_err(|e| match e {
        Error::BufferTooSmall { .. } => Error::TooLarge,
        e => e,
    })?;
    dst.push_str(text).map_err(|_| Error::TooLarge)
}

/// A `*-data` scalar's decoded bytes into `dst`.
pub(super) fn data_into<const M: usize>(
    s: Scalar<'_>,
    dst: &mut heapless::Vec<u8, M>,
) -> Result<()> {
    dst.clear();
    let _ = dst.resize_default(M);
    let n = match s.decode_base64_into(dst) {
        Ok(d) => d.len(),
        Err(e) => {
            dst.clear();
            return Err(match e {
                Error::BufferTooSmall { .. } => Error::TooLarge,
                e => e,
            });
        }
    };
    dst.truncate(n);
    Ok(())
}

/// A private key, or the reference of a key a device holds ([`crate::keyref`]).
pub(super) fn is_private_key_label(label: &str) -> bool {
    keyref::is_key_label(label)
}

/// The `CERTIFICATE` blocks of `input` into `chain`, and the first private-key block into `key`
/// (when given), verbatim.
pub(super) fn split_pair<const C: usize, const K: usize>(
    input: &[u8],
    chain: &mut heapless::Vec<u8, C>,
    mut key: Option<&mut heapless::Vec<u8, K>>,
) -> Result<()> {
    for block in pem::blocks(input) {
        let Ok(block) = block else { break };
        if block.label == "CERTIFICATE" {
            chain.extend_from_slice(block.text).map_err(|_| Error::TooLarge)?;
            if !block.text.ends_with(b"\n") {
                chain.push(b'\n').map_err(|_| Error::TooLarge)?;
            }
        } else if is_private_key_label(block.label) {
            if let Some(k) = key.as_deref_mut() {
                if k.is_empty() {
                    k.extend_from_slice(block.text).map_err(|_| Error::TooLarge)?;
                    if !block.text.ends_with(b"\n") {
                        k.push(b'\n').map_err(|_| Error::TooLarge)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// A jitter value that depends only on the seed and the certificate, so that every evaluation
/// of the same certificate finds the same rotation deadline (the kubelet draws it once per
/// certificate).
pub(super) fn cert_jitter(seed: u64, cert_pem: &[u8]) -> u32 {
    // FNV-1a over the PEM, mixed with the seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in cert_pem {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    engine::Jitter(h).next_u32()
}

/// `YYYY-MM-DD-HH-MM-SS` of local time (Go layout `2006-01-02-15-04-05`).
pub(super) fn timestamp(unix: i64, utc_offset: i32) -> heapless::String<19> {
    use core::fmt::Write;
    let dt = rfc3339::DateTime::from_unix(unix.saturating_add(i64::from(utc_offset)));
    let mut s = heapless::String::new();
    let _ = write!(
        s,
        "{:04}-{:02}-{:02}-{:02}-{:02}-{:02}",
        dt.year.clamp(0, 9999),
        dt.month,
        dt.day,
        dt.hour,
        dt.minute,
        dt.second
    );
    s
}
