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

const (
	formatPEM = C.KUBEBOOT_FORMAT_PEM
	formatDER = C.KUBEBOOT_FORMAT_DER
)

func buildClientCSR(key *Key, node string, format C.uint32_t) ([]byte, error) {
	np, nn, free := cStr(node)
	defer free()
	var b []byte
	err := key.with(func(h *C.kubeboot_key) (err error) {
		b, err = outBytes(int(C.KUBEBOOT_CSR_MAX_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
			return C.kubeboot_csr_client(h, np, nn, format, (*C.uint8_t)(p), n, o)
		})
		return
	})
	return b, err
}

// BuildClientCSR is the kubelet client CSR (`O=system:nodes`, `CN=system:node:<node>`, no
// extensions) signed by key, as PEM (`CERTIFICATE REQUEST`).
func BuildClientCSR(key *Key, node string) ([]byte, error) {
	return buildClientCSR(key, node, formatPEM)
}

// BuildClientCSRDER is BuildClientCSR as DER.
func BuildClientCSRDER(key *Key, node string) ([]byte, error) {
	return buildClientCSR(key, node, formatDER)
}

// BuildServingCSR is the kubelet serving CSR: the client subject plus a subjectAltName with the
// DNS names and IP addresses (as text); at least one SAN, at most 16. PEM.
func BuildServingCSR(key *Key, node string, dnsNames, ipAddresses []string) ([]byte, error) {
	np, nn, f1 := cStr(node)
	defer f1()
	dp, dn, f2 := cStrs(dnsNames)
	defer f2()
	ip, in, f3 := cStrs(ipAddresses)
	defer f3()
	var b []byte
	err := key.with(func(h *C.kubeboot_key) (err error) {
		b, err = outBytes(int(C.KUBEBOOT_CSR_MAX_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
			return C.kubeboot_csr_serving(h, np, nn, dp, dn, ip, in, formatPEM, (*C.uint8_t)(p), n, o)
		})
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
