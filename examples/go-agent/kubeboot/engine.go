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

// AuthMode says how engine requests authenticate.
type AuthMode uint32

const (
	// AuthToken: `Authorization: Bearer <id>.<secret>` (bootstrap).
	AuthToken AuthMode = C.KUBEBOOT_AUTH_TOKEN
	// AuthClientCertificate: the transport presents the current client certificate (rotation).
	AuthClientCertificate AuthMode = C.KUBEBOOT_AUTH_CLIENT_CERTIFICATE
)

// Naming says how the CSR object is named.
type Naming uint32

const (
	// NamingNodeCSR: `node-csr-<digest>` (kubelet bootstrap: a restart finds its CSR).
	NamingNodeCSR Naming = C.KUBEBOOT_NAMING_NODE_CSR
	// NamingGenerate: `generateName: csr-` (rotation).
	NamingGenerate Naming = C.KUBEBOOT_NAMING_GENERATE
)

// WatchTimeout is how long the apiserver keeps a watch open; give the transport a little more.
const WatchTimeout = time.Duration(C.KUBEBOOT_WATCH_TIMEOUT_SECS) * time.Second

// EngineConfig says what to ask for and how.
type EngineConfig struct {
	// NodeName: `CN=system:node:<NodeName>`.
	NodeName string
	// Profile: ProfileClient (default) or ProfileServing (with DNSNames / IPAddresses).
	Profile     Profile
	DNSNames    []string
	IPAddresses []string
	// Auth: AuthToken (with Token) or AuthClientCertificate.
	Auth  AuthMode
	Token *Token
	// Naming: NamingNodeCSR or NamingGenerate.
	Naming Naming
	// CAPEM is the CA bundle the issued certificate must chain to (the cluster's client CA).
	CAPEM []byte
	// ExpirationSeconds: `spec.expirationSeconds` (≥ 600), 0 for the signer's default.
	ExpirationSeconds uint32
	// Wait: how long to wait for issuance; 0 is the kubelet's default (1 h for NamingNodeCSR,
	// 15 min for NamingGenerate).
	Wait time.Duration
	// Poll: GET the CSR every 5 s instead of watching it.
	Poll bool
}

// BootstrapConfig is the kubelet path-B configuration: client certificate, token, node-csr name.
func BootstrapConfig(node string, token *Token, caPEM []byte) EngineConfig {
	return EngineConfig{NodeName: node, Profile: ProfileClient, Auth: AuthToken, Token: token,
		Naming: NamingNodeCSR, CAPEM: caPEM}
}

// RotationConfig is the rotation configuration: client certificate auth, generateName.
func RotationConfig(node string, caPEM []byte) EngineConfig {
	return EngineConfig{NodeName: node, Profile: ProfileClient, Auth: AuthClientCertificate,
		Naming: NamingGenerate, CAPEM: caPEM}
}

// ActionKind is what Engine.Poll asks for.
type ActionKind uint32

const (
	// ActionSend: send Action.Request and feed its outcome.
	ActionSend ActionKind = C.KUBEBOOT_ACTION_SEND
	// ActionAwait: a request is outstanding; feed its outcome (Until is when to give up on it).
	ActionAwait ActionKind = C.KUBEBOOT_ACTION_AWAIT
	// ActionWait: nothing to do before Until; poll again then.
	ActionWait ActionKind = C.KUBEBOOT_ACTION_WAIT
	// ActionDone: Action.Issued holds the validated certificate.
	ActionDone ActionKind = C.KUBEBOOT_ACTION_DONE
	// ActionFailed: Action.Err says why (an *Error whose Detail is the server's reason/message).
	ActionFailed ActionKind = C.KUBEBOOT_ACTION_FAILED
)

func (k ActionKind) String() string {
	switch k {
	case ActionSend:
		return "send"
	case ActionAwait:
		return "await"
	case ActionWait:
		return "wait"
	case ActionDone:
		return "done"
	case ActionFailed:
		return "failed"
	}
	return "unknown"
}

// RequestKind is what a request is for.
type RequestKind uint32

const (
	// RequestCreate: POST the CSR object.
	RequestCreate RequestKind = C.KUBEBOOT_REQUEST_CREATE
	// RequestGet: GET the CSR.
	RequestGet RequestKind = C.KUBEBOOT_REQUEST_GET
	// RequestWatch: watch the CSR; stream the body into OnStreamData, then OnStreamEnd.
	RequestWatch RequestKind = C.KUBEBOOT_REQUEST_WATCH
)

