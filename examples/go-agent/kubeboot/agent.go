package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"

// cgo cannot name the members of a union: these give the member of an action's `of` that its
// `kind` names (the C compiler checks the types).
static inline kubeboot_read *kb_read(kubeboot_action *a) { return &a->of.read; }
static inline kubeboot_file_step *kb_file(kubeboot_action *a) { return &a->of.file; }
static inline kubeboot_entropy *kb_entropy(kubeboot_action *a) { return &a->of.entropy; }
static inline kubeboot_key_action *kb_key(kubeboot_action *a) { return &a->of.key; }
static inline kubeboot_http_request *kb_http(kubeboot_action *a) { return &a->of.http; }
static inline kubeboot_sleep *kb_sleep(kubeboot_action *a) { return &a->of.sleep; }
static inline kubeboot_event *kb_event(kubeboot_action *a) { return &a->of.event; }
static inline kubeboot_done *kb_done(kubeboot_action *a) { return &a->of.done; }
static inline kubeboot_failure *kb_failed(kubeboot_action *a) { return &a->of.failed; }
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Mode says what the agent does.
type Mode uint32

const (
	// ModeOnce: make the credentials usable (bootstrap, rotate when due, serving certificate),
	// then ActionDone; a failure is ActionFailed.
	ModeOnce Mode = C.KUBEBOOT_MODE_ONCE
	// ModeRun: keep them usable, sleeping until each rotation deadline; failures are retried.
	ModeRun Mode = C.KUBEBOOT_MODE_RUN
	// ModeDiscover: kubeadm token discovery alone: write the bootstrap kubeconfig, then
	// ActionDone.
	ModeDiscover Mode = C.KUBEBOOT_MODE_DISCOVER
)

// LogFormat is how event lines are written.
type LogFormat uint32

const (
	// LogText: agent=go step=... key=value.
	LogText LogFormat = C.KUBEBOOT_LOG_TEXT
	// LogJSON: one JSON object per line, the same keys.
	LogJSON LogFormat = C.KUBEBOOT_LOG_JSON
)

// DiscoveryConfig is kubeadm-style token discovery (writes AgentConfig.BootstrapKubeconfig).
type DiscoveryConfig struct {
	// Endpoint is the apiserver, https://host:port.
	Endpoint string
	// Token is the bootstrap token (required).
	Token *Token
	// Pins are the CA pins ("sha256:<hex>").
	Pins []string
	// UnsafeSkipCAVerification trusts the token-signed CA without a pin.
	UnsafeSkipCAVerification bool
	// Timeout of discovery (DefaultAgentConfig: 5 min).
	Timeout time.Duration
}

// ServingConfig asks for a kubelet serving certificate with these SANs.
type ServingConfig struct {
	DNSNames    []string
	IPAddresses []string
}

// AgentConfig is what the node agent manages (see the core's `kubeboot::agent::Config`). Start
// from DefaultAgentConfig and set what differs: every value means what it says (a zero wait is
// no wait, a zero CARefresh never refreshes), except ExpirationSeconds 0 (none asked) and
// MaxRotations 0 (no limit). Relative paths are resolved against WorkingDir.
type AgentConfig struct {
	// FrontEnd names the front-end in every event line (`agent=<FrontEnd>`).
	FrontEnd string
	// WorkingDir is the absolute directory relative paths are resolved against.
	WorkingDir string
	// NodeName; empty: from the current client certificate (rotation only).
	NodeName string
	// Kubeconfig is the node kubeconfig (checked first, written after bootstrap).
	Kubeconfig string
	// BootstrapKubeconfig; empty: the node cannot bootstrap.
	BootstrapKubeconfig string
	// CertDir is the certificate directory.
	CertDir string
	// CABundle: issued certificates must chain to it; empty: the kubeconfig's CA.
	CABundle  string
	Discovery *DiscoveryConfig
	Serving   *ServingConfig
	// BootstrapWait, RotationWait: how long a bootstrap / a rotation or serving request waits
	// for its certificate (DefaultAgentConfig: the kubelet's 1 h and 15 min).
	BootstrapWait, RotationWait time.Duration
	// ExpirationSeconds of every CSR (0: none asked, the signer's default; else ≥ 600).
	ExpirationSeconds uint32
	// Poll the CSRs instead of watching them.
	Poll bool
	Mode Mode
	// MaxRotations: with ModeRun, ActionDone after this many rotations (0: no limit).
	MaxRotations                      uint32
	RotateNowClient, RotateNowServing bool
	// UTCOffset is the local time's offset in seconds (data files are named by local time).
	UTCOffset int
	// Seed of the deadline and backoff jitter (any unpredictable value).
	Seed uint64
	// LogFormat of the event lines (LogText or LogJSON).
	LogFormat LogFormat
	// CARefresh: with ModeRun, how often to re-read the cluster's CA and keep
	// <CertDir>/ca.crt current (DefaultAgentConfig: 10 min; 0: never). Whole seconds, rounded up.
	CARefresh time.Duration
	// KeyDevice: where new client keys are made ("tpm", or a token's pkcs11: URI with
	// module-path and pin-source); empty: in software. With a device the agent asks for
	// ActionKey actions (PerformKeyAction with a KeyStore), and the cert dir and the node
	// kubeconfig hold the key's reference instead of the key.
	KeyDevice string
	// Attestation: an attested join (docs/attestation.md): the attestation key's certificate
	// chain (PEM file, as `kubeboot device provision` writes it); the bootstrap CSR carries a
	// TPM2_Certify of the node key (KeyOpCertify). Needs KeyDevice "tpm".
	Attestation string
}

