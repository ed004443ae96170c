package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Mode says whether the agent runs once or as a daemon.
type Mode uint32

const (
	// ModeOnce: make the credentials usable (bootstrap, rotate when due, serving certificate),
	// then AgentDone; a failure is AgentFailed.
	ModeOnce Mode = C.KUBEBOOT_MODE_ONCE
	// ModeRun: keep them usable, sleeping until each rotation deadline; failures are retried.
	ModeRun Mode = C.KUBEBOOT_MODE_RUN
)

// DiscoveryConfig is kubeadm-style token discovery (writes AgentConfig.BootstrapKubeconfig).
type DiscoveryConfig struct {
	// Endpoint is the apiserver, https://host:port.
	Endpoint string
	// Token is the bootstrap token.
	Token *Token
	// Pins are the CA pins ("sha256:<hex>").
	Pins []string
	// UnsafeSkipCAVerification trusts the token-signed CA without a pin.
	UnsafeSkipCAVerification bool
	// Timeout of discovery (0: 5 min).
	Timeout time.Duration
}

// ServingConfig asks for a kubelet serving certificate with these SANs.
type ServingConfig struct {
	DNSNames    []string
	IPAddresses []string
}

// AgentConfig is what the node agent manages (see the core's `kubeboot::agent::Config`).
// Relative paths are resolved against WorkingDir.
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
	// BootstrapWait, RotationWait: 0 for the kubelet's (1 h, 15 min).
	BootstrapWait, RotationWait time.Duration
	// ExpirationSeconds of every CSR (0: the signer's default; else ≥ 600).
	ExpirationSeconds uint32
	// Poll the CSRs instead of watching them.
	Poll bool
	Mode Mode
	// MaxRotations: with ModeRun, AgentDone after this many rotations (0: never).
	MaxRotations                      uint32
	RotateNowClient, RotateNowServing bool
	// UTCOffset is the local time's offset in seconds (data files are named by local time).
	UTCOffset int
	// Seed of the deadline and backoff jitter.
	Seed uint64
	// LogFormat of the event lines (LogText or LogJSON).
	LogFormat LogFormat
	// CARefresh: with ModeRun, how often to re-read the cluster's CA and keep
	// <CertDir>/ca.crt current (0: the default, 10 min; negative: never).
	CARefresh time.Duration
	// KeyDevice: where new client keys are made ("tpm", or a token's pkcs11: URI with
	// module-path and pin-source); empty: in software. With a device the agent asks for
	// AgentKey actions (PerformKeyAction with a KeyStore), and the cert dir and the node
	// kubeconfig hold the key's reference instead of the key.
	KeyDevice string
}

// LogFormat is how event lines are written.
type LogFormat uint32

const (
	// LogText: agent=go step=... key=value.
	LogText LogFormat = C.KUBEBOOT_LOG_TEXT
	// LogJSON: one JSON object per line, the same keys.
	LogJSON LogFormat = C.KUBEBOOT_LOG_JSON
)

// AgentActionKind is what Agent.Poll asks for.
type AgentActionKind uint32

const (
	// AgentRead: read AgentAction.Read's file, answer OnRead (or PerformFileAction).
	AgentRead AgentActionKind = C.KUBEBOOT_AGENT_READ
	// AgentFile: execute AgentAction.File, answer OnFileDone (or PerformFileAction).
	AgentFile AgentActionKind = C.KUBEBOOT_AGENT_FILE
	// AgentEntropy: AgentAction.EntropyLen CSPRNG bytes to OnEntropy (or PerformEntropy).
	AgentEntropy AgentActionKind = C.KUBEBOOT_AGENT_ENTROPY
	// AgentHTTP: send AgentAction.HTTP, answer OnHTTPResponse / OnStreamData / OnTransportError.
	AgentHTTP AgentActionKind = C.KUBEBOOT_AGENT_HTTP
	// AgentSleep: nothing to do before AgentAction.Until.
	AgentSleep AgentActionKind = C.KUBEBOOT_AGENT_SLEEP
	// AgentEvent: print AgentAction.Line.
	AgentEvent AgentActionKind = C.KUBEBOOT_AGENT_EVENT
	// AgentDone: finished; AgentAction.Done says what the certificates are.
	AgentDone AgentActionKind = C.KUBEBOOT_AGENT_DONE
	// AgentFailed: stopped; AgentAction.Err (an *Error) and Line say why.
	AgentFailed AgentActionKind = C.KUBEBOOT_AGENT_FAILED
	// AgentKey: do AgentAction.Key in the device that holds the node key (PerformKeyAction).
	AgentKey AgentActionKind = C.KUBEBOOT_AGENT_KEY
)

