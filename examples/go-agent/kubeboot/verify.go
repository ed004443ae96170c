package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"
*/
import "C"

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
	"unsafe"
)

// Verified is what VerifyIssued found.
type Verified struct {
	NotBefore, NotAfter time.Time
	// CAIndex is the index in the CA bundle of the CA the path ends at.
	CAIndex int
	// IntermediatesUsed is the number of intermediates on the path.
	IntermediatesUsed int
	// CASubject is that CA's subject, RFC 4514 style (`CN=kubernetes`).
	CASubject string
}

// setExpected fills x (C memory) with what an issued certificate must be: the node name, the
// profile and (serving) its SANs, copied to C memory that the returned function frees.
func setExpected(x *C.kubeboot_expected, node string, profile Profile, dns, ips []string) (free func()) {
	np, nn, f1 := cStr(node)
	dp, dn, f2 := cStrs(dns)
	ip, in, f3 := cStrs(ips)
	x.node_name, x.node_name_len = np, nn
	x.profile = C.uint32_t(profile)
	x.dns_names, x.dns_count = dp, dn
	x.ip_addresses, x.ip_count = ip, in
	return func() { f3(); f2(); f1() }
}

func verifyIssued(certPEM, caPEM []byte, node string, spki []byte, profile Profile, dns, ips []string, now time.Time) (*Verified, error) {
	cp, cn, f1 := cBytes(certPEM)
	defer f1()
	ap, an, f2 := cBytes(caPEM)
	defer f2()
	sp, sn, f3 := cBytes(spki)
	defer f3()
	x := (*C.kubeboot_expected)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_expected{}))))
	defer C.free(unsafe.Pointer(x))
	defer setExpected(x, node, profile, dns, ips)()
	out := (*C.kubeboot_verified)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_verified{}))))
	defer C.free(unsafe.Pointer(out))
	r := C.kubeboot_verify_issued(cp, cn, ap, an, x, sp, sn, unix(now), out)
	if err := check(r); err != nil {
		return nil, err
	}
	n := int(out.ca_subject_len)
	if n > int(C.KUBEBOOT_CA_SUBJECT_CAP) {
		n = int(C.KUBEBOOT_CA_SUBJECT_CAP)
	}
	return &Verified{
		NotBefore:         fromUnix(out.not_before),
		NotAfter:          fromUnix(out.not_after),
		CAIndex:           int(out.ca_index),
		IntermediatesUsed: int(out.intermediates_used),
		CASubject:         C.GoStringN((*C.char)(unsafe.Pointer(&out.ca_subject[0])), C.int(n)),
	}, nil
}

// VerifyIssued validates an issued kubelet client certificate (PEM, leaf first, intermediates
// may follow) before use: it must chain to a CA of caPEM, be valid at now, carry the public key
// spki (SubjectPublicKeyInfo DER, e.g. Key.PublicKeySPKI), name `O=system:nodes,
// CN=system:node:<node>`, have EKU clientAuth and no SANs, and not be a CA. On failure the
// error is an *Error with the reason (errors.Is(err, ErrExpired), ErrUntrusted, ...).
func VerifyIssued(certPEM, caPEM []byte, node string, spki []byte, now time.Time) (*Verified, error) {
	return verifyIssued(certPEM, caPEM, node, spki, ProfileClient, nil, nil, now)
}

// VerifyIssuedServing is VerifyIssued for a serving certificate: EKU serverAuth and exactly the
// DNS names and IP addresses (as text) as SANs.
func VerifyIssuedServing(certPEM, caPEM []byte, node string, spki []byte, dnsNames, ipAddresses []string, now time.Time) (*Verified, error) {
	return verifyIssued(certPEM, caPEM, node, spki, ProfileServing, dnsNames, ipAddresses, now)
}

// CAPin is a CA public-key pin: SHA-256 of the CA certificate's SubjectPublicKeyInfo
// (kubeadm's `--discovery-token-ca-cert-hash`).
type CAPin [32]byte

// String is `sha256:<64 hex>`.
func (p CAPin) String() string { return "sha256:" + hex.EncodeToString(p[:]) }

// PinOfSPKI is the pin of a SubjectPublicKeyInfo DER (computed in Go).
func PinOfSPKI(spki []byte) CAPin { return CAPin(sha256.Sum256(spki)) }

// ParseCAPin parses `sha256:<64 hex digits>` (case-insensitive hex). ErrInvalidPin otherwise.
func ParseCAPin(text string) (CAPin, error) {
	tp, tn, free := cStr(text)
	defer free()
	out := (*C.kubeboot_ca_pin)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_ca_pin{}))))
	defer C.free(unsafe.Pointer(out))
	var pin CAPin
	if err := check(C.kubeboot_ca_pin_parse(tp, tn, out)); err != nil {
		return pin, err
	}
	copy(pin[:], C.GoBytes(unsafe.Pointer(&out.sha256[0]), 32))
	return pin, nil
}

// CheckPins succeeds when the public key of any certificate in caPEM matches one of pins
// (kubeadm's CheckAny): ErrPinMismatch otherwise (also for no pins), ErrMalformed for a bundle
// without a readable certificate.
func CheckPins(pins []CAPin, caPEM []byte) error {
	if len(pins) > int(C.KUBEBOOT_MAX_PINS) {
		return ErrInvalidParameter
	}
	ap, an, f1 := cBytes(caPEM)
	defer f1()
	var pp *C.kubeboot_ca_pin
	if len(pins) > 0 {
		flat := make([]byte, 0, 32*len(pins))
		for _, p := range pins {
			flat = append(flat, p[:]...)
		}
		mem := C.CBytes(flat)
		defer C.free(mem)
		pp = (*C.kubeboot_ca_pin)(mem)
	}
	return check(C.kubeboot_ca_pin_check(pp, C.size_t(len(pins)), ap, an))
}

// PinsOfPEM is the pin of every certificate in caPEM (`kubeboot ca-hash`).
func PinsOfPEM(caPEM []byte) ([]CAPin, error) {
	ap, an, f1 := cBytes(caPEM)
	defer f1()
	b, err := outBytes(512, func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_ca_pins_of_pem(ap, an, (*C.char)(p), n, o)
	})
	if err != nil {
		return nil, err
	}
	var pins []CAPin
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		p, err := ParseCAPin(strings.TrimSpace(line))
		if err != nil {
			return nil, err
		}
		pins = append(pins, p)
	}
	return pins, nil
}
