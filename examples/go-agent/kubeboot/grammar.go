package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"
*/
import "C"

import (
	"errors"
	"time"
	"unsafe"
)

// What users type, read by the core's one grammar (kubeboot::grammar), so that a value means
// the same and a bad one is refused with the same line and exit status (2) in every front-end:
// the Rust CLI, the C agent and the Go agent.

// MaxResponse is the largest response body the agent takes (1 MiB): a larger one is a
// transport error, never a truncated body.
const MaxResponse = C.KUBEBOOT_MAX_RESPONSE

// withText calls f with a C copy of s that is never NULL (an empty value is a value too).
func withText(s string, f func(p *C.char, n C.size_t) C.kubeboot_result) C.kubeboot_result {
	p := C.CString(s)
	defer C.free(unsafe.Pointer(p))
	return f(p, C.size_t(len(s)))
}

// ParseDuration is a duration as kubeboot's flags take it ("90s", "15m", "1h", "0"; see the
// grammar for every form); an error (a *Error, CodeInvalidDuration) for anything else.
func ParseDuration(s string) (time.Duration, error) {
	secs := (*C.int64_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int64_t(0)))))
	defer C.free(unsafe.Pointer(secs))
	if err := check(withText(s, func(p *C.char, n C.size_t) C.kubeboot_result {
		return C.kubeboot_parse_duration(p, n, secs)
	})); err != nil {
		return 0, err
	}
	return time.Duration(*secs) * time.Second, nil
}

// ParseKeyDevice is the agent's --key (pkcs11:<token URI> or tpm:) as AgentConfig.KeyDevice;
// "" stays "" (software keys).
func ParseKeyDevice(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	b, err := outBytes(C.KUBEBOOT_PKCS11_URI_MAX_LEN+8, func(out unsafe.Pointer, cap C.size_t, n *C.size_t) C.kubeboot_result {
		return withText(s, func(p *C.char, l C.size_t) C.kubeboot_result {
			return C.kubeboot_parse_key_device(p, l, (*C.char)(out), cap, n)
		})
	})
	return string(b), err
}

// CheckIP is nil when s is an IP address (an --ip value).
func CheckIP(s string) error {
	return check(withText(s, func(p *C.char, n C.size_t) C.kubeboot_result { return C.kubeboot_check_ip(p, n) }))
}

// CheckBindAddress is nil when s is an address to listen on (IPv4:port, [IPv6]:port).
func CheckBindAddress(s string) error {
	return check(withText(s, func(p *C.char, n C.size_t) C.kubeboot_result {
		return C.kubeboot_check_bind_address(p, n)
	}))
}

// FlagRefusal is the one line every front-end prints when the grammar refused value of flag
// ("--key") with err (from the functions above): `<flag> "<value>": <reason>: <how to write
// it>`. For an error that is not the grammar's, err's text.
func FlagRefusal(flag, value string, err error) string {
	var ke *Error
	if !errors.As(err, &ke) {
		return flag + " \"" + value + "\": " + err.Error()
	}
	fp := C.CString(flag)
	defer C.free(unsafe.Pointer(fp))
	b, ferr := outBytes(512, func(out unsafe.Pointer, cap C.size_t, n *C.size_t) C.kubeboot_result {
		return withText(value, func(p *C.char, l C.size_t) C.kubeboot_result {
			return C.kubeboot_flag_refusal(fp, C.size_t(len(flag)), p, l, C.uint32_t(ke.Code), (*C.char)(out), cap, n)
		})
	})
	if ferr != nil {
		return flag + " \"" + value + "\": " + err.Error()
	}
	return string(b)
}