// DefaultAgentConfig is kubeboot_agent_config_default's configuration (the kubelet's): once,
// text lines, watch, a 1 h bootstrap wait, a 15 min rotation wait, a 5 min discovery timeout,
// the CA refreshed every 10 min; everything else empty or false.
func DefaultAgentConfig() AgentConfig {
	c := (*C.kubeboot_agent_config)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_agent_config{}))))
	defer C.free(unsafe.Pointer(c))
	C.kubeboot_agent_config_default(c)
	secs := func(s C.int64_t) time.Duration { return time.Duration(s) * time.Second }
	return AgentConfig{Mode: Mode(c.mode), LogFormat: LogFormat(c.log_format), Poll: bool(c.poll),
		BootstrapWait: secs(c.bootstrap_wait_seconds), RotationWait: secs(c.rotation_wait_seconds),
		CARefresh: secs(c.ca_refresh_seconds), Discovery: nil,
		ExpirationSeconds: uint32(c.expiration_seconds)}
}

// DefaultDiscoveryTimeout is how long discovery tries by default.
func DefaultDiscoveryTimeout() time.Duration {
	c := (*C.kubeboot_agent_config)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_agent_config{}))))
	defer C.free(unsafe.Pointer(c))
	C.kubeboot_agent_config_default(c)
	return time.Duration(c.discovery_timeout_seconds) * time.Second
}

// Agent is the node agent: every decision of a kubelet-style agent, with the I/O left to the
// caller. One driver at a time; methods serialise on a mutex, so metrics can be read from
// another goroutine.
type Agent struct {
	mu  sync.Mutex
	h   *C.kubeboot_agent
	act *C.kubeboot_action
	buf *C.char // C scratch for PerformFileAction's message
}

const agentMsgLen = 512

// NewAgent allocates an idle agent with caps (nil: HostCapacities). A capacity too small is a
// *CapacityError (errors.Is ErrTooLarge). Start it with Start.
func NewAgent(caps *Capacities) (*Agent, error) {
	var h *C.kubeboot_agent
	var err error
	if caps == nil {
		err = check(C.kubeboot_agent_new(nil, &h))
	} else {
		if err = caps.Check(); err != nil {
			return nil, err
		}
		cc := caps.c()
		defer C.free(unsafe.Pointer(cc))
		err = check(C.kubeboot_agent_new(cc, &h))
	}
	if err != nil {
		return nil, err
	}
	a := &Agent{h: h,
		act: (*C.kubeboot_action)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_action{})))),
		buf: (*C.char)(C.malloc(agentMsgLen))}
	runtime.SetFinalizer(a, (*Agent).Close)
	return a, nil
}

