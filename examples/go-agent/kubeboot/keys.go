package kubeboot

/*
#include <stdlib.h>
#include "kubeboot.h"
*/
import "C"

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"
	"unsafe"
)

// KeyOp is a device operation the agent asks for (ActionKey).
type KeyOp uint32

const (
	// KeyOpPublic: load KeyRequest.Ref's key and tell its public key (OnKeyPublic).
	KeyOpPublic KeyOp = C.KUBEBOOT_KEY_OP_KIND_PUBLIC
	// KeyOpGenerate: make a P-256 signing key that never leaves KeyRequest.Device, named
	// KeyRequest.Label (OnKeyGenerated with its reference).
	KeyOpGenerate KeyOp = C.KUBEBOOT_KEY_OP_KIND_GENERATE
	// KeyOpSign: sign KeyRequest.Message with ECDSA P-256 over its SHA-256 digest
	// (OnKeySignature).
	KeyOpSign KeyOp = C.KUBEBOOT_KEY_OP_KIND_SIGN
	// KeyOpDestroy: destroy KeyRequest.Ref's key (OnKeyDestroyed; gone already is success).
	KeyOpDestroy KeyOp = C.KUBEBOOT_KEY_OP_KIND_DESTROY
	// KeyOpCertify: an attested bootstrap (Config.Attestation): TPM2_Certify of KeyRequest.Ref's
	// TPM key by the TPM's attestation key over the qualifying data in KeyRequest.Message
	// (OnKeyCertified; the KeyStore must be an Attester).
	KeyOpCertify KeyOp = C.KUBEBOOT_KEY_OP_KIND_CERTIFY
)

// KeyHolder says who holds a node key.
type KeyHolder uint32

const (
	// HolderSoftware: the PEM is the key itself.
	HolderSoftware KeyHolder = C.KUBEBOOT_KEY_HOLDER_SOFTWARE
	// HolderTPM: the reference is a TSS2 PRIVATE KEY blob.
	HolderTPM KeyHolder = C.KUBEBOOT_KEY_HOLDER_TPM
	// HolderPKCS11: the reference is a PKCS#11 PROVIDER URI block.
	HolderPKCS11 KeyHolder = C.KUBEBOOT_KEY_HOLDER_PKCS11
)

// KeyRequest is an ActionKey action: a device operation on a node key.
type KeyRequest struct {
	Op     KeyOp
	Holder KeyHolder
	// Ref is the key's reference (PEM; PUBLIC, SIGN, DESTROY).
	Ref []byte
	// Device ("tpm" or a token's pkcs11: URI) and Label name the key to make (GENERATE).
	Device, Label string
	// Message is what to sign (SIGN; a CSR's CertificationRequestInfo), or the qualifying data
	// to certify over (CERTIFY; 32 bytes).
	Message []byte
}

func keyRequest(x *C.kubeboot_key_action) *KeyRequest {
	return &KeyRequest{Op: KeyOp(x.op), Holder: KeyHolder(x.holder), Ref: goBytes(x.key_ref),
		Device: cStrOf(x.device), Label: cStrOf(x.label), Message: goBytes(x.message)}
}

// KeyStore is the device I/O of node keys held by a device: any crypto.Signer the user brings
// (github.com/ThalesGroup/crypto11 for PKCS#11, github.com/google/go-tpm for a TPM; see the
// hwkey package) serves for the CSR and for the TLS handshake (tls.Certificate{PrivateKey:
// signer}). Errors are one line naming the device, never a secret.
type KeyStore interface {
	// Generate makes an ECDSA P-256 signing key in device ("tpm", or a token's pkcs11: URI)
	// that never leaves it, named label, and returns its reference (a TSS2 PRIVATE KEY blob, or
	// PKCS11KeyReference's block) and public key.
	Generate(device, label string) (reference []byte, public *ecdsa.PublicKey, err error)
	// Open returns the key a reference names (Public an *ecdsa.PublicKey; Sign over a SHA-256
	// digest, ASN.1 DER as crypto/ecdsa). A signer that is also an io.Closer is closed after use
	// (PerformKeyAction does; a TLS client closes it with its connection).
	Open(reference []byte) (crypto.Signer, error)
	// Destroy destroys the key a reference names (nil when it is gone already).
	Destroy(reference []byte) error
}

