package kubeboot_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"kubeboot.dev/go/kubeboot"
)

type bigInt = big.Int

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

type testCA struct {
	cert *x509.Certificate
	pem  []byte
}

var serial int64 = 1000

func nextSerial() *big.Int { serial++; return big.NewInt(serial) }

// newCA is a self-signed P-256 CA valid 2000–2100.
func newCA(t testing.TB, cn string) (*testCA, *ecdsa.PrivateKey) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return newCAWithKey(t, cn, k, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)), k
}

func newCAWithKey(t testing.TB, cn string, k *ecdsa.PrivateKey, nb, na time.Time) *testCA {
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             nb,
		NotAfter:              na,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{cert: c, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

type leafOpts struct {
	node     string
	cn       string // overrides system:node:<node>
	org      []string
	pub      any
	nb, na   time.Time
	eku      []x509.ExtKeyUsage
	noEKU    bool
	isCA     bool
	dns      []string
	keyUsage x509.KeyUsage
}

// issue signs a kubelet-style client leaf with the CA (P-256) and returns its PEM.
func issue(t testing.TB, ca *testCA, caKey *ecdsa.PrivateKey, o leafOpts) []byte {
	cn := o.cn
	if cn == "" {
		cn = "system:node:" + o.node
	}
	org := o.org
	if org == nil {
		org = []string{"system:nodes"}
	}
	eku := o.eku
	if eku == nil && !o.noEKU {
		eku = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	ku := o.keyUsage
	if ku == 0 {
		ku = x509.KeyUsageDigitalSignature
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn, Organization: org},
		NotBefore:             o.nb,
		NotAfter:              o.na,
		KeyUsage:              ku,
		ExtKeyUsage:           eku,
		BasicConstraintsValid: true,
		IsCA:                  o.isCA,
		DNSNames:              o.dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, o.pub, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func mustPub(t testing.TB, k *kubeboot.Key) any {
	spki, err := k.PublicKeySPKI()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(spki)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}
