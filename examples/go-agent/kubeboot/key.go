package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Key is a P-256 private key held by the library (the scalar is zeroized on Close).
type Key struct {
	mu sync.Mutex
	h  *C.kubeboot_key
}

func newKey(h *C.kubeboot_key) *Key {
	k := &Key{h: h}
	runtime.SetFinalizer(k, (*Key).Close)
	return k
}

// GenerateKey generates a P-256 key from the operating system's RNG.
func GenerateKey() (*Key, error) {
	var h *C.kubeboot_key
	if err := check(C.kubeboot_key_generate(&h)); err != nil {
		return nil, err
	}
	return newKey(h), nil
}

// KeyFromPEM imports a P-256 key from PEM (`EC PRIVATE KEY` or `PRIVATE KEY`; other blocks are
// skipped). ErrUnsupportedKey for RSA / other curves, ErrMalformedKey otherwise.
func KeyFromPEM(pem []byte) (*Key, error) {
	p, n, free := cBytes(pem)
	defer free()
	var h *C.kubeboot_key
	if err := check(C.kubeboot_key_from_pem(p, n, &h)); err != nil {
		return nil, err
	}
	return newKey(h), nil
}

// KeyFromDER imports a P-256 key from DER (SEC1 or PKCS#8).
func KeyFromDER(der []byte) (*Key, error) {
	p, n, free := cBytes(der)
	defer free()
	var h *C.kubeboot_key
	if err := check(C.kubeboot_key_from_der(p, n, &h)); err != nil {
		return nil, err
	}
	return newKey(h), nil
}

// KeyFromEntropy derives a key from ≥ 32 bytes of caller entropy.
func KeyFromEntropy(entropy []byte) (*Key, error) {
	p, n, free := cBytes(entropy)
	defer free()
	var h *C.kubeboot_key
	if err := check(C.kubeboot_key_from_entropy(p, n, &h)); err != nil {
		return nil, err
	}
	return newKey(h), nil
}

// Close frees the key, zeroizing the scalar. Idempotent.
func (k *Key) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.h != nil {
		C.kubeboot_key_free(k.h)
		k.h = nil
	}
	runtime.SetFinalizer(k, nil)
	return nil
}

// with runs f with the handle locked (ErrInvalidState after Close).
func (k *Key) with(f func(h *C.kubeboot_key) error) error {
	if k == nil {
		return ErrInvalidParameter
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.h == nil {
		return ErrInvalidState
	}
	err := f(k.h)
	runtime.KeepAlive(k)
	return err
}

// PEM is the SEC1 `EC PRIVATE KEY` PEM (secret).
func (k *Key) PEM() ([]byte, error) {
	var b []byte
	err := k.with(func(h *C.kubeboot_key) (err error) {
		b, err = outBytes(int(C.KUBEBOOT_KEY_SEC1_PEM_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
			return C.kubeboot_key_to_pem(h, (*C.char)(p), n, o)
		})
		return
	})
	return b, err
}

// PublicKeySPKI is the public key as SubjectPublicKeyInfo DER (91 bytes).
func (k *Key) PublicKeySPKI() ([]byte, error) {
	var b []byte
	err := k.with(func(h *C.kubeboot_key) (err error) {
		b, err = outBytes(int(C.KUBEBOOT_KEY_SPKI_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
			return C.kubeboot_key_public_spki_der(h, (*C.uint8_t)(p), n, o)
		})
		return
	})
	return b, err
}

// PublicPoint is the uncompressed public point `04 || X || Y` (65 bytes).
func (k *Key) PublicPoint() ([]byte, error) {
	var pt [65]C.uint8_t
	err := k.with(func(h *C.kubeboot_key) error {
		return check(C.kubeboot_key_public_point(h, &pt[0]))
	})
	if err != nil {
		return nil, err
	}
	return C.GoBytes(unsafe.Pointer(&pt[0]), 65), nil
}

// Sign signs msg with ECDSA P-256 / SHA-256 (RFC 6979) and returns the raw `r || s` (64 bytes).
func (k *Key) Sign(msg []byte) ([]byte, error) {
	mp, mn, free := cBytes(msg)
	defer free()
	var sig [64]C.uint8_t
	err := k.with(func(h *C.kubeboot_key) error {
		return check(C.kubeboot_key_sign(h, mp, mn, &sig[0]))
	})
	if err != nil {
		return nil, err
	}
	return C.GoBytes(unsafe.Pointer(&sig[0]), 64), nil
}