// Start copies cfg into the agent and gets it ready (whatever it held before is forgotten, its
// secrets wiped); the next Poll starts reading. Errors (the agent is then idle): the
// configuration's (ErrInvalidConfig, a path over the path capacity: ErrTooLarge, the token, pin
// and SAN checks).
func (a *Agent) Start(cfg AgentConfig) error {
	var frees []func()
	defer func() {
		for _, f := range frees {
			f()
		}
	}()
	str := func(s string) (*C.char, C.size_t) {
		p, n, f := cStr(s)
		frees = append(frees, f)
		return p, n
	}
	strs := func(ss []string) (*C.kubeboot_str, C.size_t) {
		p, n, f := cStrs(ss)
		frees = append(frees, f)
		return p, n
	}
	c := (*C.kubeboot_agent_config)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_agent_config{}))))
	defer C.free(unsafe.Pointer(c))
	C.kubeboot_agent_config_default(c)
	c.front_end, c.front_end_len = str(cfg.FrontEnd)
	c.working_dir, c.working_dir_len = str(cfg.WorkingDir)
	c.node_name, c.node_name_len = str(cfg.NodeName)
	c.kubeconfig, c.kubeconfig_len = str(cfg.Kubeconfig)
	c.bootstrap_kubeconfig, c.bootstrap_kubeconfig_len = str(cfg.BootstrapKubeconfig)
	c.cert_dir, c.cert_dir_len = str(cfg.CertDir)
	c.ca_bundle, c.ca_bundle_len = str(cfg.CABundle)
	if s := cfg.Serving; s != nil {
		c.serving = true
		c.serving_dns, c.serving_dns_count = strs(s.DNSNames)
		c.serving_ips, c.serving_ip_count = strs(s.IPAddresses)
	}
	c.bootstrap_wait_seconds = seconds(cfg.BootstrapWait)
	c.rotation_wait_seconds = seconds(cfg.RotationWait)
	c.expiration_seconds = C.uint32_t(cfg.ExpirationSeconds)
	c.poll = C.bool(cfg.Poll)
	c.mode = C.uint32_t(cfg.Mode)
	c.max_rotations = C.uint32_t(cfg.MaxRotations)
	c.rotate_now_client = C.bool(cfg.RotateNowClient)
	c.rotate_now_serving = C.bool(cfg.RotateNowServing)
	c.utc_offset = C.int32_t(cfg.UTCOffset)
	c.seed = C.uint64_t(cfg.Seed)
	c.log_format = C.uint32_t(cfg.LogFormat)
	c.key_device, c.key_device_len = str(cfg.KeyDevice)
	c.attestation, c.attestation_len = str(cfg.Attestation)
	c.ca_refresh_seconds = seconds(cfg.CARefresh)
	var err error
	start := func() {
		if !a.with(func(h *C.kubeboot_agent) { err = check(C.kubeboot_agent_start(h, c)) }) {
			err = ErrInvalidState
		}
	}
	if d := cfg.Discovery; d != nil {
		if d.Token == nil {
			return ErrInvalidParameter
		}
		c.discovery_server, c.discovery_server_len = str(d.Endpoint)
		c.discovery_pins, c.discovery_pin_count = strs(d.Pins)
		c.discovery_unsafe_skip_ca_verification = C.bool(d.UnsafeSkipCAVerification)
		c.discovery_timeout_seconds = seconds(d.Timeout)
		d.Token.mu.Lock()
		c.discovery_token = d.Token.h
		start()
		d.Token.mu.Unlock()
		runtime.KeepAlive(d.Token)
	} else {
		start()
	}
	return err
}

// seconds is d in whole seconds, rounded up (a wait of 1.5 s is not 1 s); negative stays
// negative, for the agent to refuse.
func seconds(d time.Duration) C.int64_t {
	if d <= 0 {
		return C.int64_t(d / time.Second)
	}
	return C.int64_t((d + time.Second - 1) / time.Second)
}

// Close frees the agent (its secrets are wiped). Idempotent.
func (a *Agent) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.h != nil {
		C.kubeboot_agent_free(a.h)
		a.h = nil
		C.free(unsafe.Pointer(a.act))
		C.free(unsafe.Pointer(a.buf))
	}
	runtime.SetFinalizer(a, nil)
	return nil
}

func (a *Agent) with(f func(h *C.kubeboot_agent)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.h == nil {
		return false
	}
	f(a.h)
	runtime.KeepAlive(a)
	return true
}

// Poll says what to do at now (everything in the Action is a Go copy, but secret file data).
func (a *Agent) Poll(now time.Time) Action {
	var out Action
	ok := a.with(func(h *C.kubeboot_agent) {
		x := a.act
		if err := check(C.kubeboot_agent_poll(h, unix(now), x)); err != nil {
			out = Action{Kind: ActionFailed, Failed: &Failure{Err: err}}
			return
		}
		out = action(x)
	})
	if !ok {
		return Action{Kind: ActionFailed, Failed: &Failure{Err: ErrInvalidState}}
	}
	return out
}