func (k RequestKind) String() string {
	switch k {
	case RequestCreate:
		return "create"
	case RequestGet:
		return "get"
	case RequestWatch:
		return "watch"
	}
	return "unknown"
}

// Request is an HTTP request to send (Go-owned copies).
type Request struct {
	Kind   RequestKind
	Method string
	// Path is the path and query relative to the server URL (starts with "/").
	Path string
	// Authorization is the header value (`Bearer ...`, secret), empty with client-certificate auth.
	Authorization string
	ContentType   string
	Accept        string
	Body          []byte
}

// Issued is the validated certificate.
type Issued struct {
	// CertPEM is the certificate chain (PEM) as the apiserver returned it, validated.
	CertPEM             []byte
	NotBefore, NotAfter time.Time
	// RotationDeadline is when to rotate (70–90 % of the lifetime).
	RotationDeadline time.Time
	CSRName          string
}

// Action is what to do next.
type Action struct {
	Kind ActionKind
	// Until: when to give up on the request for ActionSend and ActionAwait, the time to poll
	// again for ActionWait.
	Until   time.Time
	Request *Request
	Issued  *Issued
	// Err (ActionFailed) is an *Error; HTTPStatus the status it came with, or 0.
	Err        error
	HTTPStatus int
}

// Engine is the sans-IO bootstrap / rotation state machine. It never does I/O: Poll says what
// to do, the On* methods feed outcomes back. Safe for concurrent use, but meant for one driver.
type Engine struct {
	mu  sync.Mutex
	h   *C.kubeboot_engine
	act *C.kubeboot_action // C memory for poll's output
}

// NewEngine builds and signs the CSR with key (the engine keeps its own copy; key may be closed
// afterwards) and gets ready to create it. now starts the wait; seed drives backoff and
// rotation jitter.
func NewEngine(cfg EngineConfig, key *Key, now time.Time, seed uint64) (*Engine, error) {
	cp, cn, f1 := cBytes(cfg.CAPEM)
	defer f1()
	c := (*C.kubeboot_engine_config)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_engine_config{}))))
	defer C.free(unsafe.Pointer(c))
	defer setExpected(&c.expected, cfg.NodeName, cfg.Profile, cfg.DNSNames, cfg.IPAddresses)()
	c.auth = C.uint32_t(cfg.Auth)
	c.naming = C.uint32_t(cfg.Naming)
	c.ca_pem, c.ca_pem_len = cp, cn
	c.expiration_seconds = C.uint32_t(cfg.ExpirationSeconds)
	c.wait_seconds = C.int64_t(cfg.Wait / time.Second)
	c.watch = C.bool(!cfg.Poll)
	var h *C.kubeboot_engine
	build := func(kh *C.kubeboot_key) error {
		return check(C.kubeboot_engine_new(c, kh, unix(now), C.uint64_t(seed), &h))
	}
	var err error
	if cfg.Token != nil {
		// Lock order: token, then key.
		cfg.Token.mu.Lock()
		if cfg.Token.h == nil {
			cfg.Token.mu.Unlock()
			return nil, ErrInvalidState
		}
		c.token = cfg.Token.h
		err = key.with(build)
		cfg.Token.mu.Unlock()
		runtime.KeepAlive(cfg.Token)
	} else {
		err = key.with(build)
	}
	if err != nil {
		return nil, err
	}
	e := &Engine{h: h, act: (*C.kubeboot_action)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_action{}))))}
	runtime.SetFinalizer(e, (*Engine).Close)
	return e, nil
}

// Close frees the engine (zeroizing its token and key copies). Idempotent.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h != nil {
		C.kubeboot_engine_free(e.h)
		e.h = nil
		C.free(unsafe.Pointer(e.act))
		e.act = nil
	}
	runtime.SetFinalizer(e, nil)
	return nil
}

func cGoBytes(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return C.GoBytes(p, C.int(n))
}

func cGoString(p *C.char, n C.size_t) string {
	if p == nil || n == 0 {
		return ""
	}
	return C.GoStringN(p, C.int(n))
}

