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

// Store is the kubelet's certificate store `<certDir>/<prefix>-*.pem` (`-current.pem` symlink,
// timestamped data files, the `<prefix>.key.tmp` bootstrap key cache).
type Store struct {
	mu sync.Mutex
	h  *C.kubeboot_store
}

// OpenStore opens the store for prefix (`kubelet-client`, `kubelet-server`) in certDir (which
// need not exist yet) and runs the kubelet's crash recovery.
func OpenStore(prefix, certDir string) (*Store, error) {
	pp, pn, f1 := cStr(prefix)
	defer f1()
	dp, dn, f2 := cStr(certDir)
	defer f2()
	var h *C.kubeboot_store
	if err := check(C.kubeboot_store_open(pp, pn, dp, dn, &h)); err != nil {
		return nil, err
	}
	s := &Store{h: h}
	runtime.SetFinalizer(s, (*Store).Close)
	return s, nil
}

// Close frees the handle. Idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != nil {
		C.kubeboot_store_free(s.h)
		s.h = nil
	}
	runtime.SetFinalizer(s, nil)
	return nil
}

// lastError is the store's rendered last error (caller holds the lock).
func (s *Store) lastError() string {
	b, _ := outBytes(512, func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_store_last_error(s.h, (*C.char)(p), n, o)
	})
	return string(b)
}

func (s *Store) with(f func(h *C.kubeboot_store) C.kubeboot_result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		return ErrInvalidState
	}
	r := f(s.h)
	var err error
	if uint32(r) != CodeOK {
		err = newError(r, s.lastError())
	}
	runtime.KeepAlive(s)
	return err
}

// Update stores a new pair (certificate chain PEM, leaf first; private key PEM) and points
// `<prefix>-current.pem` at it, crash-safely. Both are checked first (the key must match the
// leaf). The data file is named after now in now's location (local time, as the kubelet).
func (s *Store) Update(now time.Time, certPEM, keyPEM []byte) error {
	cp, cn, f1 := cBytes(certPEM)
	defer f1()
	kp, kn, f2 := cBytes(keyPEM)
	defer f2()
	_, off := now.Zone()
	return s.with(func(h *C.kubeboot_store) C.kubeboot_result {
		return C.kubeboot_store_update(h, unix(now), C.int32_t(off), cp, cn, kp, kn)
	})
}

// Current is the current pair as one PEM (certificate chain, then the private key: secret).
// ErrNoCertKeyFiles when there is none. Expiry is not checked.
func (s *Store) Current() ([]byte, error) {
	var b []byte
	err := s.with(func(h *C.kubeboot_store) (r C.kubeboot_result) {
		var e error
		b, e = outBytes(8192, func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
			return C.kubeboot_store_current(h, (*C.char)(p), n, o)
		})
		if e != nil {
			return codeOf(e)
		}
		return C.kubeboot_result(CodeOK)
	})
	return b, err
}

// CurrentPath is the absolute path of `<dir>/<prefix>-current.pem`.
func (s *Store) CurrentPath() (string, error) {
	var b []byte
	err := s.with(func(h *C.kubeboot_store) C.kubeboot_result {
		var e error
		b, e = outBytes(1024, func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
			return C.kubeboot_store_current_path(h, (*C.char)(p), n, o)
		})
		if e != nil {
			return codeOf(e)
		}
		return C.kubeboot_result(CodeOK)
	})
	return string(b), err
}

// BootstrapKey is the kubelet path-B key: the current pair's key if it loads and is P-256 (even
// expired), else the key cache `<dir>/<prefix>.key.tmp`, created (0600) when missing or unusable.
func (s *Store) BootstrapKey() (*Key, error) {
	var h *C.kubeboot_key
	err := s.with(func(st *C.kubeboot_store) C.kubeboot_result {
		return C.kubeboot_store_bootstrap_key(st, &h)
	})
	if err != nil {
		return nil, err
	}
	return newKey(h), nil
}

// RemoveKeyCache deletes the key cache (a missing file is fine).
func (s *Store) RemoveKeyCache() error {
	return s.with(func(h *C.kubeboot_store) C.kubeboot_result {
		return C.kubeboot_store_remove_key_cache(h)
	})
}

func codeOf(e error) C.kubeboot_result {
	if ke, ok := e.(*Error); ok {
		return C.kubeboot_result(ke.Code)
	}
	return C.kubeboot_result(CodeUnknownError)
}