// action copies the member of x that its kind names.
func action(x *C.kubeboot_action) Action {
	out := Action{Kind: ActionKind(x.kind)}
	switch out.Kind {
	case ActionRead:
		r := C.kb_read(x)
		out.Read = &FileRead{Path: cStrOf(r.path), Role: FileRole(r.role), MaxLen: int(r.max_len)}
	case ActionFile:
		f := C.kb_file(x)
		out.File = &FileStep{Step: FileStepKind(f.step), Name: cStrOf(f.name), Path: cStrOf(f.path),
			Secret: bool(f.secret), Prefix: cStrOf(f.prefix), Updated: cStrOf(f.updated), Target: cStrOf(f.target)}
		if !out.File.Secret {
			out.File.Data = goBytes(f.data)
		}
	case ActionEntropy:
		out.Entropy = int(C.kb_entropy(x).len)
	case ActionKey:
		out.Key = keyRequest(C.kb_key(x))
	case ActionHTTP:
		r := C.kb_http(x)
		c := &r.connection
		out.HTTP = &HTTPRequest{
			Conn: Connection{ID: uint32(c.id), Server: cStrOf(c.server), CAPEM: goBytes(c.ca_pem),
				Insecure: bool(c.insecure), ServerName: cStrOf(c.server_name),
				ClientCertPEM: goBytes(c.client_cert_pem), ClientKeyPEM: goBytes(c.client_key_pem),
				ClientKeyHolder: KeyHolder(c.client_key_holder)},
			Kind: RequestKind(r.kind), Method: cStrOf(r.method), Path: cStrOf(r.path),
			Authorization: cStrOf(r.authorization), ContentType: cStrOf(r.content_type),
			Accept: cStrOf(r.accept), Body: goBytes(r.body), UserAgent: cStrOf(r.user_agent),
			GiveUpAt: fromUnix(r.give_up_at)}
		if r.idle_at != 0 {
			out.HTTP.IdleAt = fromUnix(r.idle_at)
		}
	case ActionSleep:
		out.Sleep = fromUnix(C.kb_sleep(x).until)
	case ActionEvent:
		e := C.kb_event(x)
		out.Event = &Event{Step: cStrOf(e.step), Line: cStrOf(e.line), Update: bool(e.update), Ready: bool(e.ready)}
	case ActionDone:
		d := C.kb_done(x)
		out.Done = &Outcome{Client: certStatus(d.client), Serving: certStatus(d.serving)}
	case ActionFailed:
		f := C.kb_failed(x)
		err := newError(f.result, cStrOf(f.detail))
		if err == nil {
			err = ErrInvalidState
		}
		out.Failed = &Failure{Err: err, Line: cStrOf(f.line)}
	}
	return out
}

func certStatus(s C.kubeboot_cert_status) CertStatus {
	if !s.present {
		return CertStatus{}
	}
	return CertStatus{Present: true, NotBefore: fromUnix(s.not_before), NotAfter: fromUnix(s.not_after),
		RotationDeadline: fromUnix(s.rotation_deadline)}
}

func cStrOf(s C.kubeboot_str) string { return cGoString(s.data, s.len) }

// PerformFileAction does the outstanding ActionRead or ActionFile with libkubeboot's own
// crash-safe file store and answers it. The agent decides what a failure means; the returned
// text (path and OS error) is for the operator. ErrInvalidState when none is outstanding.
func (a *Agent) PerformFileAction(now time.Time) (string, error) {
	var msg string
	var err error
	if !a.with(func(h *C.kubeboot_agent) {
		n := (*C.size_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.size_t(0)))))
		defer C.free(unsafe.Pointer(n))
		err = check(C.kubeboot_agent_perform_file_action(h, unix(now), a.buf, agentMsgLen, n))
		msg = cGoString(a.buf, *n)
	}) {
		return "", ErrInvalidState
	}
	return msg, err
}

// PerformEntropy answers the outstanding ActionEntropy from the OS RNG.
func (a *Agent) PerformEntropy() error {
	var err error = ErrInvalidState
	a.with(func(h *C.kubeboot_agent) { err = check(C.kubeboot_agent_perform_entropy(h)) })
	return err
}