// Attester is a KeyStore whose device can attest its keys (a TPM): Certify returns the
// TPMS_ATTEST and TPMT_SIGNATURE of TPM2_Certify of the key a reference names by the TPM's
// attestation key over qualifying, as the TPM marshals them.
type Attester interface {
	Certify(reference, qualifying []byte) (attest, signature []byte, err error)
}

// point is the uncompressed point of a P-256 public key.
func point(k crypto.PublicKey) ([]byte, error) {
	pub, ok := k.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("not a P-256 key")
	}
	return elliptic.Marshal(elliptic.P256(), pub.X, pub.Y), nil //nolint:staticcheck // the SEC1 form
}

// SignRS signs the SHA-256 digest of message with s and returns r || s (32 bytes each).
func SignRS(s crypto.Signer, message []byte) ([]byte, error) {
	d := sha256.Sum256(message)
	der, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
	if err != nil {
		return nil, err
	}
	var sig struct{ R, S *big.Int }
	if rest, err := asn1.Unmarshal(der, &sig); err != nil || len(rest) != 0 || sig.R == nil || sig.S == nil {
		return nil, errors.New("the signature is not an ECDSA signature")
	}
	rs := make([]byte, 64)
	if sig.R.Sign() <= 0 || sig.S.Sign() <= 0 || sig.R.BitLen() > 256 || sig.S.BitLen() > 256 {
		return nil, errors.New("the signature is not a P-256 signature")
	}
	sig.R.FillBytes(rs[:32])
	sig.S.FillBytes(rs[32:])
	return rs, nil
}

// PerformKeyAction does the ActionKey action k with ks and answers the agent. A device error is
// answered with OnKeyError (the agent decides what it means) and returned for printing.
func (a *Agent) PerformKeyAction(now time.Time, k *KeyRequest, ks KeyStore) error {
	err := func() error {
		switch k.Op {
		case KeyOpGenerate:
			ref, pub, err := ks.Generate(k.Device, k.Label)
			if err != nil {
				return err
			}
			p, err := point(pub)
			if err != nil {
				return fmt.Errorf("%s: the new key: %w", k.Device, err)
			}
			return a.OnKeyGenerated(now, ref, p)
		case KeyOpPublic, KeyOpSign:
			s, err := ks.Open(k.Ref)
			if err != nil {
				return err
			}
			if c, ok := s.(io.Closer); ok {
				defer c.Close()
			}
			if k.Op == KeyOpSign {
				rs, err := SignRS(s, k.Message)
				if err != nil {
					return fmt.Errorf("signing: %w", err)
				}
				return a.OnKeySignature(now, rs)
			}
			p, err := point(s.Public())
			if err != nil {
				return err
			}
			return a.OnKeyPublic(now, p)
		case KeyOpDestroy:
			if err := ks.Destroy(k.Ref); err != nil {
				return err
			}
			return a.OnKeyDestroyed(now)
		case KeyOpCertify:
			at, ok := ks.(Attester)
			if !ok {
				return errors.New("this key store cannot attest its keys (attestation needs a TPM)")
			}
			attest, sig, err := at.Certify(k.Ref, k.Message)
			if err != nil {
				return err
			}
			return a.OnKeyCertified(now, attest, sig)
		}
		return fmt.Errorf("unknown key operation %d", k.Op)
	}()
	if err != nil {
		a.OnKeyError(now, err.Error())
	}
	return err
}

func (a *Agent) call(f func(h *C.kubeboot_agent) C.kubeboot_result) error {
	var err error = ErrInvalidState
	a.with(func(h *C.kubeboot_agent) { err = check(f(h)) })
	return err
}

// OnKeyPublic answers KeyOpPublic with the key's uncompressed point (65 bytes).
func (a *Agent) OnKeyPublic(now time.Time, point []byte) error {
	p, n, free := cBytes(point)
	defer free()
	return a.call(func(h *C.kubeboot_agent) C.kubeboot_result { return C.kubeboot_agent_on_key_public(h, unix(now), p, n) })
}

