package agentrun

// The runtime against an in-process fake apiserver (httptest, TLS, chunked watch streams split
// mid-event) that signs CSRs with a Go CA. The real control plane is exercised by
// e2e/run (E2E_ONLY=go for this agent alone).

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeboot.dev/go/kubeboot"
)

const testToken = "abcdef.0123456789abcdef"

type fakeMode int

const (
	approve fakeMode = iota
	deny
	never
)

type fakeCSR struct {
	name, uid string
	spec      map[string]any
	status    map[string]any
	user      string
}

type fakeAPI struct {
	t      *testing.T
	mode   fakeMode
	caKey  *ecdsa.PrivateKey
	ca     *x509.Certificate
	caPEM  []byte
	mu     sync.Mutex
	csrs   map[string]*fakeCSR
	n      int
	events []string // what happened, for assertions
	// pushback: answer this many more creates with 429 and Retry-After: 1 (API Priority and
	// Fairness rejecting them).
	pushback int
	// life of the certificates it issues (default 1 h).
	life time.Duration
	// late: the watch stays quiet this long before the approval (a person approving).
	late time.Duration
}

func newFakeAPI(t *testing.T, mode fakeMode) (*fakeAPI, *httptest.Server) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fake-client-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	ca, _ := x509.ParseCertificate(der)
	f := &fakeAPI{t: t, mode: mode, caKey: k, ca: ca, csrs: map[string]*fakeCSR{},
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	srv := httptest.NewUnstartedServer(f)
	srv.EnableHTTP2 = true
	// Ask for a client certificate (rotation) without requiring one (bootstrap).
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeAPI) log(s string) { f.mu.Lock(); f.events = append(f.events, s); f.mu.Unlock() }

func (f *fakeAPI) user(r *http.Request) (string, bool) {
	if r.Header.Get("Authorization") == "Bearer "+testToken {
		return "system:bootstrap:abcdef", true
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		c := r.TLS.PeerCertificates[0]
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool(f.ca), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
			return c.Subject.CommonName, true
		}
	}
	return "", false
}

func pool(c *x509.Certificate) *x509.CertPool { p := x509.NewCertPool(); p.AddCert(c); return p }

func (f *fakeAPI) object(c *fakeCSR) map[string]any {
	return map[string]any{"kind": "CertificateSigningRequest", "apiVersion": "certificates.k8s.io/v1",
		"metadata": map[string]any{"name": c.name, "uid": c.uid, "resourceVersion": "1"},
		"spec":     c.spec, "status": c.status}
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
}

const csrPath = "/apis/certificates.k8s.io/v1/certificatesigningrequests"

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/serial" { // which client certificate the handshake presented
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			w.Write([]byte("none"))
			return
		}
		w.Write([]byte(r.TLS.PeerCertificates[0].SerialNumber.String()))
		return
	}
	if r.URL.Path == "/healthz" {
		f.log("healthz")
		w.Write([]byte("ok"))
		return
	}
	user, ok := f.user(r)
	if !ok {
		status(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	switch {
	case r.Method == "POST" && r.URL.Path == csrPath:
		var obj struct {
			Metadata struct{ Name, GenerateName string }
			Spec     map[string]any
		}
		if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
			status(w, 400, "BadRequest", err.Error())
			return
		}
		f.mu.Lock()
		if f.pushback > 0 {
			f.pushback--
			f.events = append(f.events, "pushback")
			f.mu.Unlock()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
			return
		}
		f.n++
		name := obj.Metadata.Name
		if name == "" {
			name = fmt.Sprintf("%s%05d", obj.Metadata.GenerateName, f.n)
		}
		if _, dup := f.csrs[name]; dup {
			f.mu.Unlock()
			status(w, 409, "AlreadyExists", "already exists")
			return
		}
		c := &fakeCSR{name: name, uid: fmt.Sprintf("uid-%d", f.n), spec: obj.Spec, status: map[string]any{}, user: user}
		f.csrs[name] = c
		body, _ := json.Marshal(f.object(c))
		f.mu.Unlock()
		f.log("create " + name + " by " + user)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		w.Write(body)
	case r.Method == "GET" && r.URL.Path == csrPath && r.URL.Query().Get("watch") == "true":
		name := strings.TrimPrefix(r.URL.Query().Get("fieldSelector"), "metadata.name=")
		f.mu.Lock()
		c := f.csrs[name]
		f.mu.Unlock()
		if c == nil {
			status(w, 404, "NotFound", "not found")
			return
		}
		f.log("watch " + name)
		f.stream(w, r, c)
	default:
		status(w, 404, "NotFound", "no route "+r.Method+" "+r.URL.String())
	}
}