// OnRead answers an ActionRead: the bytes (code CodeOK), or the store code of the failure
// (e.g. CodeStoreNotFound).
func (a *Agent) OnRead(now time.Time, code uint32, data []byte) {
	p, n, free := cBytes(data)
	defer free()
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_read(h, unix(now), C.uint32_t(code), p, n) })
}

// OnFileDone answers an ActionFile: CodeOK or a store code.
func (a *Agent) OnFileDone(now time.Time, code uint32) {
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_file_done(h, unix(now), C.uint32_t(code)) })
}

// OnEntropy answers an ActionEntropy.
func (a *Agent) OnEntropy(b []byte) {
	p, n, free := cBytes(b)
	defer free()
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_entropy(h, p, n) })
}

// HTTPResponse is a complete response to an ActionHTTP, as the agent reads it.
type HTTPResponse struct {
	Status int
	// RetryAfter is the Retry-After header's raw value ("" when absent): a 429 or 5xx that
	// carries one is retried when the server asked, with jitter (the agent decides).
	RetryAfter string
	// Body (for a watch that could not be streamed, the whole stream).
	Body []byte
}

// OnHTTPResponse answers an ActionHTTP with the whole response.
func (a *Agent) OnHTTPResponse(now time.Time, r HTTPResponse) {
	p, n, free := cBytes(r.Body)
	defer free()
	rp, rn, rfree := cStr(r.RetryAfter)
	defer rfree()
	resp := (*C.kubeboot_http_response)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_http_response{}))))
	defer C.free(unsafe.Pointer(resp))
	status := r.Status
	if status < 0 || status > 0xffff {
		status = 0
	}
	resp.status = C.uint16_t(status)
	resp.retry_after, resp.retry_after_len = rp, rn
	resp.body, resp.body_len = p, n
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_http_response(h, unix(now), resp) })
}

// OnStreamData feeds a chunk of a 200 watch stream; false: stop reading and drop the
// connection (do not call OnStreamEnd).
func (a *Agent) OnStreamData(now time.Time, chunk []byte) bool {
	p, n, free := cBytes(chunk)
	defer free()
	keep := (*C.bool)(C.calloc(1, C.size_t(unsafe.Sizeof(C.bool(false)))))
	defer C.free(unsafe.Pointer(keep))
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_stream_data(h, unix(now), p, n, keep) })
	return bool(*keep)
}

// OnStreamIdle: the open watch has been quiet until the request's IdleAt (or later); the agent
// reports progress (fetch the lines with NextEvent) without ending the watch. False: no watch
// is open, stop reading.
func (a *Agent) OnStreamIdle(now time.Time) bool {
	keep := (*C.bool)(C.calloc(1, C.size_t(unsafe.Sizeof(C.bool(false)))))
	defer C.free(unsafe.Pointer(keep))
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_stream_idle(h, unix(now), keep) })
	return bool(*keep)
}

// NextEvent is the next line the agent has to say now (also while a watch is open, between
// the stream calls); false when there is none. Poll hands out the same lines first, so a
// runtime that never calls it loses nothing.
func (a *Agent) NextEvent() (Event, bool) {
	var ev Event
	var has bool
	a.with(func(h *C.kubeboot_agent) {
		e := (*C.kubeboot_event)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_event{}))))
		defer C.free(unsafe.Pointer(e))
		b := (*C.bool)(C.calloc(1, C.size_t(unsafe.Sizeof(C.bool(false)))))
		defer C.free(unsafe.Pointer(b))
		if check(C.kubeboot_agent_next_event(h, e, b)) != nil || !bool(*b) {
			return
		}
		has = true
		ev = Event{Step: cStrOf(e.step), Line: cStrOf(e.line), Update: bool(e.update), Ready: bool(e.ready)}
	})
	return ev, has
}

// OnStreamEnd: the watch stream ended (or broke).
func (a *Agent) OnStreamEnd(now time.Time) {
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_stream_end(h, unix(now)) })
}

// OnTransportError: the request could not be sent or no complete response arrived (why is
// printed in the agent's event; never put a secret in it).
func (a *Agent) OnTransportError(now time.Time, why string) {
	p, n, free := cStr(why)
	defer free()
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_transport_error(h, unix(now), p, n) })
}

