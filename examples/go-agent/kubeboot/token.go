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

// Token is a bootstrap token `<id>.<secret>`. Its String form is redacted; Wire returns the
// secret form.
type Token struct {
	mu sync.Mutex
	h  *C.kubeboot_token
}

func newToken(h *C.kubeboot_token) *Token {
	t := &Token{h: h}
	runtime.SetFinalizer(t, (*Token).Close)
	return t
}

// ParseToken parses `\A[a-z0-9]{6}\.[a-z0-9]{16}\z` (no trimming). ErrInvalidToken otherwise.
func ParseToken(s string) (*Token, error) {
	p, n, free := cStr(s)
	defer free()
	var h *C.kubeboot_token
	if err := check(C.kubeboot_token_parse(p, n, &h)); err != nil {
		return nil, err
	}
	return newToken(h), nil
}

// GenerateToken generates a token from the operating system's RNG.
func GenerateToken() (*Token, error) {
	var h *C.kubeboot_token
	if err := check(C.kubeboot_token_generate(&h)); err != nil {
		return nil, err
	}
	return newToken(h), nil
}

// TokenFromEntropy derives a token deterministically from caller entropy (≥ 22 bytes, 32
// recommended).
func TokenFromEntropy(entropy []byte) (*Token, error) {
	p, n, free := cBytes(entropy)
	defer free()
	var h *C.kubeboot_token
	if err := check(C.kubeboot_token_from_entropy(p, n, &h)); err != nil {
		return nil, err
	}
	return newToken(h), nil
}

// Close frees the token, zeroizing its secret. Idempotent.
func (t *Token) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h != nil {
		C.kubeboot_token_free(t.h)
		t.h = nil
	}
	runtime.SetFinalizer(t, nil)
	return nil
}

func (t *Token) str(f func(h *C.kubeboot_token, p *C.char, n C.size_t, out *C.size_t) C.kubeboot_result) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h == nil {
		return "", ErrInvalidState
	}
	b, err := outBytes(64, func(p unsafe.Pointer, n C.size_t, out *C.size_t) C.kubeboot_result {
		return f(t.h, (*C.char)(p), n, out)
	})
	runtime.KeepAlive(t)
	return string(b), err
}

// ID is the token ID (6 characters).
func (t *Token) ID() string {
	s, _ := t.str(func(h *C.kubeboot_token, p *C.char, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_token_id(h, p, n, o)
	})
	return s
}

// SecretName is `bootstrap-token-<id>`.
func (t *Token) SecretName() string {
	s, _ := t.str(func(h *C.kubeboot_token, p *C.char, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_token_secret_name(h, p, n, o)
	})
	return s
}

// UserName is `system:bootstrap:<id>`.
func (t *Token) UserName() string {
	s, _ := t.str(func(h *C.kubeboot_token, p *C.char, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_token_user_name(h, p, n, o)
	})
	return s
}

// Wire is the bearer form `<id>.<secret>` (contains the secret).
func (t *Token) Wire() string {
	s, _ := t.str(func(h *C.kubeboot_token, p *C.char, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_token_wire(h, p, n, o)
	})
	return s
}

// String is `<id>.<redacted>`.
func (t *Token) String() string { return t.ID() + ".<redacted>" }

// Token usages for SecretManifest.
const (
	TokenUsageAuthentication uint32 = 1
	TokenUsageSigning        uint32 = 2
)

// SecretManifest writes the token Secret manifest (YAML, contains the secret). A zero
// expiration means none; extraGroups is the comma-separated `auth-extra-groups` value.
func (t *Token) SecretManifest(description string, expiration time.Time, usages uint32, extraGroups string) ([]byte, error) {
	dp, dn, f1 := cStr(description)
	defer f1()
	gp, gn, f2 := cStr(extraGroups)
	defer f2()
	if description == "" {
		dp, dn = nil, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h == nil {
		return nil, ErrInvalidState
	}
	b, err := outBytes(1024, func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_token_secret_manifest(t.h, dp, dn, C.bool(!expiration.IsZero()), unix(expiration),
			C.uint32_t(usages), gp, gn, (*C.char)(p), n, o)
	})
	runtime.KeepAlive(t)
	return b, err
}

// ValidateExtraGroups checks a comma-separated `auth-extra-groups` value.
func ValidateExtraGroups(groups string) error {
	p, n, free := cStr(groups)
	defer free()
	return check(C.kubeboot_token_validate_extra_groups(p, n))
}
