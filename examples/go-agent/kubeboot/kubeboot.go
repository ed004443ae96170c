// Package kubeboot is a Go binding of libkubeboot, the C ABI of the kubeboot Rust library
// (ABI 0.4): the node agent — every decision of kubelet-style TLS bootstrapping and rotation as a
// sans-IO state machine over memory whose capacities the caller chooses (Agent, Capacities) —
// and the protocol's pieces beside it (bootstrap tokens, P-256 node keys, kubelet CSRs,
// issued-certificate verification, CA pins, kubeconfigs, the kubelet's certificate metrics).
// Nothing else decides: package kubeboot.dev/go/agentrun runs the agent in a Go program.
//
// Import it as kubeboot.dev/go/kubeboot. The package links libkubeboot statically, found with
// pkg-config (`kubeboot-static`): install it with `make -C ffi install PREFIX=/usr/local` (or
// point PKG_CONFIG_PATH at $PREFIX/lib/pkgconfig), or, in the repository, `make pc-build` in
// ffi/ writes the build tree's .pc files into target/release/pkgconfig (examples/go-agent's
// Makefile does that). A module outside the repository uses a replace line until the module is
// published:
//
//	require kubeboot.dev/go v0.0.0
//	replace kubeboot.dev/go => /path/to/kubeboot/examples/go-agent
//
// No C type appears in the exported API: every byte string the library returns is copied into
// Go memory before the call returns (but secret file data, which stays in C memory: see
// FileStep.Data).
//
// Handles (Agent, Key, Token) own C memory: Close them when done (a finalizer frees them
// otherwise). They are safe for concurrent use (each serialises its C calls with a mutex).
package kubeboot