// OnKeyGenerated answers KeyOpGenerate with the new key's reference and point.
func (a *Agent) OnKeyGenerated(now time.Time, reference, point []byte) error {
	r, rn, f1 := cBytes(reference)
	defer f1()
	p, n, f2 := cBytes(point)
	defer f2()
	return a.call(func(h *C.kubeboot_agent) C.kubeboot_result {
		return C.kubeboot_agent_on_key_generated(h, unix(now), r, rn, p, n)
	})
}

// OnKeySignature answers KeyOpSign with r || s (64 bytes).
func (a *Agent) OnKeySignature(now time.Time, rs []byte) error {
	p, n, free := cBytes(rs)
	defer free()
	return a.call(func(h *C.kubeboot_agent) C.kubeboot_result {
		return C.kubeboot_agent_on_key_signature(h, unix(now), p, n)
	})
}

// OnKeyDestroyed answers KeyOpDestroy.
func (a *Agent) OnKeyDestroyed(now time.Time) error {
	return a.call(func(h *C.kubeboot_agent) C.kubeboot_result { return C.kubeboot_agent_on_key_destroyed(h, unix(now)) })
}

// OnKeyCertified answers KeyOpCertify with the TPMS_ATTEST and the TPMT_SIGNATURE.
func (a *Agent) OnKeyCertified(now time.Time, attest, signature []byte) error {
	ap, an, f1 := cBytes(attest)
	defer f1()
	sp, sn, f2 := cBytes(signature)
	defer f2()
	return a.call(func(h *C.kubeboot_agent) C.kubeboot_result {
		return C.kubeboot_agent_on_key_certified(h, unix(now), ap, an, sp, sn)
	})
}

// OnKeyError answers the outstanding key operation with why it failed (one line naming the
// device; never a secret).
func (a *Agent) OnKeyError(now time.Time, why string) error {
	p, n, free := cStr(why)
	defer free()
	return a.call(func(h *C.kubeboot_agent) C.kubeboot_result { return C.kubeboot_agent_on_key_error(h, unix(now), p, n) })
}

// PKCS11KeyReference is the reference (a PKCS#11 PROVIDER URI PEM block) of the private key
// labelled label with CKA_ID id made in the token device names, as the agent writes it.
func PKCS11KeyReference(device, label string, id []byte) ([]byte, error) {
	dp, dn, f1 := cStr(device)
	defer f1()
	lp, ln, f2 := cStr(label)
	defer f2()
	ip, in, f3 := cBytes(id)
	defer f3()
	return outBytes(int(C.KUBEBOOT_KEY_REF_MAX_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_pkcs11_key_reference(dp, dn, lp, ln, ip, in, (*C.uint8_t)(p), n, o)
	})
}

// KeyReferenceURI is the pkcs11: URI inside a PKCS#11 PROVIDER URI reference.
func KeyReferenceURI(reference []byte) (string, error) {
	rp, rn, free := cBytes(reference)
	defer free()
	b, err := outBytes(int(C.KUBEBOOT_PKCS11_URI_MAX_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_key_reference_uri(rp, rn, (*C.char)(p), n, o)
	})
	return string(b), err
}

// PKCS11URIAttribute is one attribute of a pkcs11: URI, percent-decoded (token, serial, model,
// manufacturer, slot-id, object, id, type, module-path, module-name, pin-source); found says
// whether the URI has it.
func PKCS11URIAttribute(uri, name string) (value []byte, found bool, err error) {
	up, un, f1 := cStr(uri)
	defer f1()
	np, nn, f2 := cStr(name)
	defer f2()
	fp := (*C.bool)(C.malloc(C.size_t(unsafe.Sizeof(C.bool(false)))))
	defer C.free(unsafe.Pointer(fp))
	*fp = false
	value, err = outBytes(int(C.KUBEBOOT_PKCS11_URI_MAX_LEN), func(p unsafe.Pointer, n C.size_t, o *C.size_t) C.kubeboot_result {
		return C.kubeboot_pkcs11_uri_attribute(up, un, np, nn, (*C.uint8_t)(p), n, o, fp)
	})
	return value, err == nil && bool(*fp), err
}
