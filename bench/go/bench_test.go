// Go peers of core/benches/peers.rs: crypto/x509 CreateCertificateRequest (key given, keygen
// included) and Certificate.Verify on the same fixtures (core/tests/data), plus the bare P-256
// sign / verify. Run by bench/run: go test -run '^$' -bench . -count 5
package bench

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const now = 1_811_808_000

func data(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "..", "core", "tests", "data", name))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", name)
	}
	return blk.Bytes
}

func k1(t testing.TB) *ecdsa.PrivateKey {
	k, err := x509.ParseECPrivateKey(data(t, "p256.key"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var tmpl = &x509.CertificateRequest{
	Subject: pkix.Name{Organization: []string{"system:nodes"}, CommonName: "system:node:node-1"},
}

func BenchmarkCSRKeyGiven(b *testing.B) {
	key := k1(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCSRKeygen(b *testing.B) {
	for i := 0; i < b.N; i++ {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBareSignP256(b *testing.B) {
	key := k1(b)
	d := sha256.Sum256([]byte("a CSR-sized message ................................................"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := key.Sign(rand.Reader, d[:], crypto.SHA256); err != nil {
			b.Fatal(err)
		}
	}
}

func verifyBench(b *testing.B, leafName, caName string) {
	caCert, err := x509.ParseCertificate(data(b, caName))
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	leafDER := data(b, leafName)
	opts := x509.VerifyOptions{
		Roots:       pool,
		CurrentTime: time.Unix(now, 0),
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		leaf, err := x509.ParseCertificate(leafDER)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := leaf.Verify(opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyEC(b *testing.B)  { verifyBench(b, "ec-leaf.crt", "ec-ca.crt") }
func BenchmarkVerifyRSA(b *testing.B) { verifyBench(b, "rsa-leaf.crt", "rsa-ca.crt") }

func BenchmarkBareVerifyP256(b *testing.B) {
	caCert, err := x509.ParseCertificate(data(b, "ec-ca.crt"))
	if err != nil {
		b.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(data(b, "ec-leaf.crt"))
	if err != nil {
		b.Fatal(err)
	}
	pub := caCert.PublicKey.(*ecdsa.PublicKey)
	d := sha256.Sum256(leaf.RawTBSCertificate)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !ecdsa.VerifyASN1(pub, d[:], leaf.Signature) {
			b.Fatal("bad")
		}
	}
}