// Metrics is the agent's certificate metrics, as data (kubeboot_metrics): what MetricsText
// renders.
type Metrics struct {
	HasClient, HasServing                     bool
	ClientNotAfter, ServingNotAfter           time.Time
	ClientRenewErrors, ServingRenewErrors     uint64
	ServingRotationCount, ServingRotationSumS uint64
	ServingRotationBuckets                    [11]uint64
}

// Metrics copies the agent's metrics as of its last Poll. Safe from another goroutine.
func (a *Agent) Metrics() (Metrics, error) {
	var m Metrics
	var err error = ErrInvalidState
	a.with(func(h *C.kubeboot_agent) {
		c := (*C.kubeboot_metrics)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_metrics{}))))
		defer C.free(unsafe.Pointer(c))
		if err = check(C.kubeboot_agent_metrics(h, c)); err != nil {
			return
		}
		m = Metrics{HasClient: bool(c.has_client), HasServing: bool(c.has_serving),
			ClientRenewErrors: uint64(c.client_renew_errors), ServingRenewErrors: uint64(c.serving_renew_errors),
			ServingRotationCount: uint64(c.serving_rotation_count), ServingRotationSumS: uint64(c.serving_rotation_sum)}
		if m.HasClient {
			m.ClientNotAfter = fromUnix(c.client_not_after)
		}
		if m.HasServing {
			m.ServingNotAfter = fromUnix(c.serving_not_after)
		}
		for i := range m.ServingRotationBuckets {
			m.ServingRotationBuckets[i] = uint64(c.serving_rotation_buckets[i])
		}
	})
	return m, err
}

// MetricsText is the agent's certificate metrics at now, in the Prometheus text exposition
// format 0.0.4, with the kubelet's names and meaning (kubelet_certificate_manager_client_ttl_seconds,
// ..._client_expiration_renew_errors, ..._server_ttl_seconds, ..._server_rotation_seconds,
// kubelet_server_expiration_renew_errors). Render it when it is read: the TTLs are computed at
// now. Safe to call from another goroutine than the one driving the agent (an HTTP handler).
func (a *Agent) MetricsText(now time.Time) ([]byte, error) {
	var out []byte
	var err error
	if !a.with(func(h *C.kubeboot_agent) {
		buf := (*C.char)(C.malloc(C.KUBEBOOT_METRICS_TEXT_CAP))
		defer C.free(unsafe.Pointer(buf))
		m := (*C.kubeboot_metrics)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_metrics{}))))
		defer C.free(unsafe.Pointer(m))
		n := (*C.size_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.size_t(0)))))
		defer C.free(unsafe.Pointer(n))
		if err = check(C.kubeboot_agent_metrics(h, m)); err != nil {
			return
		}
		if err = check(C.kubeboot_metrics_text(m, unix(now), buf, C.KUBEBOOT_METRICS_TEXT_CAP, n)); err == nil {
			out = C.GoBytes(unsafe.Pointer(buf), C.int(*n))
		}
	}) {
		return nil, ErrInvalidState
	}
	return out, err
}

// MetricsTextfileRefresh is how often a front-end rewrites a metrics textfile while the agent
// sleeps (its TTLs are as of the write).
const MetricsTextfileRefresh = C.KUBEBOOT_METRICS_TEXTFILE_REFRESH_SECS * time.Second

// CheckMetricsTextfile says whether path can be a node_exporter textfile (the collector reads
// only *.prom files).
func CheckMetricsTextfile(path string) error {
	p, n, free := cStr(path)
	defer free()
	return check(C.kubeboot_metrics_check_textfile(p, n))
}

// Wake ends a sleep between attempts now (a daemon's SIGHUP): the next Poll starts over,
// reading every file again (step=wake). It reports whether the agent was sleeping between
// attempts; an attempt under way is not disturbed.
func (a *Agent) Wake() bool {
	var woken bool
	a.with(func(h *C.kubeboot_agent) {
		w := (*C.bool)(C.calloc(1, C.size_t(unsafe.Sizeof(C.bool(false)))))
		defer C.free(unsafe.Pointer(w))
		C.kubeboot_agent_wake(h, w)
		woken = bool(*w)
	})
	return woken
}

// SetUTCOffset updates the local time's offset (seconds east of UTC).
func (a *Agent) SetUTCOffset(seconds int) {
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_set_utc_offset(h, C.int32_t(seconds)) })
}
