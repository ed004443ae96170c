package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"
*/
import "C"

import (
	"unsafe"
)

// Profile selects the kubelet certificate kind.
type Profile uint32

const (
	// ProfileClient is the kubelet client certificate (`kubernetes.io/kube-apiserver-client-kubelet`).
	ProfileClient Profile = C.KUBEBOOT_PROFILE_CLIENT
	// ProfileServing is the kubelet serving certificate (`kubernetes.io/kubelet-serving`).
	ProfileServing Profile = C.KUBEBOOT_PROFILE_SERVING
)

// Signer names and usages of the two profiles.
const (
	SignerClient  = "kubernetes.io/kube-apiserver-client-kubelet"
	SignerServing = "kubernetes.io/kubelet-serving"
)

// Format is a CSR's encoding.
type Format uint32

const (
	// FormatPEM: a `CERTIFICATE REQUEST` PEM block (LF line endings).
	FormatPEM Format = C.KUBEBOOT_FORMAT_PEM
	// FormatDER: DER.
	FormatDER Format = C.KUBEBOOT_FORMAT_DER
)

// CSRSpec is what BuildCSR builds: the profile, the node, the SANs (serving), the format and
// the key that signs it.
type CSRSpec struct {
	Profile Profile
	// NodeName: the subject is O=system:nodes, CN=system:node:<NodeName>.
	NodeName string
	// DNSNames, IPAddresses (as text): a serving CSR's subjectAltName, at least one SAN and at
	// most 16; a client CSR has none.
	DNSNames, IPAddresses []string
	Format                Format
	// Key signs the CSR.
	Key *Key
}

// BuildCSR writes the kubelet CSR spec describes (kubeboot_csr_write): a client CSR (the
// subject, no extensions) or a serving one (the subject and a subjectAltName with the DNS names,
// then the IP addresses).
func BuildCSR(spec CSRSpec) ([]byte, error) {
	if spec.Key == nil {
		return nil, ErrInvalidParameter
	}
	np, nn, f1 := cStr(spec.NodeName)
	defer f1()
	dp, dn, f2 := cStrs(spec.DNSNames)
	defer f2()
	ip, in, f3 := cStrs(spec.IPAddresses)
	defer f3()
	cs := (*C.kubeboot_csr_spec)(C.calloc(1, C.size_t(unsafe.Sizeof(C.kubeboot_csr_spec{}))))
	defer C.free(unsafe.Pointer(cs))
	cs.profile = C.uint32_t(spec.Profile)
	cs.node_name, cs.node_name_len = np, nn
	cs.dns_names, cs.dns_count = dp, dn
	cs.ip_addresses, cs.ip_count = ip, in
	cs.format = C.uint32_t(spec.Format)
	var b []byte
	err := spec.Key.with(func(h *C.kubeboot_key) (err error) {
		cs.key = h
		b, err = outBytes(int(C.KUBEBOOT_CSR_MAX_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
			return C.kubeboot_csr_write(cs, (*C.uint8_t)(p), n, o)
		})
		cs.key = nil
		return
	})
	return b, err
}

// NodeCSRName is the kubelet's bootstrap CSR object name `node-csr-<digest>` for key's client
// CSR for node (usages `digital signature`, `client auth`).
func NodeCSRName(key *Key, node string) (string, error) {
	np, nn, free := cStr(node)
	defer free()
	var b []byte
	err := key.with(func(h *C.kubeboot_key) (err error) {
		b, err = outBytes(int(C.KUBEBOOT_NODE_CSR_NAME_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
			return C.kubeboot_key_node_csr_name(h, np, nn, (*C.char)(p), n, o)
		})
		return
	})
	return string(b), err
}

// NodeCSRNameForPoint is NodeCSRName for an external key's public point (`04 || X || Y`).
func NodeCSRNameForPoint(point []byte, node string) (string, error) {
	if len(point) != 65 {
		return "", ErrMalformedKey
	}
	pp, _, f1 := cBytes(point)
	defer f1()
	np, nn, f2 := cStr(node)
	defer f2()
	b, err := outBytes(int(C.KUBEBOOT_NODE_CSR_NAME_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_node_csr_name(pp, np, nn, (*C.char)(p), n, o)
	})
	return string(b), err
}

// CSRObject is the `certificates.k8s.io/v1` CertificateSigningRequest JSON for a CSR PEM:
// `metadata.name` = name, or `generateName: csr-` when name is empty; signer and usages from
// profile; `spec.expirationSeconds` unless 0 (else ≥ 600).
func CSRObject(requestPEM []byte, name string, profile Profile, expirationSeconds uint32) ([]byte, error) {
	rp, rn, f1 := cBytes(requestPEM)
	defer f1()
	np, nn, f2 := cStr(name)
	defer f2()
	return outBytes(4096, func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_csr_object_json(rp, rn, np, nn, C.uint32_t(profile), C.uint32_t(expirationSeconds), (*C.char)(p), n, o)
	})
}

// CheckCSR checks a CSR PEM as the apiserver, approver and kubelet signers would; nil or the
// first policy violation (an *Error with IsPolicyError).
func CheckCSR(csrPEM []byte, signerName string, usages []string, expirationSeconds uint32) error {
	cp, cn, f1 := cBytes(csrPEM)
	defer f1()
	sp, sn, f2 := cStr(signerName)
	defer f2()
	up, un, f3 := cStrs(usages)
	defer f3()
	return check(C.kubeboot_csr_check(cp, cn, sp, sn, up, un, C.uint32_t(expirationSeconds)))
}
