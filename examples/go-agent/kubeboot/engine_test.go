package kubeboot_test

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	mrand "math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeboot.dev/go/kubeboot"
)

const recordedDir = "../../../core/tests/data/recorded"

func rec(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(recordedDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func recordedToken(t *testing.T) string {
	sc := bufio.NewScanner(bytes.NewReader(rec(t, "VERSIONS")))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "bootstrap_token="); ok {
			return v
		}
	}
	t.Fatal("no bootstrap_token= in VERSIONS")
	return ""
}

var recNow = time.Date(2026, 12, 2, 10, 50, 40, 0, time.UTC)

type recFixture struct {
	key   *kubeboot.Key
	token *kubeboot.Token
	ca    []byte
}

func newRecFixture(t *testing.T, keyFile string) recFixture {
	k, err := kubeboot.KeyFromPEM(rec(t, keyFile))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := kubeboot.ParseToken(recordedToken(t))
	if err != nil {
		t.Fatal(err)
	}
	return recFixture{key: k, token: tok, ca: rec(t, "client-ca.pem")}
}

func expectSend(t *testing.T, e *kubeboot.Engine, now time.Time) *kubeboot.Request {
	t.Helper()
	a := e.Poll(now)
	if a.Kind != kubeboot.ActionSend {
		t.Fatalf("expected send, got %v (%v)", a.Kind, a.Err)
	}
	return a.Request
}

func TestEngineRecordedBootstrapByWatch(t *testing.T) {
	f := newRecFixture(t, "approved.key.pem")
	watch := rec(t, "watch-approved.json")
	const approved = "kubeboot-rec-approved-105026"
	r := mrand.New(mrand.NewSource(5))
	for _, chunk := range []int{1, 3, 7, 16, 64, 0 /* random */} {
		e, err := kubeboot.NewEngine(kubeboot.BootstrapConfig("rec-1", f.token, f.ca), f.key, recNow, 42)
		if err != nil {
			t.Fatal(err)
		}
		req := expectSend(t, e, recNow)
		if req.Kind != kubeboot.RequestCreate || req.Method != "POST" ||
			req.Path != "/apis/certificates.k8s.io/v1/certificatesigningrequests" ||
			req.Authorization != "Bearer "+recordedToken(t) || req.ContentType != "application/json" || req.Accept != "application/json" {
			t.Fatalf("create request %+v", req)
		}
		var obj struct {
			Metadata struct{ Name string }
			Spec     struct {
				Request    []byte
				SignerName string
				Usages     []string
			}
		}
		if err := json.Unmarshal(req.Body, &obj); err != nil {
			t.Fatal(err)
		}
		wantName, _ := kubeboot.NodeCSRName(f.key, "rec-1")
		if obj.Metadata.Name != wantName || e.CSRName() != wantName || obj.Spec.SignerName != kubeboot.SignerClient {
			t.Fatalf("object %+v", obj.Metadata)
		}
		// The CSR in the body is the one Go accepts.
		blk, _ := pem.Decode(obj.Spec.Request)
		csr, err := x509.ParseCertificateRequest(blk.Bytes)
		if err != nil || csr.CheckSignature() != nil || csr.Subject.CommonName != "system:node:rec-1" {
			t.Fatalf("csr %v", err)
		}
		if a := e.Poll(recNow); a.Kind != kubeboot.ActionAwait || !a.Until.Equal(recNow.Add(time.Hour)) {
			t.Fatalf("await: %+v", a)
		}
		e.OnResponse(recNow, 201, rec(t, "csr-create-201.json"))
		if e.CSRName() != approved {
			t.Fatalf("name after create %q", e.CSRName())
		}
		req = expectSend(t, e, recNow)
		if req.Kind != kubeboot.RequestWatch || req.Method != "GET" || len(req.Body) != 0 ||
			!strings.HasPrefix(req.Path, "/apis/certificates.k8s.io/v1/certificatesigningrequests?fieldSelector=metadata.name%3D"+approved+"&watch=true") {
			t.Fatalf("watch %+v", req)
		}
		now := recNow.Add(time.Second)
		rest := watch
		for len(rest) > 0 {
			n := chunk
			if n == 0 {
				n = 1 + r.Intn(40)
			}
			if n > len(rest) {
				n = len(rest)
			}
			keep := e.OnStreamData(now, rest[:n])
			rest = rest[n:]
			if a := e.Poll(now); a.Kind != kubeboot.ActionAwait {
				if keep {
					t.Fatalf("chunk %d: keep reading although the watch is over", chunk)
				}
				if a.Kind != kubeboot.ActionDone {
					t.Fatalf("chunk %d: %v %v", chunk, a.Kind, a.Err)
				}
				break
			}
		}
		a := e.Poll(now)
		if a.Kind != kubeboot.ActionDone {
			t.Fatalf("chunk %d: %v %v", chunk, a.Kind, a.Err)
		}
		is := a.Issued
		if is.CSRName != approved || !bytes.HasPrefix(is.CertPEM, []byte("-----BEGIN CERTIFICATE-----")) {
			t.Fatalf("%+v", is)
		}
		life := is.NotAfter.Sub(is.NotBefore)
		if is.RotationDeadline.Before(is.NotBefore.Add(life*7/10)) || is.RotationDeadline.After(is.NotBefore.Add(life*9/10)) {
			t.Fatalf("deadline %v", is.RotationDeadline)
		}
		// Go agrees the certificate is valid for client auth with the client CA, has our key.
		cb, _ := pem.Decode(is.CertPEM)
		cert, err := x509.ParseCertificate(cb.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(f.ca)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatal(err)
		}
		spki, _ := f.key.PublicKeySPKI()
		if !bytes.Equal(cert.RawSubjectPublicKeyInfo, spki) || !cert.NotAfter.Equal(is.NotAfter) {
			t.Fatal("issued cert mismatch")
		}
		// Done is sticky; further input is ignored.
		if a := e.Poll(now); a.Kind != kubeboot.ActionDone {
			t.Fatal(a.Kind)
		}
		e.OnResponse(now, 200, []byte("{}"))
		if a := e.Poll(now); a.Kind != kubeboot.ActionDone {
			t.Fatal(a.Kind)
		}
		e.Close()
		e.Close()
		if a := e.Poll(now); a.Kind != kubeboot.ActionFailed {
			t.Fatal("closed engine")
		}
	}
}

