package hwkey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/asn1"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"strings"
	"time"

	"github.com/google/go-tpm/tpm2"
)

// The TSS2 PRIVATE KEY format (tpm2-openssl, tpm2_encodeobject): SEQUENCE { type OID
// (id-loadablekey 2.23.133.10.1.3), emptyAuth [0] EXPLICIT BOOLEAN OPTIONAL, parent INTEGER,
// pubkey OCTET STRING (TPM2B_PUBLIC), privkey OCTET STRING (TPM2B_PRIVATE) }.
const tss2Label = "TSS2 PRIVATE KEY"

var oidLoadableKey = asn1.ObjectIdentifier{2, 23, 133, 10, 1, 3}

type tss2Key struct {
	Type asn1.ObjectIdentifier
	// A BER boolean: tpm2-openssl writes TRUE as 0x01, DER as 0xff (encoding/asn1 reads DER only).
	EmptyAuth asn1.RawValue `asn1:"explicit,tag:0,optional"`
	Parent    int64
	Pubkey    []byte
	Privkey   []byte
}

// tss2KeyOut is tss2Key as written: emptyAuth [0] EXPLICIT BOOLEAN TRUE, in DER.
type tss2KeyOut struct {
	Type      asn1.ObjectIdentifier
	EmptyAuth asn1.RawValue
	Parent    int64
	Pubkey    []byte
	Privkey   []byte
}

var emptyAuthTrue = asn1.RawValue{FullBytes: []byte{0xa0, 0x03, 0x01, 0x01, 0xff}}

// ownerHierarchy is the parent of our keys: the storage key made in the owner hierarchy from
// the fixed template (tpm2-openssl's convention for "parent").
const ownerHierarchy = int64(tpm2.TPMRHOwner)

// storageKeyTemplate is tpm2-openssl's ECC primary template (the Rust side's too): ECC P-256,
// restricted|decrypt|fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth|noDA, AES-128-CFB, no
// scheme, no KDF, empty unique. The same TPM derives the same key from it every time.
func storageKeyTemplate() tpm2.TPMTPublic {
	return tpm2.TPMTPublic{
		Type:    tpm2.TPMAlgECC,
		NameAlg: tpm2.TPMAlgSHA256,
		ObjectAttributes: tpm2.TPMAObject{FixedTPM: true, FixedParent: true, SensitiveDataOrigin: true,
			UserWithAuth: true, NoDA: true, Restricted: true, Decrypt: true},
		Parameters: tpm2.NewTPMUPublicParms(tpm2.TPMAlgECC, &tpm2.TPMSECCParms{
			Symmetric: tpm2.TPMTSymDefObject{
				Algorithm: tpm2.TPMAlgAES,
				KeyBits:   tpm2.NewTPMUSymKeyBits(tpm2.TPMAlgAES, tpm2.TPMKeyBits(128)),
				Mode:      tpm2.NewTPMUSymMode(tpm2.TPMAlgAES, tpm2.TPMAlgCFB),
			},
			Scheme:  tpm2.TPMTECCScheme{Scheme: tpm2.TPMAlgNull},
			CurveID: tpm2.TPMECCNistP256,
			KDF:     tpm2.TPMTKDFScheme{Scheme: tpm2.TPMAlgNull},
		}),
		Unique: tpm2.NewTPMUPublicID(tpm2.TPMAlgECC, &tpm2.TPMSECCPoint{}),
	}
}