// AgentRequestKind is what an HTTP request is for.
type AgentRequestKind uint32

const (
	RequestHealthz     AgentRequestKind = C.KUBEBOOT_AGENT_REQUEST_HEALTHZ
	RequestClusterInfo AgentRequestKind = C.KUBEBOOT_AGENT_REQUEST_CLUSTER_INFO
	RequestCSRCreate   AgentRequestKind = C.KUBEBOOT_AGENT_REQUEST_CREATE
	RequestCSRGet      AgentRequestKind = C.KUBEBOOT_AGENT_REQUEST_GET
	// RequestCSRWatch: a 200 answer is a stream for OnStreamData.
	RequestCSRWatch AgentRequestKind = C.KUBEBOOT_AGENT_REQUEST_WATCH
	// RequestTrustBundles: the ClusterTrustBundles of the apiserver's serving signer.
	RequestTrustBundles AgentRequestKind = C.KUBEBOOT_AGENT_REQUEST_TRUST_BUNDLES
	// RequestCAProbe: GET /healthz trusting only a new CA bundle; a failed handshake is
	// OnTransportError.
	RequestCAProbe AgentRequestKind = C.KUBEBOOT_AGENT_REQUEST_CA_PROBE
)

// Connection says where and how to connect; ID changes whenever anything else does.
type Connection struct {
	ID         uint32
	Server     string
	CAPEM      []byte
	Insecure   bool
	ServerName string
	// ClientCertPEM / ClientKeyPEM (secret): the certificate to present, if any.
	ClientCertPEM, ClientKeyPEM []byte
	// ClientKeyHolder: HolderSoftware (ClientKeyPEM is the key), or the device whose key
	// ClientKeyPEM's reference names (present it with KeyStore.Open's signer).
	ClientKeyHolder KeyHolder
}

// AgentHTTPRequest is an HTTPS request of the agent.
type AgentHTTPRequest struct {
	Conn                                     Connection
	Kind                                     AgentRequestKind
	Method, Path, Authorization, ContentType string
	Accept, UserAgent                        string
	Body                                     []byte
	GiveUpAt                                 time.Time
}

// FileRead is a file to read whole (at most MaxLen bytes).
type FileRead struct {
	Path, Role string
	MaxLen     int
}

// FileStep is a change to the node's files (see the C header for what each step must do).
type FileStep struct {
	// Name: "recover", "write-pair", "swap-current", ...
	Name               string
	Path, Path2, Path3 string
	// Data to write; it may hold a private key: clear it after use.
	Data []byte
}

// AgentOutcome is what AgentDone reports.
type AgentOutcome struct {
	ClientNotBefore, ClientNotAfter, ClientRotationDeadline time.Time
	HasServing                                              bool
	ServingNotAfter, ServingRotationDeadline                time.Time
}

// AgentAction is what to do next (everything is a Go copy).
type AgentAction struct {
	Kind       AgentActionKind
	Read       *FileRead
	File       *FileStep
	EntropyLen int
	HTTP       *AgentHTTPRequest
	Until      time.Time
	Line       string
	// LineUpdate: Line is progress on the previous line (a long wait, with the time waited):
	// on a terminal overwrite the previous line with it, in a log print it as any other.
	LineUpdate bool
	// LineReady: the credentials are usable and the agent sleeps until the next deadline or is
	// done: a service is ready (systemd's READY=1) at the first such event.
	LineReady bool
	Err       error
	Done      *AgentOutcome
	Key       *KeyRequest
}

// Agent is the node agent: every decision of a kubelet-style agent, with the I/O left to the
// caller. One driver at a time (methods serialise on a mutex).
type Agent struct {
	mu  sync.Mutex
	h   *C.kubeboot_agent
	act *C.kubeboot_agent_action
	buf *C.char // C scratch for PerformFileAction's message
}

const agentMsgLen = 512