func TestEngineRecordedDeniedAndFailed(t *testing.T) {
	for _, c := range []struct {
		key, node, created, watch string
		want                      error
		reason                    string
	}{
		{"denied.key.pem", "rec-2", "csr-create-201-pending.json", "watch-denied.json", kubeboot.ErrDenied, ""},
		{"failed.key.pem", "rec-3", "csr-create-201-to-fail.json", "watch-failed.json", kubeboot.ErrFailed, "SignerValidationFailure"},
	} {
		f := newRecFixture(t, c.key)
		e, err := kubeboot.NewEngine(kubeboot.BootstrapConfig(c.node, f.token, f.ca), f.key, recNow, 7)
		if err != nil {
			t.Fatal(err)
		}
		expectSend(t, e, recNow)
		e.OnResponse(recNow, 201, rec(t, c.created))
		expectSend(t, e, recNow)
		if e.OnStreamData(recNow, rec(t, c.watch)) {
			t.Fatalf("%s: keep reading after the CSR failed", c.watch)
		}
		a := e.Poll(recNow)
		var ke *kubeboot.Error
		if a.Kind != kubeboot.ActionFailed || !errors.Is(a.Err, c.want) || !errors.As(a.Err, &ke) || ke.Detail == "" {
			t.Fatalf("%s: %+v", c.watch, a)
		}
		if c.reason != "" && !strings.Contains(ke.Detail, c.reason) {
			t.Fatalf("detail %q", ke.Detail)
		}
	}
}

