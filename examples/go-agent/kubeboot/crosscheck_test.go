package kubeboot_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	mrand "math/rand"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"kubeboot.dev/go/kubeboot"
)

// randomNode is a random valid node name: 1–3 labels of [a-z0-9-], no '-' at the ends.
func randomNode(r *mrand.Rand) string {
	const inner = "abcdefghijklmnopqrstuvwxyz0123456789-"
	const edge = "abcdefghijklmnopqrstuvwxyz0123456789"
	labels := make([]string, 1+r.Intn(3))
	for i := range labels {
		n := 1 + r.Intn(20)
		b := make([]byte, n)
		for j := range b {
			set := inner
			if j == 0 || j == n-1 {
				set = edge
			}
			b[j] = set[r.Intn(len(set))]
		}
		labels[i] = string(b)
	}
	return strings.Join(labels, ".")
}

// goDigestedName reimplements the kubelet's node-csr name
// (pkg/kubelet/certificate/bootstrap/bootstrap.go digestedName) with the Go stdlib.
func goDigestedName(spki []byte, cn string, orgs, usages []string) string {
	h := sha512.New512_256()
	enc := base64.RawURLEncoding
	write := func(b []byte) {
		h.Write([]byte(enc.EncodeToString(b)))
		h.Write([]byte{'|'})
	}
	write(spki)
	write([]byte(cn))
	for _, o := range orgs {
		write([]byte(o))
	}
	for _, u := range usages {
		write([]byte(u))
	}
	return "node-csr-" + enc.EncodeToString(h.Sum(nil))
}

var oidExtensionRequest = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 14}

func parseCSR(t *testing.T, csrPEM []byte) *x509.CertificateRequest {
	t.Helper()
	blk, rest := pem.Decode(csrPEM)
	if blk == nil || blk.Type != "CERTIFICATE REQUEST" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("not a single CERTIFICATE REQUEST block: %q", csrPEM)
	}
	if !bytes.HasSuffix(csrPEM, []byte("\n")) {
		t.Fatalf("no trailing newline")
	}
	csr, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil {
		t.Fatalf("Go cannot parse our CSR: %v", err)
	}
	if err := csr.CheckSignature(); err != nil {
		t.Fatalf("CheckSignature: %v", err)
	}
	if csr.SignatureAlgorithm != x509.ECDSAWithSHA256 || csr.PublicKeyAlgorithm != x509.ECDSA {
		t.Fatalf("algorithms %v %v", csr.SignatureAlgorithm, csr.PublicKeyAlgorithm)
	}
	return csr
}

func checkSubject(t *testing.T, s pkix.Name, node string) {
	t.Helper()
	if s.CommonName != "system:node:"+node {
		t.Fatalf("CN %q", s.CommonName)
	}
	if !reflect.DeepEqual(s.Organization, []string{"system:nodes"}) {
		t.Fatalf("O %q", s.Organization)
	}
	// Exactly two attributes: O and CN.
	n := 0
	for _, rdn := range s.Names {
		_ = rdn
		n++
	}
	if n != 2 {
		t.Fatalf("subject has %d attributes: %v", n, s.Names)
	}
}

func TestKeyPEMAndSPKIMatchGo(t *testing.T) {
	for i := 0; i < 50; i++ {
		k, err := kubeboot.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		p, err := k.PEM()
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(p)
		if blk == nil || blk.Type != "EC PRIVATE KEY" {
			t.Fatalf("key PEM %q", p)
		}
		priv, err := x509.ParseECPrivateKey(blk.Bytes)
		if err != nil {
			t.Fatalf("ParseECPrivateKey: %v", err)
		}
		if priv.Curve != elliptic.P256() {
			t.Fatal("not P-256")
		}
		spki, err := k.PublicKeySPKI()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
		if !bytes.Equal(spki, want) {
			t.Fatalf("SPKI differs:\n ours %x\n go   %x", spki, want)
		}
		pt, _ := k.PublicPoint()
		ecdhPub, _ := priv.PublicKey.ECDH()
		if !bytes.Equal(pt, ecdhPub.Bytes()) {
			t.Fatal("public point differs")
		}
		// Signature verifies with Go.
		msg := []byte("kubeboot")
		sig, err := k.Sign(msg)
		if err != nil {
			t.Fatal(err)
		}
		var r, s = new(bigInt).SetBytes(sig[:32]), new(bigInt).SetBytes(sig[32:])
		d := sha256.Sum256(msg)
		if !ecdsa.Verify(&priv.PublicKey, d[:], r, s) {
			t.Fatal("Go does not verify our signature")
		}
		k.Close()
	}
}