// NewAgent starts an agent with cfg (copied).
func NewAgent(cfg AgentConfig) (*Agent, error) {
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
	c.bootstrap_wait_seconds = C.int64_t(cfg.BootstrapWait / time.Second)
	c.rotation_wait_seconds = C.int64_t(cfg.RotationWait / time.Second)
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
	switch {
	case cfg.CARefresh < 0:
		c.ca_refresh_seconds = -1
	case cfg.CARefresh > 0:
		c.ca_refresh_seconds = C.int64_t((cfg.CARefresh + time.Second - 1) / time.Second)
	}
	var h *C.kubeboot_agent
	build := func() error { return check(C.kubeboot_agent_new(c, &h)) }
	var err error
	if d := cfg.Discovery; d != nil {
		c.discovery_server, c.discovery_server_len = str(d.Endpoint)
		c.discovery_pins, c.discovery_pin_count = strs(d.Pins)
		c.discovery_unsafe_skip_ca_verification = C.bool(d.UnsafeSkipCAVerification)
		c.discovery_timeout_seconds = C.int64_t(d.Timeout / time.Second)
		if d.Token == nil {
			return nil, ErrInvalidParameter
		}
		d.Token.mu.Lock()
		c.discovery_token = d.Token.h
		err = build()
		d.Token.mu.Unlock()
		runtime.KeepAlive(d.Token)
	} else {
		err = build()
	}
	if err != nil {
		return nil, err
	}
	a := &Agent{h: h,
		act: (*C.kubeboot_agent_action)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_agent_action{})))),
		buf: (*C.char)(C.malloc(agentMsgLen))}
	runtime.SetFinalizer(a, (*Agent).Close)
	return a, nil
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

// Poll says what to do at now.
func (a *Agent) Poll(now time.Time) AgentAction {
	var out AgentAction
	ok := a.with(func(h *C.kubeboot_agent) {
		x := a.act
		if err := check(C.kubeboot_agent_poll(h, unix(now), x)); err != nil {
			out = AgentAction{Kind: AgentFailed, Err: err}
			return
		}
		out.Kind = AgentActionKind(x.kind)
		switch out.Kind {
		case AgentRead:
			out.Read = &FileRead{Path: cGoString(x.path, x.path_len), Role: cStatic(x.role), MaxLen: int(x.max_len)}
		case AgentFile:
			out.File = &FileStep{Name: cStatic(x.step_name), Path: cGoString(x.path, x.path_len),
				Path2: cGoString(x.path2, x.path2_len), Path3: cGoString(x.path3, x.path3_len),
				Data: cGoBytes(unsafe.Pointer(x.data), x.data_len)}
		case AgentEntropy:
			out.EntropyLen = int(x.entropy_len)
		case AgentHTTP:
			out.HTTP = &AgentHTTPRequest{
				Conn: Connection{ID: uint32(x.conn_id), Server: cGoString(x.server, x.server_len),
					CAPEM: cGoBytes(unsafe.Pointer(x.ca_pem), x.ca_pem_len), Insecure: bool(x.insecure),
					ServerName:      cGoString(x.server_name, x.server_name_len),
					ClientCertPEM:   cGoBytes(unsafe.Pointer(x.client_cert_pem), x.client_cert_pem_len),
					ClientKeyPEM:    cGoBytes(unsafe.Pointer(x.client_key_pem), x.client_key_pem_len),
					ClientKeyHolder: KeyHolder(x.key_holder)},
				Kind: AgentRequestKind(x.request_kind), Method: cStatic(x.method),
				Path: cGoString(x.path, x.path_len), Authorization: cGoString(x.authorization, x.authorization_len),
				ContentType: cStatic(x.content_type), Accept: cStatic(x.accept),
				UserAgent: cGoString(x.user_agent, x.user_agent_len),
				Body:      cGoBytes(unsafe.Pointer(x.data), x.data_len), GiveUpAt: fromUnix(x.until)}
		case AgentKey:
			out.Key = keyRequest(x)
		case AgentSleep:
			out.Until = fromUnix(x.until)
		case AgentEvent:
			out.Line = cGoString(x.line, x.line_len)
			out.LineUpdate = bool(x.line_update)
			out.LineReady = bool(x.line_ready)
		case AgentDone:
			out.Done = &AgentOutcome{ClientNotBefore: fromUnix(x.client_not_before),
				ClientNotAfter: fromUnix(x.client_not_after), ClientRotationDeadline: fromUnix(x.client_rotation_deadline),
				HasServing: bool(x.has_serving), ServingNotAfter: fromUnix(x.serving_not_after),
				ServingRotationDeadline: fromUnix(x.serving_rotation_deadline)}
		case AgentFailed:
			out.Line = cGoString(x.line, x.line_len)
			out.Err = newError(x.result, cGoString(x.detail, x.detail_len))
			if out.Err == nil {
				out.Err = ErrInvalidState
			}
		}
	})
	if !ok {
		return AgentAction{Kind: AgentFailed, Err: ErrInvalidState}
	}
	return out
}