func cStatic(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// Poll says what to do at now. Everything in the Action is copied out of the engine.
func (e *Engine) Poll(now time.Time) Action {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return Action{Kind: ActionFailed, Err: ErrInvalidState}
	}
	a := e.act
	if err := check(C.kubeboot_engine_poll(e.h, unix(now), a)); err != nil {
		return Action{Kind: ActionFailed, Err: err}
	}
	out := Action{Kind: ActionKind(a.kind)}
	switch out.Kind {
	case ActionSend:
		out.Request = &Request{
			Kind:          RequestKind(a.request_kind),
			Method:        cStatic(a.method),
			Path:          cGoString(a.path, a.path_len),
			Authorization: cGoString(a.authorization, a.authorization_len),
			ContentType:   cStatic(a.content_type),
			Accept:        cStatic(a.accept),
			Body:          cGoBytes(unsafe.Pointer(a.body), a.body_len),
		}
		out.Until = fromUnix(a.until)
	case ActionAwait, ActionWait:
		out.Until = fromUnix(a.until)
	case ActionDone:
		out.Issued = &Issued{
			CertPEM:          cGoBytes(unsafe.Pointer(a.cert_pem), a.cert_pem_len),
			NotBefore:        fromUnix(a.not_before),
			NotAfter:         fromUnix(a.not_after),
			RotationDeadline: fromUnix(a.rotation_deadline),
			CSRName:          cGoString(a.csr_name, a.csr_name_len),
		}
	case ActionFailed:
		out.Err = newError(a.result, e.failureMessage())
		if out.Err == nil {
			out.Err = ErrInvalidState
		}
		out.HTTPStatus = int(a.http_status)
	}
	runtime.KeepAlive(e)
	return out
}

// failureMessage: caller holds the lock.
func (e *Engine) failureMessage() string {
	b, _ := outBytes(512, func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_engine_failure_message(e.h, (*C.char)(p), n, o)
	})
	return string(b)
}

func (e *Engine) feed(f func(h *C.kubeboot_engine) C.kubeboot_result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return
	}
	f(e.h)
	runtime.KeepAlive(e)
}

// OnResponse feeds the complete response (status, body) to the outstanding request. A failure it
// causes comes out of the next Poll as ActionFailed (one error channel); a response when no
// request is outstanding is ignored.
func (e *Engine) OnResponse(now time.Time, status int, body []byte) {
	e.OnResponseWithRetryAfter(now, status, "", body)
}

// OnResponseWithRetryAfter is OnResponse with the response's Retry-After header value
// (resp.Header.Get("Retry-After"); "" when absent): a 429 or 5xx that carries one waits as the
// server asked, with jitter, before the next attempt.
func (e *Engine) OnResponseWithRetryAfter(now time.Time, status int, retryAfter string, body []byte) {
	bp, bn, free := cBytes(body)
	defer free()
	rp, rn, rfree := cBytes([]byte(retryAfter))
	defer rfree()
	e.feed(func(h *C.kubeboot_engine) C.kubeboot_result {
		return C.kubeboot_engine_on_response_with_retry_after(h, unix(now), C.uint16_t(status),
			(*C.char)(unsafe.Pointer(rp)), rn, bp, bn)
	})
}

// OnStreamData feeds a chunk of a 200 watch response body (split anywhere) and reports whether
// to keep reading: false once the engine needs no more of the stream (drop the connection, do
// not call OnStreamEnd).
func (e *Engine) OnStreamData(now time.Time, chunk []byte) bool {
	bp, bn, free := cBytes(chunk)
	defer free()
	keep := (*C.bool)(C.malloc(C.size_t(unsafe.Sizeof(C.bool(false)))))
	defer C.free(unsafe.Pointer(keep))
	*keep = false
	e.feed(func(h *C.kubeboot_engine) C.kubeboot_result {
		return C.kubeboot_engine_on_stream_data(h, unix(now), bp, bn, keep)
	})
	return bool(*keep)
}

// OnStreamEnd reports that the watch stream ended (after the last OnStreamData).
func (e *Engine) OnStreamEnd(now time.Time) {
	e.feed(func(h *C.kubeboot_engine) C.kubeboot_result {
		return C.kubeboot_engine_on_stream_end(h, unix(now))
	})
}

// OnTransportError reports that the request could not be sent or no complete response arrived.
func (e *Engine) OnTransportError(now time.Time) {
	e.feed(func(h *C.kubeboot_engine) C.kubeboot_result {
		return C.kubeboot_engine_on_transport_error(h, unix(now))
	})
}

// CSRName is the CSR object's name (known from the start with NamingNodeCSR, after the create
// response with NamingGenerate).
func (e *Engine) CSRName() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return ""
	}
	b, _ := outBytes(256, func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_engine_csr_name(e.h, (*C.char)(p), n, o)
	})
	runtime.KeepAlive(e)
	return string(b)
}

// Deadline is the engine's overall deadline (creation time plus the wait).
func (e *Engine) Deadline() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return time.Time{}
	}
	return fromUnix(C.kubeboot_engine_deadline(e.h))
}
