// Package hwkey is the device I/O of node keys that never leave hardware, for kubeboot's Go
// agent: it implements kubeboot.KeyStore over a PKCS#11 token (github.com/ThalesGroup/crypto11,
// cgo over the token's module) and a TPM 2.0 (github.com/google/go-tpm, pure Go, raw TPM
// commands). Every key is a crypto.Signer, for the CSR and for the TLS handshake
// (tls.Certificate{PrivateKey: signer}). The agent decides when a key is made, used or
// destroyed; this package only talks to the devices.
//
// References are the ones every kubeboot front-end writes and reads: a PKCS#11 key is named by
// an RFC 7512 URI in OpenSSL pkcs11-provider's "PKCS#11 PROVIDER URI" block (the URI's
// module-path and pin-source say how to reach the token; the PIN is read from that file, never
// taken from a command line); a TPM key is a "TSS2 PRIVATE KEY" blob (tpm2-openssl's format)
// under the storage key recreated from tpm2-openssl's ECC template, so a key made by one
// front-end (the Rust CLI, this one, openssl -provider tpm2) loads in the others.
package hwkey

import (
	"crypto"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"os"
	"strings"

	"kubeboot.dev/go/kubeboot"
)

// Devices reaches the devices that hold node keys. The zero value uses TPM2TOOLS_TCTI (then
// device:/dev/tpmrm0) for the TPM, and the module a token's URI names.
type Devices struct {
	// TCTI of the TPM in tpm2-tools' syntax: swtpm:host=H,port=P, swtpm:path=SOCKET,
	// device:/dev/tpmrm0.
	TCTI   string
	tokens tokens
}

var (
	_ kubeboot.KeyStore = (*Devices)(nil)
	_ kubeboot.Attester = (*Devices)(nil)
)

// tcti is the TCTI in use.
func (d *Devices) tcti() string {
	if d.TCTI != "" {
		return d.TCTI
	}
	if t := os.Getenv("TPM2TOOLS_TCTI"); t != "" {
		return t
	}
	return "device:/dev/tpmrm0"
}

// Generate makes a P-256 signing key in device ("tpm" or a token's pkcs11: URI).
func (d *Devices) Generate(device, label string) ([]byte, *ecdsa.PublicKey, error) {
	switch {
	case device == "tpm" || device == "tpm:":
		return tpmGenerate(d.tcti())
	case strings.HasPrefix(device, "pkcs11:"):
		return d.tokens.generate(device, label)
	}
	return nil, nil, fmt.Errorf("%s: not a device", device)
}

// Open returns the key a reference names as a crypto.Signer.
func (d *Devices) Open(reference []byte) (crypto.Signer, error) {
	switch holderOf(reference) {
	case kubeboot.HolderTPM:
		return tpmOpen(d.tcti(), reference)
	case kubeboot.HolderPKCS11:
		return d.tokens.open(reference)
	}
	return nil, errors.New("the key reference names no device")
}

// Certify is TPM2_Certify of a TPM key by the TPM's attestation key over qualifying (an
// attested bootstrap); only a TPM's key can be attested.
func (d *Devices) Certify(reference, qualifying []byte) ([]byte, []byte, error) {
	if holderOf(reference) != kubeboot.HolderTPM {
		return nil, nil, errors.New("the key cannot be attested: attestation needs a key made in a TPM")
	}
	return tpmCertify(d.tcti(), reference, qualifying)
}

// Destroy destroys the key a reference names (a TPM keeps nothing of its keys: the blob goes
// with its pair file).
func (d *Devices) Destroy(reference []byte) error {
	switch holderOf(reference) {
	case kubeboot.HolderTPM:
		return nil
	case kubeboot.HolderPKCS11:
		return d.tokens.destroy(reference)
	}
	return errors.New("the key reference names no device")
}

// holderOf is the holder of the first key block of a reference.
func holderOf(reference []byte) kubeboot.KeyHolder {
	for _, line := range strings.Split(string(reference), "\n") {
		switch strings.TrimSpace(line) {
		case "-----BEGIN " + tss2Label + "-----":
			return kubeboot.HolderTPM
		case "-----BEGIN PKCS#11 PROVIDER URI-----":
			return kubeboot.HolderPKCS11
		}
	}
	return kubeboot.HolderSoftware
}