// signingKeyTemplate is an ECDSA P-256 / SHA-256 signing key that never leaves the TPM:
// fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth|sign, no auth value, empty unique; a node
// key (unrestricted), or with restricted the attestation key (the Rust side's templates too), which
// signs only what the TPM made.
func signingKeyTemplate(restricted bool) tpm2.TPMTPublic {
	return tpm2.TPMTPublic{
		Type:    tpm2.TPMAlgECC,
		NameAlg: tpm2.TPMAlgSHA256,
		ObjectAttributes: tpm2.TPMAObject{FixedTPM: true, FixedParent: true, SensitiveDataOrigin: true,
			UserWithAuth: true, SignEncrypt: true, Restricted: restricted},
		Parameters: tpm2.NewTPMUPublicParms(tpm2.TPMAlgECC, &tpm2.TPMSECCParms{
			Symmetric: tpm2.TPMTSymDefObject{Algorithm: tpm2.TPMAlgNull},
			Scheme: tpm2.TPMTECCScheme{Scheme: tpm2.TPMAlgECDSA,
				Details: tpm2.NewTPMUAsymScheme(tpm2.TPMAlgECDSA, &tpm2.TPMSSigSchemeECDSA{HashAlg: tpm2.TPMAlgSHA256})},
			CurveID: tpm2.TPMECCNistP256,
			KDF:     tpm2.TPMTKDFScheme{Scheme: tpm2.TPMAlgNull},
		}),
		Unique: tpm2.NewTPMUPublicID(tpm2.TPMAlgECC, &tpm2.TPMSECCPoint{}),
	}
}

// tpm is a connection to the TPM speaking raw TPM 2.0 commands (swtpm's server socket, or the
// kernel's resource manager).
type tpm struct {
	name string
	rw   io.ReadWriteCloser
	dev  bool // a character device: one read returns one whole response
}

// connect opens the TCTI: swtpm:host=H,port=P, swtpm:path=SOCKET, device:PATH.
func connect(tcti string) (*tpm, error) {
	t := &tpm{name: "tpm " + tcti}
	kind, conf, _ := strings.Cut(tcti, ":")
	opts := map[string]string{}
	for _, kv := range strings.Split(conf, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			opts[k] = v
		}
	}
	var err error
	switch {
	case kind == "swtpm" && opts["path"] != "":
		t.rw, err = net.Dial("unix", opts["path"])
	case kind == "swtpm":
		host, port := opts["host"], opts["port"]
		if host == "" {
			host = "localhost"
		}
		if port == "" {
			port = "2321"
		}
		t.rw, err = net.Dial("tcp", net.JoinHostPort(host, port))
	case kind == "device":
		path := conf
		if path == "" {
			path = "/dev/tpmrm0"
		}
		t.rw, err = os.OpenFile(path, os.O_RDWR, 0)
		t.dev = true
	default:
		return nil, fmt.Errorf("%s: the TCTI: this agent reaches a TPM through swtpm: or device:", t.name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot connect: %v", t.name, err)
	}
	return t, nil
}

// Send implements go-tpm's transport.TPM: one command, one whole response. A TPM that is busy
// (TPM_RC_RETRY, TPM_RC_YIELDED, TPM_RC_TESTING) gets the command again, up to 16 times.
func (t *tpm) Send(cmd []byte) ([]byte, error) {
	for try := 0; ; try++ {
		rsp, err := t.send(cmd)
		if err != nil || len(rsp) < 10 || try == 16 {
			return rsp, err
		}
		switch binary.BigEndian.Uint32(rsp[6:10]) {
		case 0x922, 0x908, 0x90a: // TPM_RC_RETRY, TPM_RC_YIELDED, TPM_RC_TESTING
			time.Sleep(time.Duration(try+1) * 10 * time.Millisecond)
			continue
		}
		return rsp, nil
	}
}

func (t *tpm) send(cmd []byte) ([]byte, error) {
	if _, err := t.rw.Write(cmd); err != nil {
		return nil, err
	}
	if t.dev {
		buf := make([]byte, 4096)
		n, err := t.rw.Read(buf)
		return buf[:n], err
	}
	hdr := make([]byte, 10)
	if _, err := io.ReadFull(t.rw, hdr); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(hdr[2:6])
	if size < 10 || size > 1<<16 {
		return nil, fmt.Errorf("a response of %d bytes", size)
	}
	rsp := make([]byte, size)
	copy(rsp, hdr)
	_, err := io.ReadFull(t.rw, rsp[10:])
	return rsp, err
}

func (t *tpm) close() { _ = t.rw.Close() }