/*
#cgo pkg-config: kubeboot-static
#include <stdlib.h>
#include <string.h>
#include "kubeboot.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// Error is a libkubeboot failure: the stable result code, its kebab-case name (e.g. "expired",
// "csr-denied"), the library's fixed message, and a detail (the server's reason and message for
// engine failures, the path and OS error for store failures; may be empty).
type Error struct {
	Code    uint32
	Name    string
	Message string
	Detail  string
}

func (e *Error) Error() string {
	s := "kubeboot: " + e.Name
	if e.Message != "" && e.Message != e.Name {
		s += ": " + e.Message
	}
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, kubeboot.ErrExpired) works for any detail.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && e != nil && t.Code == e.Code
}

// IsVerifyError reports whether the error is an issued-certificate verification failure
// (codes 400–499).
func (e *Error) IsVerifyError() bool { return e.Code >= 400 && e.Code < 500 }

// IsPolicyError reports whether the error is a CSR policy violation (codes 500–599).
func (e *Error) IsPolicyError() bool { return e.Code >= 500 && e.Code < 600 }

func sentinel(code uint32) *Error {
	return &Error{Code: code, Name: ResultName(code), Message: ResultMessage(code)}
}

// Sentinels for errors.Is. Verification reasons:
var (
	ErrVerifyMalformed      = sentinel(CodeVerifyMalformed)
	ErrUntrusted            = sentinel(CodeVerifyUntrusted)
	ErrBadSignature         = sentinel(CodeVerifyBadSignature)
	ErrExpired              = sentinel(CodeVerifyExpired)
	ErrNotYetValid          = sentinel(CodeVerifyNotYetValid)
	ErrKeyMismatch          = sentinel(CodeVerifyKeyMismatch)
	ErrSubjectMismatch      = sentinel(CodeVerifySubjectMismatch)
	ErrWrongUsage           = sentinel(CodeVerifyWrongUsage)
	ErrIsCA                 = sentinel(CodeVerifyIsCA)
	ErrUnsupportedAlgorithm = sentinel(CodeVerifyUnsupportedAlgorithm)
)

// Engine / apiserver outcomes:
var (
	ErrUnauthorized      = sentinel(CodeUnauthorized)
	ErrForbidden         = sentinel(CodeForbidden)
	ErrDenied            = sentinel(CodeCSRDenied)
	ErrFailed            = sentinel(CodeCSRFailed)
	ErrDeleted           = sentinel(CodeCSRDeleted)
	ErrUIDChanged        = sentinel(CodeCSRUIDChanged)
	ErrIncompatible      = sentinel(CodeCSRIncompatible)
	ErrTimeout           = sentinel(CodeTimeout)
	ErrHTTPStatus        = sentinel(CodeHTTPStatus)
	ErrMalformedResponse = sentinel(CodeMalformedResponse)
	ErrTooLarge          = sentinel(CodeTooLarge)
	ErrInvalidState      = sentinel(CodeInvalidState)
)

// Inputs, keys, pins, store:
var (
	ErrInvalidToken     = sentinel(CodeInvalidToken)
	ErrMalformedKey     = sentinel(CodeMalformedKey)
	ErrUnsupportedKey   = sentinel(CodeUnsupportedKey)
	ErrInvalidNodeName  = sentinel(CodeInvalidNodeName)
	ErrMalformed        = sentinel(CodeMalformed)
	ErrInvalidPin       = sentinel(CodeInvalidPin)
	ErrPinMismatch      = sentinel(CodePinMismatch)
	ErrNoCertKeyFiles   = sentinel(CodeStoreNoCertKeyFiles)
	ErrStoreKeyMismatch = sentinel(CodeStoreKeyMismatch)
	ErrInvalidParameter = sentinel(CodeInvalidParameter)
	ErrInvalidConfig    = sentinel(CodeInvalidConfig)
	ErrPoolExhausted    = sentinel(CodePoolExhausted)
)

// newError builds the *Error of a non-zero result.
func newError(r C.kubeboot_result, detail string) error {
	code := uint32(r)
	if code == CodeOK {
		return nil
	}
	return &Error{Code: code, Name: ResultName(code), Message: ResultMessage(code), Detail: detail}
}

func check(r C.kubeboot_result) error { return newError(r, "") }

// ResultName is the stable kebab-case name of a result code ("ok", "expired", "unknown", ...).
func ResultName(code uint32) string {
	b, _ := outBytes(64, func(p unsafe.Pointer, n C.size_t, out *C.size_t) C.kubeboot_result {
		return C.kubeboot_result_name(C.uint32_t(code), (*C.char)(p), n, out)
	})
	return string(b)
}

// ResultMessage is the fixed human-readable message of a result code.
func ResultMessage(code uint32) string {
	b, _ := outBytes(128, func(p unsafe.Pointer, n C.size_t, out *C.size_t) C.kubeboot_result {
		return C.kubeboot_result_message(C.uint32_t(code), (*C.char)(p), n, out)
	})
	return string(b)
}

// Version is the library version ("0.4.0").
func Version() string { return C.GoString(C.kubeboot_version()) }

// outBytes runs a `(buf, len, *out_len)` function, growing the buffer once if the library asks
// for more, and returns a Go-owned copy of the output.
func outBytes(initial int, f func(p unsafe.Pointer, n C.size_t, out *C.size_t) C.kubeboot_result) ([]byte, error) {
	// C memory: the output may hold secrets and must not move while C writes it.
	size := initial
	for attempt := 0; attempt < 4; attempt++ {
		if size < 1 {
			size = 1
		}
		p := C.malloc(C.size_t(size))
		if p == nil {
			return nil, fmt.Errorf("kubeboot: out of memory")
		}
		out := (*C.size_t)(C.malloc(C.size_t(unsafe.Sizeof(C.size_t(0)))))
		*out = 0
		r := f(p, C.size_t(size), out)
		n := int(*out)
		var res []byte
		if uint32(r) == CodeOK {
			res = C.GoBytes(p, C.int(n))
		}
		C.memset(p, 0, C.size_t(size))
		C.free(p)
		C.free(unsafe.Pointer(out))
		switch uint32(r) {
		case CodeOK:
			return res, nil
		case CodeInsufficientSize:
			if n <= size {
				n = size * 2
			}
			size = n
			continue
		default:
			return nil, check(r)
		}
	}
	return nil, check(C.kubeboot_result(CodeInsufficientSize))
}

// cBytes is a C copy of b (freed with the returned function, zeroized first); nil for empty.
func cBytes(b []byte) (*C.uint8_t, C.size_t, func()) {
	if len(b) == 0 {
		return nil, 0, func() {}
	}
	p := C.CBytes(b)
	return (*C.uint8_t)(p), C.size_t(len(b)), func() {
		C.memset(p, 0, C.size_t(len(b)))
		C.free(p)
	}
}

// cStr is a C copy of s (not NUL-terminated as far as the library is concerned).
func cStr(s string) (*C.char, C.size_t, func()) {
	if s == "" {
		return nil, 0, func() {}
	}
	p := C.CString(s)
	return p, C.size_t(len(s)), func() {
		C.memset(unsafe.Pointer(p), 0, C.size_t(len(s)))
		C.free(unsafe.Pointer(p))
	}
}

// cStrs is a C array of kubeboot_str for ss (all in C memory).
func cStrs(ss []string) (*C.kubeboot_str, C.size_t, func()) {
	if len(ss) == 0 {
		return nil, 0, func() {}
	}
	arr := (*[1 << 20]C.kubeboot_str)(C.malloc(C.size_t(len(ss)) * C.size_t(unsafe.Sizeof(C.kubeboot_str{}))))
	frees := make([]func(), 0, len(ss))
	for i, s := range ss {
		p, n, f := cStr(s)
		arr[i].data = p
		arr[i].len = n
		frees = append(frees, f)
	}
	return &arr[0], C.size_t(len(ss)), func() {
		for _, f := range frees {
			f()
		}
		C.free(unsafe.Pointer(&arr[0]))
	}
}

// cGoBytes is a Go copy of n bytes at p (nil for none).
func cGoBytes(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return C.GoBytes(p, C.int(n))
}

// cGoString is a Go copy of n bytes of text at p.
func cGoString(p *C.char, n C.size_t) string {
	if p == nil || n == 0 {
		return ""
	}
	return C.GoStringN(p, C.int(n))
}

func unix(t time.Time) C.int64_t { return C.int64_t(t.Unix()) }

func fromUnix(s C.int64_t) time.Time { return time.Unix(int64(s), 0).UTC() }