func TestKeyImportFromGo(t *testing.T) {
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	want, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	sec1, _ := x509.MarshalECPrivateKey(priv)
	pk8, _ := x509.MarshalPKCS8PrivateKey(priv)
	for name, p := range map[string][]byte{
		"sec1":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}),
		"pkcs8": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk8}),
		"params+sec1": append([]byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})...),
	} {
		k, err := kubeboot.KeyFromPEM(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		spki, _ := k.PublicKeySPKI()
		if !bytes.Equal(spki, want) {
			t.Fatalf("%s: SPKI differs", name)
		}
		k2, err := kubeboot.KeyFromDER(sec1)
		if err != nil {
			t.Fatal(err)
		}
		spki2, _ := k2.PublicKeySPKI()
		if !bytes.Equal(spki2, want) {
			t.Fatal("DER SPKI differs")
		}
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der384, _ := x509.MarshalECPrivateKey(p384)
	_, err := kubeboot.KeyFromPEM(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der384}))
	if !errors.Is(err, kubeboot.ErrUnsupportedKey) {
		t.Fatalf("P-384: %v", err)
	}
	_, err = kubeboot.KeyFromPEM([]byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"))
	if !errors.Is(err, kubeboot.ErrMalformedKey) {
		t.Fatalf("garbage: %v", err)
	}
	var ke *kubeboot.Error
	if !errors.As(err, &ke) || ke.Name != "malformed-key" || ke.Code != 200 {
		t.Fatalf("error fields: %#v", ke)
	}
}

