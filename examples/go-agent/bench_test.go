package goagent_test

// Side-by-side figures: Go's crypto/x509 vs libkubeboot through the cgo binding.
//
//	go test -run '^$' -bench . -benchtime 2s
//
// Both CSR paths produce a PEM kubelet client CSR (O=system:nodes, CN=system:node:<node>) signed
// with ECDSA P-256/SHA-256; both verify paths check a one-level P-256 chain for client auth.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"kubeboot.dev/go/kubeboot"
)

const benchNode = "bench-node-1"

var csrTemplate = &x509.CertificateRequest{
	Subject: pkix.Name{Organization: []string{"system:nodes"}, CommonName: "system:node:" + benchNode},
}

func goCSR(b *testing.B, k *ecdsa.PrivateKey) []byte {
	der, err := x509.CreateCertificateRequest(rand.Reader, csrTemplate, k)
	if err != nil {
		b.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func BenchmarkGoCreateCertificateRequest(b *testing.B) {
	b.Run("key-reused", func(b *testing.B) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			goCSR(b, k)
		}
	})
	b.Run("with-keygen", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				b.Fatal(err)
			}
			goCSR(b, k)
		}
	})
}

func BenchmarkKubebootBuildClientCSR(b *testing.B) {
	b.Run("key-reused", func(b *testing.B) {
		k, _ := kubeboot.GenerateKey()
		defer k.Close()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := kubeboot.BuildCSR(kubeboot.CSRSpec{Profile: kubeboot.ProfileClient, NodeName: benchNode, Key: k}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("with-keygen", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			k, err := kubeboot.GenerateKey()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := kubeboot.BuildCSR(kubeboot.CSRSpec{Profile: kubeboot.ProfileClient, NodeName: benchNode, Key: k}); err != nil {
				b.Fatal(err)
			}
			k.Close()
		}
	})
}

type chain struct {
	caPEM, leafPEM []byte
	ca, leaf       *x509.Certificate
	spki           []byte
	now            time.Time
}

// newChain: a P-256 CA and a kubelet client leaf for a kubeboot key (one level).
func newChain(b *testing.B) chain {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, _ := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	k, _ := kubeboot.GenerateKey()
	defer k.Close()
	spki, _ := k.PublicKeySPKI()
	pub, _ := x509.ParsePKIXPublicKey(spki)
	lT := &x509.Certificate{SerialNumber: big.NewInt(2),
		Subject:   pkix.Name{CommonName: "system:node:" + benchNode, Organization: []string{"system:nodes"}},
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true}
	lDER, err := x509.CreateCertificate(rand.Reader, lT, ca, pub, caKey)
	if err != nil {
		b.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(lDER)
	return chain{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		leafPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: lDER}),
		ca:      ca, leaf: leaf, spki: spki, now: now,
	}
}

func BenchmarkGoVerify(b *testing.B) {
	c := newChain(b)
	b.Run("parsed", func(b *testing.B) {
		pool := x509.NewCertPool()
		pool.AddCert(c.ca)
		opts := x509.VerifyOptions{Roots: pool, CurrentTime: c.now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := c.leaf.Verify(opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("from-pem", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(c.caPEM)
			blk, _ := pem.Decode(c.leafPEM)
			leaf, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: c.now,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkKubebootVerifyIssued(b *testing.B) {
	c := newChain(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := kubeboot.VerifyIssued(c.leafPEM, c.caPEM, benchNode, c.spki, c.now); err != nil {
			b.Fatal(err)
		}
	}
}

// The cgo call overhead alone (a trivial library call).
func BenchmarkKubebootCgoCall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		kubeboot.Version()
	}
}
