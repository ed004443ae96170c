package kubeboot_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"
	"time"

	"kubeboot.dev/go/kubeboot"
)

// goVerdict: does Go's x509.Verify accept the leaf for client auth at now with the CA pool?
func goVerdict(t *testing.T, leafPEM, caPEM []byte, now time.Time) error {
	blk, _ := pem.Decode(leafPEM)
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err
}

func TestVerifyIssuedAgreesWithGoX509(t *testing.T) {
	node := "worker-1"
	k, _ := kubeboot.GenerateKey()
	spki, _ := k.PublicKeySPKI()
	pub := mustPub(t, k)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

	ca, caKey := newCA(t, "kubeboot-test-ca")
	wrongCA, wrongCAKey := newCA(t, "other-ca")
	// Same subject as ca, different key: the name matches but the signature cannot verify.
	impostorKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	impostor := newCAWithKey(t, "kubeboot-test-ca", impostorKey, ca.cert.NotBefore, ca.cert.NotAfter)
	// A CA that is itself expired at now.
	expCAKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 12, 2, 10, 50, 40, 0, time.UTC)
	expCA := newCAWithKey(t, "expired-ca", expCAKey, now.Add(-48*time.Hour), now.Add(-time.Hour))

	nb, na := now.Add(-5*time.Minute), now.Add(time.Hour)
	base := leafOpts{node: node, pub: pub, nb: nb, na: na}
	with := func(f func(o *leafOpts)) leafOpts { o := base; f(&o); return o }

	type tc struct {
		name string
		leaf []byte
		ca   []byte
		now  time.Time
		// want: "" = accept, else our reason name.
		want string
		// keySubjectOK: the leaf carries our key and subject (Go does not check those).
		keySubjectOK bool
		// divergent: a documented case where kubeboot is deliberately stricter than x509.Verify.
		divergent bool
	}
	valid := issue(t, ca, caKey, base)
	cases := []tc{
		{"valid", valid, ca.pem, now, "", true, false},
		{"valid at notBefore", valid, ca.pem, nb, "", true, false},
		{"valid at notAfter", valid, ca.pem, na, "", true, false},
		{"one second before notBefore", valid, ca.pem, nb.Add(-time.Second), "not-yet-valid", true, false},
		{"one second after notAfter", valid, ca.pem, na.Add(time.Second), "expired", true, false},
		{"expired", issue(t, ca, caKey, with(func(o *leafOpts) { o.nb, o.na = now.Add(-2*time.Hour), now.Add(-time.Hour) })), ca.pem, now, "expired", true, false},
		{"not yet valid", issue(t, ca, caKey, with(func(o *leafOpts) { o.nb, o.na = now.Add(time.Hour), now.Add(2*time.Hour) })), ca.pem, now, "not-yet-valid", true, false},
		{"wrong CA", issue(t, wrongCA, wrongCAKey, base), ca.pem, now, "untrusted", true, false},
		{"same CA name, wrong CA key", issue(t, impostor, impostorKey, base), ca.pem, now, "bad-signature", true, false},
		{"CA expired", issue(t, expCA, expCAKey, base), expCA.pem, now, "expired", true, false},
		{"wrong key", issue(t, ca, caKey, with(func(o *leafOpts) { o.pub = &other.PublicKey })), ca.pem, now, "key-mismatch", false, false},
		{"server auth only", issue(t, ca, caKey, with(func(o *leafOpts) { o.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })), ca.pem, now, "wrong-usage", true, false},
		{"client+server auth", issue(t, ca, caKey, with(func(o *leafOpts) {
			o.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		})), ca.pem, now, "", true, false},
		{"wrong CN", issue(t, ca, caKey, with(func(o *leafOpts) { o.cn = "system:node:worker-2" })), ca.pem, now, "subject-mismatch", false, false},
		{"wrong O", issue(t, ca, caKey, with(func(o *leafOpts) { o.org = []string{"acme"} })), ca.pem, now, "subject-mismatch", false, false},
		{"extra O", issue(t, ca, caKey, with(func(o *leafOpts) { o.org = []string{"system:nodes", "acme"} })), ca.pem, now, "subject-mismatch", false, false},
		{"DNS SAN on a client cert", issue(t, ca, caKey, with(func(o *leafOpts) { o.dns = []string{"worker-1"} })), ca.pem, now, "subject-mismatch", false, false},
		{"leaf is a CA", issue(t, ca, caKey, with(func(o *leafOpts) { o.isCA = true; o.keyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign })), ca.pem, now, "is-ca", false, false},
		// Go treats a leaf without EKU as valid for any usage; kubeboot requires clientAuth (the
		// kubelet signers always set it).
		{"no EKU", issue(t, ca, caKey, with(func(o *leafOpts) { o.noEKU = true })), ca.pem, now, "wrong-usage", true, true},
		{"bundle with other CA first", valid, append(append([]byte{}, wrongCA.pem...), ca.pem...), now, "", true, false},
	}
	for _, c := range cases {
		goErr := goVerdict(t, c.leaf, c.ca, c.now)
		v, err := kubeboot.VerifyIssued(c.leaf, c.ca, node, spki, c.now)
		ours := ""
		if err != nil {
			var ke *kubeboot.Error
			if !errors.As(err, &ke) || !ke.IsVerifyError() {
				t.Fatalf("%s: not a verify error: %v", c.name, err)
			}
			ours = ke.Name
		}
		if ours != c.want {
			t.Errorf("%s: ours %q, want %q (go: %v)", c.name, ours, c.want, goErr)
			continue
		}
		goAccepts := goErr == nil
		if expect := goAccepts && c.keySubjectOK; (err == nil) != expect && !c.divergent {
			t.Errorf("%s: ours accepts=%v, Go accepts=%v (%v), key/subject ok=%v", c.name, err == nil, goAccepts, goErr, c.keySubjectOK)
		}
		if c.divergent && !(goAccepts && err != nil) {
			t.Errorf("%s: expected the documented divergence (Go accepts, we reject): go %v ours %v", c.name, goErr, err)
		}
		if err == nil {
			blk, _ := pem.Decode(c.leaf)
			leaf, _ := x509.ParseCertificate(blk.Bytes)
			if !v.NotBefore.Equal(leaf.NotBefore) || !v.NotAfter.Equal(leaf.NotAfter) || v.CASubject != "CN=kubeboot-test-ca" {
				t.Errorf("%s: %+v", c.name, v)
			}
		}
	}
	// errors.Is with the sentinels.
	_, err := kubeboot.VerifyIssued(cases[5].leaf, ca.pem, node, spki, now)
	if !errors.Is(err, kubeboot.ErrExpired) || errors.Is(err, kubeboot.ErrUntrusted) {
		t.Fatal(err)
	}
	_, err = kubeboot.VerifyIssued(cases[7].leaf, ca.pem, node, spki, now)
	if !errors.Is(err, kubeboot.ErrUntrusted) {
		t.Fatal(err)
	}
}