func TestClientCSRsParseInGo(t *testing.T) {
	r := mrand.New(mrand.NewSource(1))
	for i := 0; i < 100; i++ {
		k, err := kubeboot.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		node := randomNode(r)
		p, err := kubeboot.BuildCSR(kubeboot.CSRSpec{Profile: kubeboot.ProfileClient, NodeName: node, Key: k})
		if err != nil {
			t.Fatalf("%q: %v", node, err)
		}
		csr := parseCSR(t, p)
		checkSubject(t, csr.Subject, node)
		if len(csr.Extensions) != 0 || len(csr.ExtraExtensions) != 0 {
			t.Fatalf("client CSR has extensions: %v", csr.Extensions)
		}
		for _, a := range csr.Attributes {
			if a.Type.Equal(oidExtensionRequest) {
				t.Fatal("client CSR has an extensionRequest attribute")
			}
		}
		if len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.EmailAddresses)+len(csr.URIs) != 0 {
			t.Fatal("client CSR has SANs")
		}
		spki, _ := k.PublicKeySPKI()
		if !bytes.Equal(csr.RawSubjectPublicKeyInfo, spki) {
			t.Fatal("CSR key is not ours")
		}
		der, err := kubeboot.BuildCSR(kubeboot.CSRSpec{Profile: kubeboot.ProfileClient, NodeName: node, Format: kubeboot.FormatDER, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x509.ParseCertificateRequest(der); err != nil {
			t.Fatal(err)
		}
		// Our own policy check agrees.
		if err := kubeboot.CheckCSR(p, kubeboot.SignerClient, []string{"digital signature", "client auth"}, 0); err != nil {
			t.Fatal(err)
		}
		k.Close()
	}
}

func TestServingCSRsParseInGo(t *testing.T) {
	r := mrand.New(mrand.NewSource(2))
	for i := 0; i < 50; i++ {
		k, _ := kubeboot.GenerateKey()
		node := randomNode(r)
		dns := []string{node, "n" + randomNode(r)}
		ips := []string{"10.0.0." + string(rune('1'+r.Intn(9))), "fd00::1"}
		p, err := kubeboot.BuildCSR(kubeboot.CSRSpec{Profile: kubeboot.ProfileServing, NodeName: node, DNSNames: dns, IPAddresses: ips, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		csr := parseCSR(t, p)
		checkSubject(t, csr.Subject, node)
		if !reflect.DeepEqual(csr.DNSNames, dns) {
			t.Fatalf("DNS %v want %v", csr.DNSNames, dns)
		}
		if len(csr.IPAddresses) != 2 || !csr.IPAddresses[0].Equal(net.ParseIP(ips[0])) || !csr.IPAddresses[1].Equal(net.ParseIP(ips[1])) {
			t.Fatalf("IPs %v", csr.IPAddresses)
		}
		if len(csr.Extensions) != 1 || !csr.Extensions[0].Id.Equal(asn1.ObjectIdentifier{2, 5, 29, 17}) {
			t.Fatalf("serving extensions: %v", csr.Extensions)
		}
	}
	k, _ := kubeboot.GenerateKey()
	if _, err := kubeboot.BuildCSR(kubeboot.CSRSpec{Profile: kubeboot.ProfileServing, NodeName: "n", DNSNames: nil, IPAddresses: nil, Key: k}); err == nil {
		t.Fatal("serving CSR without SANs accepted")
	}
	if _, err := kubeboot.BuildCSR(kubeboot.CSRSpec{Profile: kubeboot.ProfileClient, NodeName: "Bad_Name", Key: k}); !errors.Is(err, kubeboot.ErrInvalidNodeName) {
		t.Fatalf("bad node: %v", err)
	}
}

func TestNodeCSRNameMatchesGoDigest(t *testing.T) {
	r := mrand.New(mrand.NewSource(3))
	for i := 0; i < 200; i++ {
		k, _ := kubeboot.GenerateKey()
		node := randomNode(r)
		name, err := kubeboot.NodeCSRName(k, node)
		if err != nil {
			t.Fatal(err)
		}
		spki, _ := k.PublicKeySPKI()
		want := goDigestedName(spki, "system:node:"+node, []string{"system:nodes"}, []string{"digital signature", "client auth"})
		if name != want || len(name) != 52 {
			t.Fatalf("node %q: ours %s, Go %s", node, name, want)
		}
		pt, _ := k.PublicPoint()
		name2, err := kubeboot.NodeCSRNameForPoint(pt, node)
		if err != nil || name2 != want {
			t.Fatalf("for point: %s %v", name2, err)
		}
		k.Close()
	}
}

func TestCSRObjectJSON(t *testing.T) {
	k, _ := kubeboot.GenerateKey()
	p, _ := kubeboot.BuildCSR(kubeboot.CSRSpec{Profile: kubeboot.ProfileClient, NodeName: "n1", Key: k})
	name, _ := kubeboot.NodeCSRName(k, "n1")
	obj, err := kubeboot.CSRObject(p, name, kubeboot.ProfileClient, 3600)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Kind     string
		Metadata struct{ Name, GenerateName string }
		Spec     struct {
			Request           []byte
			SignerName        string
			Usages            []string
			ExpirationSeconds int
		}
	}
	if err := jsonUnmarshal(obj, &v); err != nil {
		t.Fatalf("%v: %s", err, obj)
	}
	if v.Kind != "CertificateSigningRequest" || v.Metadata.Name != name || !bytes.Equal(v.Spec.Request, p) ||
		v.Spec.SignerName != kubeboot.SignerClient || v.Spec.ExpirationSeconds != 3600 ||
		!reflect.DeepEqual(v.Spec.Usages, []string{"digital signature", "client auth"}) {
		t.Fatalf("%+v", v)
	}
	obj, _ = kubeboot.CSRObject(p, "", kubeboot.ProfileClient, 0)
	v.Metadata.Name = ""
	v.Spec.ExpirationSeconds = 0
	_ = jsonUnmarshal(obj, &v)
	if v.Metadata.GenerateName != "csr-" || v.Spec.ExpirationSeconds != 0 {
		t.Fatalf("%s", obj)
	}
	if _, err := kubeboot.CSRObject(p, "", kubeboot.ProfileClient, 599); err == nil {
		t.Fatal("expirationSeconds 599 accepted")
	}
}

func TestTokens(t *testing.T) {
	tok, err := kubeboot.ParseToken("abcdef.0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if tok.ID() != "abcdef" || tok.Wire() != "abcdef.0123456789abcdef" || tok.UserName() != "system:bootstrap:abcdef" ||
		tok.SecretName() != "bootstrap-token-abcdef" || strings.Contains(tok.String(), "0123") {
		t.Fatal(tok.ID(), tok.UserName(), tok.SecretName(), tok.String())
	}
	for _, bad := range []string{"", "ABCDEF.0123456789abcdef", "abcdef.0123456789abcde", " abcdef.0123456789abcdef"} {
		if _, err := kubeboot.ParseToken(bad); !errors.Is(err, kubeboot.ErrInvalidToken) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	g, err := kubeboot.GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubeboot.ParseToken(g.Wire()); err != nil {
		t.Fatal(err)
	}
	m, err := tok.SecretManifest("d", time.Unix(1800000000, 0), kubeboot.TokenUsageAuthentication|kubeboot.TokenUsageSigning, "system:bootstrappers:x")
	if err != nil || !bytes.Contains(m, []byte("bootstrap-token-abcdef")) {
		t.Fatalf("%v %s", err, m)
	}
	tok.Close()
	tok.Close()
	if tok.ID() != "" {
		t.Fatal("closed token still answers")
	}
}

func TestCAPinsMatchGo(t *testing.T) {
	ca, _ := newCA(t, "pin-ca")
	want := kubeboot.PinOfSPKI(ca.cert.RawSubjectPublicKeyInfo)
	pins, err := kubeboot.PinsOfPEM(ca.pem)
	if err != nil || len(pins) != 1 || pins[0] != want {
		t.Fatalf("%v %v want %v", pins, err, want)
	}
	p, err := kubeboot.ParseCAPin(strings.ToUpper(want.String()[7:]) + "")
	if err == nil {
		t.Fatalf("pin without sha256: prefix accepted: %v", p)
	}
	p, err = kubeboot.ParseCAPin("sha256:" + strings.ToUpper(want.String()[7:]))
	if err != nil || p != want {
		t.Fatal(err)
	}
	if err := kubeboot.CheckPins([]kubeboot.CAPin{{1}, want}, ca.pem); err != nil {
		t.Fatal(err)
	}
	if err := kubeboot.CheckPins([]kubeboot.CAPin{{1}}, ca.pem); !errors.Is(err, kubeboot.ErrPinMismatch) {
		t.Fatal(err)
	}
	if err := kubeboot.CheckPins(nil, ca.pem); !errors.Is(err, kubeboot.ErrPinMismatch) {
		t.Fatal(err)
	}
}

func TestKubeconfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ca, _ := newCA(t, "kc-ca")
	y, err := kubeboot.NodeKubeconfig("https://127.0.0.1:6443", "", ca.pem, false, "/var/lib/kubelet/pki")
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubeboot.ParseKubeconfig(y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if kc.Server != "https://127.0.0.1:6443" || kc.CA.Source != kubeboot.SourceData || !bytes.Equal(kc.CA.Data, ca.pem) ||
		kc.ClientCert.File != "/var/lib/kubelet/pki/kubelet-client-current.pem" || kc.ClientKey.File != kc.ClientCert.File ||
		kc.ContextName != "default-context" || kc.Namespace != "default" {
		t.Fatalf("%+v", kc)
	}
	// A kubectl-style bootstrap kubeconfig with a relative CA file.
	boot := "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority: ca.crt\n    server: https://10.0.0.1:6443\n  name: bootstrap\ncontexts:\n- context:\n    cluster: bootstrap\n    user: kubelet-bootstrap\n  name: bootstrap\ncurrent-context: bootstrap\nusers:\n- name: kubelet-bootstrap\n  user:\n    token: abcdef.0123456789abcdef\n"
	path := filepath.Join(dir, "boot.kubeconfig")
	os.WriteFile(path, []byte(boot), 0o600)
	kc, err = kubeboot.ReadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if kc.CA.File != filepath.Join(dir, "ca.crt") || kc.Token != "abcdef.0123456789abcdef" || kc.Server != "https://10.0.0.1:6443" {
		t.Fatalf("%+v", kc)
	}
	if _, err := kubeboot.ParseKubeconfig([]byte("apiVersion: v1\nkind: Config\n")); !errors.Is(err, kubeboot.ErrMalformed) {
		t.Fatal(err)
	}
}

func TestResultNames(t *testing.T) {
	for code, name := range map[uint32]string{0: "ok", 403: "expired", 401: "untrusted", 700: "unauthorized",
		702: "csr-denied", 707: "timeout", 9999: "unknown"} {
		if got := kubeboot.ResultName(code); got != name {
			t.Fatalf("%d: %q", code, got)
		}
	}
	if kubeboot.Version() == "" {
		t.Fatal("no version")
	}
}

// docs/test-vectors.md vectors (key K1, P-256): both the Go reimplementation and the library must
// give them.
func TestNodeCSRNameSpecVectors(t *testing.T) {
	const k1 = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBQc50o+SyBffpzfRjyfULo+yJGB7FDxLSYQzUOnSo+8oAoGCCqGSM49\nAwEHoUQDQgAE3wsRu9elE0goTwfLycqOCWwP4YCurXH61SN6kZB/XNw569fHfFH2\na9AKDIgLcIl3WIEJ8NMDy2ANvLrpuvVJqw==\n-----END EC PRIVATE KEY-----\n"
	k, err := kubeboot.KeyFromPEM([]byte(k1))
	if err != nil {
		t.Fatal(err)
	}
	spki, _ := k.PublicKeySPKI()
	for node, want := range map[string]string{
		"node-1":               "node-csr-n8Gs_E-Z9L7aSxQqzzA00Csg_R1hDXOPVUFrdIQkVzo",
		"worker-a.example.com": "node-csr-o8Hoe6OLrh1HbJkDczyoHirTociXreM6Y1I3ugsSvvs",
	} {
		got, err := kubeboot.NodeCSRName(k, node)
		if err != nil || got != want {
			t.Fatalf("%s: library %s %v, want %s", node, got, err, want)
		}
		if g := goDigestedName(spki, "system:node:"+node, []string{"system:nodes"}, []string{"digital signature", "client auth"}); g != want {
			t.Fatalf("%s: Go %s, want %s", node, g, want)
		}
	}
}