// stream writes ADDED, then (approve) Approved and the certificate, or (deny) Denied, each event
// split into two flushed writes; with `never` it just holds the stream open.
func (f *fakeAPI) stream(w http.ResponseWriter, r *http.Request, c *fakeCSR) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	send := func(typ string) {
		f.mu.Lock()
		b, _ := json.Marshal(map[string]any{"type": typ, "object": f.object(c)})
		f.mu.Unlock()
		b = append(b, '\n')
		half := len(b) / 2
		w.Write(b[:half])
		fl.Flush()
		time.Sleep(5 * time.Millisecond)
		w.Write(b[half:])
		fl.Flush()
	}
	send("ADDED")
	if f.late > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(f.late):
		}
	}
	switch f.mode {
	case approve:
		f.mu.Lock()
		c.status["conditions"] = []any{map[string]any{"type": "Approved", "status": "True", "reason": "AutoApproved", "message": "ok"}}
		f.mu.Unlock()
		send("MODIFIED")
		cert := f.sign(c)
		f.mu.Lock()
		c.status["certificate"] = cert
		f.mu.Unlock()
		send("MODIFIED")
	case deny:
		f.mu.Lock()
		c.status["conditions"] = []any{map[string]any{"type": "Denied", "status": "True", "reason": "NotOnMyWatch", "message": "go away"}}
		f.mu.Unlock()
		send("MODIFIED")
	}
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// sign issues a kubelet client certificate for the CSR in c (as the kubelet-client signer).
func (f *fakeAPI) sign(c *fakeCSR) []byte {
	req, _ := c.spec["request"].(string)
	p, err := base64Std(req)
	if err != nil {
		f.t.Errorf("request: %v", err)
		return nil
	}
	blk, _ := pem.Decode(p)
	csr, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil || csr.CheckSignature() != nil {
		f.t.Errorf("csr: %v", err)
		return nil
	}
	life := time.Hour
	if e, ok := c.spec["expirationSeconds"].(float64); ok {
		life = time.Duration(e) * time.Second
	}
	now := time.Now()
	backdate := 5 * time.Minute
	if f.life != 0 {
		life, backdate = f.life, time.Second
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: csr.Subject,
		NotBefore: now.Add(-backdate), NotAfter: now.Add(life), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true}
	if c.spec["signerName"] == "kubernetes.io/kubelet-serving" {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = csr.DNSNames, csr.IPAddresses
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.ca, csr.PublicKey, f.caKey)
	if err != nil {
		f.t.Errorf("sign: %v", err)
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func base64Std(s string) ([]byte, error) {
	var out []byte
	err := json.Unmarshal([]byte(`"`+s+`"`), &out)
	return out, err
}

type env struct {
	o   *kubeboot.AgentConfig
	api *fakeAPI
	srv *httptest.Server
	dir string
}

// run runs the runtime on c to its end.
func run(c *kubeboot.AgentConfig) error {
	rt, err := Start(context.Background(), Config{Agent: *c, Errors: io.Discard})
	if err != nil {
		return err
	}
	return rt.Wait()
}

func setup(t *testing.T, mode fakeMode, token string) env {
	api, srv := newFakeAPI(t, mode)
	dir := t.TempDir()
	// The serving CA as a file named relative to the bootstrap kubeconfig (resolved by the reader).
	servingCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	os.MkdirAll(filepath.Join(dir, "boot"), 0o755)
	os.WriteFile(filepath.Join(dir, "boot", "serving-ca.crt"), servingCA, 0o644)
	os.WriteFile(filepath.Join(dir, "client-ca.crt"), api.caPEM, 0o644)
	boot := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: serving-ca.crt
    server: %s
  name: bootstrap
contexts:
- context:
    cluster: bootstrap
    user: kubelet-bootstrap
  name: bootstrap
current-context: bootstrap
users:
- name: kubelet-bootstrap
  user:
    token: %s
`, srv.URL, token)
	os.WriteFile(filepath.Join(dir, "boot", "bootstrap.kubeconfig"), []byte(boot), 0o600)
	c := kubeboot.DefaultAgentConfig()
	c.BootstrapKubeconfig = filepath.Join(dir, "boot", "bootstrap.kubeconfig")
	c.Kubeconfig = filepath.Join(dir, "node", "kubelet.kubeconfig")
	c.CertDir = filepath.Join(dir, "pki")
	c.NodeName = "fake-node"
	c.CABundle = filepath.Join(dir, "client-ca.crt")
	c.BootstrapWait = time.Minute
	return env{api: api, srv: srv, dir: dir, o: &c}
}

func TestAgentBootstrapThenRotate(t *testing.T) {
	e := setup(t, approve, testToken)
	e.api.pushback = 1 // the first create is pushed back: the agent retries as asked
	if err := run(e.o); err != nil {
		t.Fatal(err)
	}
	if ev := strings.Join(e.api.events, "\n"); !strings.Contains(ev, "pushback") || e.api.n != 1 {
		t.Fatalf("want one pushback then one CSR, got %d CSRs:\n%s", e.api.n, ev)
	}
	kc, err := kubeboot.ReadKubeconfig(e.o.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(e.o.CertDir, "kubelet-client-current.pem")
	// The CA: the cert dir's copy of the bootstrap kubeconfig's, named as a file (the agent keeps
	// it current as the cluster CA rotates).
	if kc.ClientCert.File != current || kc.ClientKey.File != current || kc.CA.File != filepath.Join(e.o.CertDir, "ca.crt") {
		t.Fatalf("%+v", kc)
	}
	if got, want := readFile(t, kc.CA.File), readFile(t, filepath.Join(e.dir, "boot", "serving-ca.crt")); !bytes.Equal(got, want) {
		t.Fatalf("ca.crt is not the bootstrap CA:\n%s", got)
	}
	if st, _ := os.Stat(e.o.Kubeconfig); st.Mode().Perm() != 0o600 {
		t.Fatal(st.Mode())
	}
	if _, err := os.Stat(filepath.Join(e.o.CertDir, "kubelet-client.key.tmp")); !os.IsNotExist(err) {
		t.Fatal("key cache left")
	}
	// Valid now: a second run sends nothing.
	before := len(e.api.events)
	if err := run(e.o); err != nil {
		t.Fatal(err)
	}
	if len(e.api.events) != before {
		t.Fatalf("requests for valid credentials: %v", e.api.events[before:])
	}
	first, _ := os.ReadFile(current)
	kcBytes, _ := os.ReadFile(e.o.Kubeconfig)

	// Rotation: client-certificate auth, generateName, new key; kubeconfig untouched.
	time.Sleep(1100 * time.Millisecond)
	e.o.RotateNowClient = true
	e.o.ExpirationSeconds = 600
	if err := run(e.o); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(current)
	if string(first) == string(second) {
		t.Fatal("not rotated")
	}
	if b, _ := os.ReadFile(e.o.Kubeconfig); string(b) != string(kcBytes) {
		t.Fatal("kubeconfig rewritten")
	}
	ev := strings.Join(e.api.events, "\n")
	if !strings.Contains(ev, "create node-csr-") || !strings.Contains(ev, "by system:bootstrap:abcdef") ||
		!strings.Contains(ev, "create csr-00002 by system:node:fake-node") {
		t.Fatal(ev)
	}
	certs, _ := parseCerts(second)
	if life := time.Until(certs[0].NotAfter); life > 601*time.Second || life < 500*time.Second {
		t.Fatal(life)
	}
}

// A watch that stays quiet past the agent's first progress time (30 s) gets progress lines while
// it stays open (OnStreamIdle, NextEvent): the same watch then sees the approval.
func TestQuietWatchReportsProgressAndStaysOpen(t *testing.T) {
	t.Parallel()
	e := setup(t, approve, testToken)
	e.api.late = 33 * time.Second
	var mu sync.Mutex
	var lines []kubeboot.Event
	rt, err := Start(context.Background(), Config{Agent: *e.o, Errors: io.Discard, OnEvent: func(ev kubeboot.Event) {
		mu.Lock()
		lines = append(lines, ev)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Wait(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	progress := -1
	for i, ev := range lines {
		if ev.Update && progress < 0 {
			progress = i
		}
	}
	if progress < 0 || !strings.Contains(lines[len(lines)-1].Line, "step=done") && !strings.Contains(lines[len(lines)-1].Line, "step=sleep") {
		t.Fatalf("no progress line during the quiet watch, or no end:\n%+v", lines)
	}
	if w := strings.Count(strings.Join(e.api.events, "\n"), "watch "); w != 1 {
		t.Fatalf("%d watches, want the one kept open:\n%s", w, strings.Join(e.api.events, "\n"))
	}
}

func noFiles(t *testing.T, e env) {
	t.Helper()
	for _, p := range []string{e.o.CertDir, e.o.Kubeconfig, filepath.Dir(e.o.Kubeconfig)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s exists after a failure", p)
		}
	}
}

func TestAgentDeniedLeavesNothing(t *testing.T) {
	e := setup(t, deny, testToken)
	err := run(e.o)
	var ke *kubeboot.Error
	if !errors.Is(err, kubeboot.ErrDenied) || !errors.As(err, &ke) || !strings.Contains(ke.Detail, "NotOnMyWatch") {
		t.Fatalf("%v", err)
	}
	noFiles(t, e)
}

func TestAgentUnauthorizedLeavesNothing(t *testing.T) {
	e := setup(t, approve, "abcdef.ffffffffffffffff")
	if err := run(e.o); !errors.Is(err, kubeboot.ErrUnauthorized) {
		t.Fatalf("%v", err)
	}
	noFiles(t, e)
}

func TestAgentTimeoutKeepsKeyCacheForItsCSR(t *testing.T) {
	e := setup(t, never, testToken)
	e.o.BootstrapWait = 2 * time.Second
	if err := run(e.o); !errors.Is(err, kubeboot.ErrTimeout) {
		t.Fatalf("%v", err)
	}
	cache := filepath.Join(e.o.CertDir, "kubelet-client.key.tmp")
	if _, err := os.Stat(cache); err != nil {
		t.Fatal("key cache removed although the CSR exists")
	}
	if _, err := os.Stat(e.o.Kubeconfig); !os.IsNotExist(err) {
		t.Fatal("kubeconfig written")
	}
	// A restart reuses the key, hence the same node-csr name: 409, then it is ours.
	k, _ := kubeboot.KeyFromPEM(mustRead(t, cache))
	name, _ := kubeboot.NodeCSRName(k, e.o.NodeName)
	e.api.mu.Lock()
	_, ok := e.api.csrs[name]
	e.api.mu.Unlock()
	if !ok {
		t.Fatalf("no CSR %s on the server", name)
	}
}

func parseCerts(p []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, p = pem.Decode(p)
		if blk == nil {
			return out, nil
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Before the first bootstrap completes there are no credentials: a clear ErrNotReady (or a wait),
// a TLS server refuses handshakes, and cancelling stops the runtime cleanly.
func TestNotReadyBeforeTheFirstCredentials(t *testing.T) {
	e := setup(t, never, testToken)
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, Config{Agent: *e.o, Errors: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Credentials(); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Credentials: %v", err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer wcancel()
	if _, err := rt.WaitCredentials(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitCredentials: %v", err)
	}
	if _, err := rt.TLSConfig().GetCertificate(nil); !errors.Is(err, ErrNotReady) {
		t.Fatalf("GetCertificate: %v", err)
	}
	if _, err := rt.TLSConfig().GetClientCertificate(nil); !errors.Is(err, ErrNotReady) {
		t.Fatalf("GetClientCertificate: %v", err)
	}
	cancel()
	if err := rt.Wait(); err != nil {
		t.Fatalf("stopped by its context: %v", err)
	}
	if st := rt.Status(); !st.Stopped || st.Ready {
		t.Fatalf("%+v", st)
	}
	if _, err := rt.WaitCredentials(context.Background()); !errors.Is(err, ErrNotReady) {
		t.Fatalf("WaitCredentials after the end: %v", err)
	}
}

// A bad configuration is the agent's typed error at Start, and nothing runs.
func TestStartRefusesABadConfiguration(t *testing.T) {
	e := setup(t, approve, testToken)
	c := *e.o
	c.Serving = &kubeboot.ServingConfig{DNSNames: []string{"n.example"}}
	if _, err := Start(context.Background(), Config{Agent: c}); !errors.Is(err, &kubeboot.Error{Code: kubeboot.CodeServingNeedsIP}) {
		t.Fatalf("DNS names only: %v", err)
	}
	if _, err := Start(context.Background(), Config{Agent: *e.o, MetricsTextfile: "metrics.txt"}); err == nil {
		t.Fatal("a textfile node_exporter does not read was accepted")
	}
	if _, err := Start(context.Background(), Config{Agent: *e.o, MetricsAddr: "localhost"}); err == nil {
		t.Fatal("a metrics address without a port was accepted")
	}
	noFiles(t, e)
}

// The credentials follow rotation: certificates that live 6 s are rotated by the daemon; each
// new pair is handed out the moment it is current (Changed closes), a TLS server on TLSConfig
// presents the newest serving certificate, and a client on it presents the current client
// certificate to the apiserver.
func TestCredentialsFollowRotation(t *testing.T) {
	e := setup(t, approve, testToken)
	e.api.life = 6 * time.Second
	c := *e.o
	c.Mode, c.MaxRotations = kubeboot.ModeRun, 4
	c.Serving = &kubeboot.ServingConfig{DNSNames: []string{"fake-node.example"}, IPAddresses: []string{"127.0.0.1"}}
	var events []kubeboot.Event
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := Start(ctx, Config{Agent: c, Errors: io.Discard, OnEvent: func(ev kubeboot.Event) { events = append(events, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := rt.WaitCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", rt.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(l)
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(e.api.caPEM)
	served := func() *big.Int { // the serving certificate a client checking against the CA gets
		conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	presented := func() string { // the client certificate the apiserver sees
		tr := &http.Transport{TLSClientConfig: rt.TLSConfig()}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(e.srv.URL + "/serial")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	clients, servings := map[string]bool{}, map[string]bool{}
	for {
		if cur.Serving != nil {
			if got := served(); got.Cmp(cur.Serving.Leaf.SerialNumber) != 0 {
				t.Fatalf("served %v, the newest is %v", got, cur.Serving.Leaf.SerialNumber)
			}
			servings[cur.Serving.Leaf.SerialNumber.String()] = true
		}
		if got := presented(); got != cur.Client.Leaf.SerialNumber.String() {
			t.Fatalf("presented %s, the current is %v", got, cur.Client.Leaf.SerialNumber)
		}
		clients[cur.Client.Leaf.SerialNumber.String()] = true
		select {
		case <-cur.Changed:
		case <-rt.Done():
		}
		next, err := rt.Credentials()
		if err != nil {
			t.Fatal(err)
		}
		if next == cur {
			break
		}
		if next.Client == cur.Client && next.Serving == cur.Serving && next.Cluster.Server == cur.Cluster.Server &&
			bytes.Equal(next.Cluster.CAPEM, cur.Cluster.CAPEM) {
			t.Fatal("a change announced that is none")
		}
		if (next.Client != cur.Client) == (next.Client.Leaf.SerialNumber.Cmp(cur.Client.Leaf.SerialNumber) == 0) {
			t.Fatal("the same client certificate as a new pair, or a new one as the same")
		}
		cur = next
	}
	if err := rt.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(clients) < 2 || len(servings) < 2 {
		t.Fatalf("%d client and %d serving certificates followed", len(clients), len(servings))
	}
	if st := rt.Status(); !st.Ready || st.Outcome == nil || !st.Outcome.Serving.Present {
		t.Fatalf("%+v", st)
	}
	ready := 0
	for _, ev := range events {
		if ev.Ready {
			ready++
		}
	}
	if ready == 0 || len(events) < 10 {
		t.Fatalf("%d events, %d ready", len(events), ready)
	}
}