// A time sweep around the validity window: the two verdicts agree at every second.
func TestVerifyTimeSweepAgreesWithGo(t *testing.T) {
	k, _ := kubeboot.GenerateKey()
	spki, _ := k.PublicKeySPKI()
	ca, caKey := newCA(t, "sweep-ca")
	nb := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.Add(10 * time.Second)
	leaf := issue(t, ca, caKey, leafOpts{node: "n", pub: mustPub(t, k), nb: nb, na: na})
	for s := -3; s <= 13; s++ {
		now := nb.Add(time.Duration(s) * time.Second)
		goErr := goVerdict(t, leaf, ca.pem, now)
		_, err := kubeboot.VerifyIssued(leaf, ca.pem, "n", spki, now)
		if (goErr == nil) != (err == nil) {
			t.Fatalf("t=nb%+ds: go %v ours %v", s, goErr, err)
		}
	}
}

func TestVerifyServing(t *testing.T) {
	k, _ := kubeboot.GenerateKey()
	spki, _ := k.PublicKeySPKI()
	ca, caKey := newCA(t, "serving-ca")
	now := time.Now()
	leaf := issue(t, ca, caKey, leafOpts{node: "n", pub: mustPub(t, k), nb: now.Add(-time.Minute), na: now.Add(time.Hour),
		eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, dns: []string{"n.example"}})
	if _, err := kubeboot.VerifyIssuedServing(leaf, ca.pem, "n", spki, []string{"n.example"}, nil, now); err != nil {
		t.Fatal(err)
	}
	if _, err := kubeboot.VerifyIssuedServing(leaf, ca.pem, "n", spki, []string{"other"}, nil, now); !errors.Is(err, kubeboot.ErrSubjectMismatch) {
		t.Fatal(err)
	}
	if _, err := kubeboot.VerifyIssued(leaf, ca.pem, "n", spki, now); err == nil {
		t.Fatal("serving cert accepted as client cert")
	}
}