// PerformFileAction does the outstanding AgentRead or AgentFile action with libkubeboot's own
// crash-safe file store and answers it. The agent decides what a failure means; the returned
// text (path and OS error) is for the operator. ErrInvalidState when none is outstanding.
func (a *Agent) PerformFileAction(now time.Time) (string, error) {
	var msg string
	var err error
	if !a.with(func(h *C.kubeboot_agent) {
		var n C.size_t
		err = check(C.kubeboot_agent_perform_file_action(h, unix(now), a.buf, agentMsgLen, &n))
		msg = cGoString(a.buf, n)
	}) {
		return "", ErrInvalidState
	}
	return msg, err
}

// PerformEntropy answers the outstanding AgentEntropy action from the OS RNG.
func (a *Agent) PerformEntropy() error {
	var err error = ErrInvalidState
	a.with(func(h *C.kubeboot_agent) { err = check(C.kubeboot_agent_perform_entropy(h)) })
	return err
}

// OnRead answers an AgentRead: the bytes, or the store code of the failure (e.g.
// CodeStoreNotFound); code CodeOK with data.
func (a *Agent) OnRead(now time.Time, code uint32, data []byte) {
	p, n, free := cBytes(data)
	defer free()
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_read(h, unix(now), C.uint32_t(code), p, n) })
}

// OnFileDone answers an AgentFile: CodeOK or a store code.
func (a *Agent) OnFileDone(now time.Time, code uint32) {
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_file_done(h, unix(now), C.uint32_t(code)) })
}

// OnEntropy answers an AgentEntropy.
func (a *Agent) OnEntropy(b []byte) {
	p, n, free := cBytes(b)
	defer free()
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_entropy(h, p, n) })
}

// OnHTTPResponse answers an AgentHTTP with the whole response (OnHTTPResponseWithRetryAfter
// without the header).
func (a *Agent) OnHTTPResponse(now time.Time, status int, body []byte) {
	a.OnHTTPResponseWithRetryAfter(now, status, "", body)
}

// OnHTTPResponseWithRetryAfter answers an AgentHTTP with the whole response and its Retry-After
// header value (resp.Header.Get("Retry-After"); "" when absent): a 429 or 5xx that carries one
// is retried when the server asked, with jitter (the agent decides; its retry line says
// reason=server-asked).
func (a *Agent) OnHTTPResponseWithRetryAfter(now time.Time, status int, retryAfter string, body []byte) {
	p, n, free := cBytes(body)
	defer free()
	rp, rn, rfree := cBytes([]byte(retryAfter))
	defer rfree()
	a.with(func(h *C.kubeboot_agent) {
		C.kubeboot_agent_on_http_response_with_retry_after(h, unix(now), C.uint16_t(status),
			(*C.char)(unsafe.Pointer(rp)), rn, p, n)
	})
}

// OnStreamData feeds a chunk of a 200 watch stream; false: stop reading and drop the
// connection (do not call OnStreamEnd).
func (a *Agent) OnStreamData(now time.Time, chunk []byte) bool {
	p, n, free := cBytes(chunk)
	defer free()
	keep := (*C.bool)(C.malloc(C.size_t(unsafe.Sizeof(C.bool(false)))))
	defer C.free(unsafe.Pointer(keep))
	*keep = false
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_on_stream_data(h, unix(now), p, n, keep) })
	return bool(*keep)
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
		var m C.kubeboot_metrics
		var n C.size_t
		if err = check(C.kubeboot_agent_metrics(h, &m)); err != nil {
			return
		}
		if err = check(C.kubeboot_metrics_text(&m, unix(now), buf, C.KUBEBOOT_METRICS_TEXT_CAP, &n)); err == nil {
			out = C.GoBytes(unsafe.Pointer(buf), C.int(n))
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
	var woken C.bool
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_wake(h, &woken) })
	return bool(woken)
}

// SetUTCOffset updates the local time's offset (seconds east of UTC).
func (a *Agent) SetUTCOffset(seconds int) {
	a.with(func(h *C.kubeboot_agent) { C.kubeboot_agent_set_utc_offset(h, C.int32_t(seconds)) })
}