func (t *tpm) flush(h tpm2.TPMHandle) { _, _ = tpm2.FlushContext{FlushHandle: h}.Execute(t) }

// storageKey recreates the storage key; the caller flushes it.
func (t *tpm) storageKey() (*tpm2.CreatePrimaryResponse, error) {
	rsp, err := tpm2.CreatePrimary{PrimaryHandle: tpm2.TPMRHOwner,
		InPublic: tpm2.New2B(storageKeyTemplate())}.Execute(t)
	if err != nil {
		return nil, fmt.Errorf("%s: creating the storage key: %v", t.name, err)
	}
	return rsp, nil
}

func publicKey(pub tpm2.TPM2BPublic) (*ecdsa.PublicKey, error) {
	c, err := pub.Contents()
	if err != nil {
		return nil, err
	}
	p, err := c.Unique.ECC()
	if err != nil {
		return nil, err
	}
	if c.Type != tpm2.TPMAlgECC || len(p.X.Buffer) > 32 || len(p.Y.Buffer) > 32 {
		return nil, errors.New("not a P-256 key")
	}
	k := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(p.X.Buffer), Y: new(big.Int).SetBytes(p.Y.Buffer)}
	if !k.Curve.IsOnCurve(k.X, k.Y) { //nolint:staticcheck // a check of the TPM's answer
		return nil, errors.New("not a P-256 point")
	}
	return k, nil
}

// tpmGenerate makes a signing key under the storage key: its TSS2 PRIVATE KEY and public key.
func tpmGenerate(tcti string) ([]byte, *ecdsa.PublicKey, error) {
	t, err := connect(tcti)
	if err != nil {
		return nil, nil, err
	}
	defer t.close()
	srk, err := t.storageKey()
	if err != nil {
		return nil, nil, err
	}
	rsp, err := tpm2.Create{
		ParentHandle: tpm2.AuthHandle{Handle: srk.ObjectHandle, Name: srk.Name, Auth: tpm2.PasswordAuth(nil)},
		InPublic:     tpm2.New2B(signingKeyTemplate(false)),
	}.Execute(t)
	t.flush(srk.ObjectHandle)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: TPM2_Create: %v", t.name, err)
	}
	pub, err := publicKey(rsp.OutPublic)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the new key: %v", t.name, err)
	}
	der, err := asn1.Marshal(tss2KeyOut{Type: oidLoadableKey, EmptyAuth: emptyAuthTrue, Parent: ownerHierarchy,
		Pubkey: tpm2.Marshal(rsp.OutPublic), Privkey: tpm2.Marshal(rsp.OutPrivate)})
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: tss2Label, Bytes: der}), pub, nil
}

// blob is a reference's TSS2 key, checked.
type blob struct {
	public  tpm2.TPM2BPublic
	private tpm2.TPM2BPrivate
}

func readBlob(reference []byte) (*blob, error) {
	rest := reference
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("the reference holds no " + tss2Label)
		}
		if b.Type != tss2Label {
			continue
		}
		var k tss2Key
		if r, err := asn1.Unmarshal(b.Bytes, &k); err != nil || len(r) != 0 {
			return nil, errors.New("the " + tss2Label + " is malformed")
		}
		// (the [0] element whole: BOOLEAN, length 1, TRUE being any non-zero byte in BER; absent
		// is FALSE, as the TSS2 key format says and the Rust side reads it)
		if e := k.EmptyAuth.Bytes; len(k.EmptyAuth.FullBytes) == 0 || len(e) != 3 || e[0] != 0x01 || e[1] != 0x01 || e[2] == 0 {
			return nil, errors.New("the " + tss2Label + " has an authorization value (this agent uses keys without one)")
		}
		if !k.Type.Equal(oidLoadableKey) {
			return nil, errors.New("the " + tss2Label + " is not a loadable key")
		}
		if k.Parent != ownerHierarchy {
			return nil, fmt.Errorf("the key's parent %#x is not the owner hierarchy's storage key", k.Parent)
		}
		pub, err := tpm2.Unmarshal[tpm2.TPM2BPublic](k.Pubkey)
		if err != nil {
			return nil, fmt.Errorf("the key's public area: %v", err)
		}
		priv, err := tpm2.Unmarshal[tpm2.TPM2BPrivate](k.Privkey)
		if err != nil {
			return nil, fmt.Errorf("the key's private area: %v", err)
		}
		return &blob{public: *pub, private: *priv}, nil
	}
}