func TestEngineRecordedHTTPErrors(t *testing.T) {
	for _, c := range []struct {
		file   string
		status int
		want   error
	}{
		{"csr-create-401-wrong-secret.json", 401, kubeboot.ErrUnauthorized},
		{"csr-create-403-no-binding.json", 403, kubeboot.ErrForbidden},
		{"csr-create-422-invalid.json", 422, kubeboot.ErrHTTPStatus},
	} {
		f := newRecFixture(t, "approved.key.pem")
		e, _ := kubeboot.NewEngine(kubeboot.BootstrapConfig("rec-1", f.token, f.ca), f.key, recNow, 3)
		expectSend(t, e, recNow)
		e.OnResponse(recNow, c.status, rec(t, c.file))
		a := e.Poll(recNow)
		if a.Kind != kubeboot.ActionFailed || a.HTTPStatus != c.status || !errors.Is(a.Err, c.want) {
			t.Fatalf("%s: %+v", c.file, a)
		}
	}
}

func TestEngineRecordedAlreadyExistsAndBackoff(t *testing.T) {
	f := newRecFixture(t, "approved.key.pem")
	e, _ := kubeboot.NewEngine(kubeboot.BootstrapConfig("rec-1", f.token, f.ca), f.key, recNow, 1)
	expectSend(t, e, recNow)
	e.OnResponse(recNow, 409, rec(t, "csr-create-409-already-exists.json"))
	req := expectSend(t, e, recNow)
	if req.Kind != kubeboot.RequestGet {
		t.Fatal(req.Kind)
	}
	e.OnResponse(recNow, 200, rec(t, "csr-get-approved-issued.json"))
	if a := e.Poll(recNow); a.Kind != kubeboot.ActionDone {
		t.Fatalf("%+v", a)
	}

	// Pushback: a 429 with Retry-After waits as the server asked (21 to 31 s), not 2 s.
	e, _ = kubeboot.NewEngine(kubeboot.BootstrapConfig("rec-1", f.token, f.ca), f.key, recNow, 1)
	expectSend(t, e, recNow)
	e.OnResponseWithRetryAfter(recNow, 429, "20", []byte("Too many requests, please try again later.\n"))
	if a := e.Poll(recNow); a.Kind != kubeboot.ActionWait || a.Until.Sub(recNow) < 21*time.Second || a.Until.Sub(recNow) > 31*time.Second {
		t.Fatalf("%+v", a)
	}

	// Transport errors back off (2 s + jitter first), and the deadline ends it with ErrTimeout.
	cfg := kubeboot.BootstrapConfig("rec-1", f.token, f.ca)
	cfg.Wait = time.Minute
	e, _ = kubeboot.NewEngine(cfg, f.key, recNow, 9)
	if !e.Deadline().Equal(recNow.Add(time.Minute)) {
		t.Fatal(e.Deadline())
	}
	expectSend(t, e, recNow)
	e.OnTransportError(recNow)
	a := e.Poll(recNow)
	if a.Kind != kubeboot.ActionWait || a.Until.Sub(recNow) < 2*time.Second || a.Until.Sub(recNow) > 3*time.Second {
		t.Fatalf("%+v", a)
	}
	a = e.Poll(recNow.Add(time.Minute))
	if a.Kind != kubeboot.ActionFailed || !errors.Is(a.Err, kubeboot.ErrTimeout) {
		t.Fatalf("%+v", a)
	}
}

func TestEngineRotationConfig(t *testing.T) {
	f := newRecFixture(t, "approved.key.pem")
	cfg := kubeboot.RotationConfig("rec-1", f.ca)
	cfg.ExpirationSeconds = 600
	e, err := kubeboot.NewEngine(cfg, f.key, recNow, 1)
	if err != nil {
		t.Fatal(err)
	}
	req := expectSend(t, e, recNow)
	if req.Authorization != "" || e.CSRName() != "" || !bytes.Contains(req.Body, []byte(`"generateName":"csr-"`)) ||
		!bytes.Contains(req.Body, []byte(`"expirationSeconds":600`)) {
		t.Fatalf("%+v %s", req, req.Body)
	}
	if !e.Deadline().Equal(recNow.Add(15 * time.Minute)) {
		t.Fatal(e.Deadline())
	}
	cfg.ExpirationSeconds = 5
	if _, err := kubeboot.NewEngine(cfg, f.key, recNow, 1); err == nil {
		t.Fatal("expirationSeconds 5 accepted")
	}
}