// load loads the blob under the recreated storage key; the caller flushes the key.
func (t *tpm) load(b *blob) (*tpm2.LoadResponse, error) {
	srk, err := t.storageKey()
	if err != nil {
		return nil, err
	}
	rsp, err := tpm2.Load{
		ParentHandle: tpm2.AuthHandle{Handle: srk.ObjectHandle, Name: srk.Name, Auth: tpm2.PasswordAuth(nil)},
		InPrivate:    b.private,
		InPublic:     b.public,
	}.Execute(t)
	t.flush(srk.ObjectHandle)
	if err != nil {
		return nil, fmt.Errorf("%s: loading the key (a key of another TPM?): %v", t.name, err)
	}
	return rsp, nil
}

// tpmKey is a TSS2 key as a crypto.Signer: each signature connects, loads the key, signs the
// digest and flushes (the TPM keeps nothing between signatures).
type tpmKey struct {
	tcti string
	blob *blob
	pub  *ecdsa.PublicKey
}

// tpmOpen checks that this TPM loads the key and keeps its public key.
func tpmOpen(tcti string, reference []byte) (crypto.Signer, error) {
	b, err := readBlob(reference)
	if err != nil {
		return nil, fmt.Errorf("tpm %s: %v", tcti, err)
	}
	t, err := connect(tcti)
	if err != nil {
		return nil, err
	}
	defer t.close()
	key, err := t.load(b)
	if err != nil {
		return nil, err
	}
	t.flush(key.ObjectHandle)
	pub, err := publicKey(b.public)
	if err != nil {
		return nil, fmt.Errorf("%s: the key: %v", t.name, err)
	}
	return &tpmKey{tcti: tcti, blob: b, pub: pub}, nil
}

func (k *tpmKey) Public() crypto.PublicKey { return k.pub }

// Sign signs a SHA-256 digest; the signature is ASN.1 DER, as crypto/ecdsa's.
func (k *tpmKey) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts.HashFunc() != crypto.SHA256 || len(digest) != 32 {
		return nil, errors.New("tpm: the key signs SHA-256 digests only")
	}
	t, err := connect(k.tcti)
	if err != nil {
		return nil, err
	}
	defer t.close()
	key, err := t.load(k.blob)
	if err != nil {
		return nil, err
	}
	defer t.flush(key.ObjectHandle)
	rsp, err := tpm2.Sign{
		KeyHandle: tpm2.AuthHandle{Handle: key.ObjectHandle, Name: key.Name, Auth: tpm2.PasswordAuth(nil)},
		Digest:    tpm2.TPM2BDigest{Buffer: digest},
		InScheme: tpm2.TPMTSigScheme{Scheme: tpm2.TPMAlgECDSA,
			Details: tpm2.NewTPMUSigScheme(tpm2.TPMAlgECDSA, &tpm2.TPMSSchemeHash{HashAlg: tpm2.TPMAlgSHA256})},
		// A null ticket: allowed for an unrestricted key.
		Validation: tpm2.TPMTTKHashCheck{Tag: tpm2.TPMSTHashCheck, Hierarchy: tpm2.TPMRHNull},
	}.Execute(t)
	if err != nil {
		return nil, fmt.Errorf("%s: TPM2_Sign: %v", t.name, err)
	}
	sig, err := rsp.Signature.Signature.ECDSA()
	if err != nil {
		return nil, fmt.Errorf("%s: the TPM answered with another kind of signature", t.name)
	}
	return asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(sig.SignatureR.Buffer),
		new(big.Int).SetBytes(sig.SignatureS.Buffer)})
}
