// Command kubeboot-go-agent is a node agent doing kubelet-style TLS bootstrapping (kubelet path
// B: `node-csr-<digest>` CSR authenticated with the bootstrap token) and client-certificate
// rotation, with the protocol in libkubeboot's sans-IO engine and the transport in net/http.
//
//	kubeboot-go-agent --bootstrap-kubeconfig F --kubeconfig F --cert-dir D --node-name N \
//	    [--ca-bundle F] [--once] [--wait 1h] [--expiration-seconds N] [--rotate-now-and-exit]
//
// Flow: if --kubeconfig already works (kubelet's isClientConfigStillValid: it loads, the client
// certificate and key match and no certificate has expired) nothing is bootstrapped; otherwise
// the bootstrap key (the current pair's, else `kubelet-client.key.tmp`) signs a client CSR that
// the engine creates and watches; the validated certificate goes into the kubelet's store
// (`<cert-dir>/kubelet-client-current.pem`) and the node kubeconfig is written (0600, atomic
// rename). Without --once the agent then sleeps until the rotation deadline and rotates (new key,
// `generateName: csr-`, authenticated with the current client certificate); the kubeconfig is
// never rewritten. On failure it exits 1 with no file changed (a key cache it generated is
// removed unless the CSR exists and the failure is a timeout, so a restart finds its CSR).
//
// One log line per step on stderr, prefixed `agent=go`.
package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"kubeboot.example/goagent/kubeboot"
)

const (
	storePrefix = "kubelet-client"
	userAgent   = "kubeboot-go-agent/0.1"
	maxBody     = 1 << 20
	reqTimeout  = 30 * time.Second
)

type options struct {
	bootstrapKubeconfig string
	kubeconfig          string
	certDir             string
	nodeName            string
	caBundle            string
	once                bool
	wait                time.Duration
	expirationSeconds   uint
	rotateNowAndExit    bool
	poll                bool
}

// logf prints one `agent=go k=v ...` line; values with spaces or quotes are quoted.
func logf(kv ...string) {
	var b strings.Builder
	b.WriteString("agent=go")
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if v == "" || strings.ContainsAny(v, " \t\"=\n") {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, " %s=%s", kv[i], v)
	}
	fmt.Fprintln(os.Stderr, b.String())
}

// stepError is a failure with a stable name for the log.
type stepError struct {
	name string
	err  error
}

func (e *stepError) Error() string { return e.name + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func fail(name string, err error) error { return &stepError{name: name, err: err} }

func logError(err error) {
	var ke *kubeboot.Error
	var se *stepError
	switch {
	case errors.As(err, &ke):
		detail := ke.Detail
		if detail == "" {
			detail = ke.Message
		}
		if errors.As(err, &se) {
			detail = se.name + ": " + detail
		}
		logf("error", ke.Name, "detail", detail)
	case errors.As(err, &se):
		logf("error", se.name, "detail", se.err.Error())
	default:
		logf("error", "agent", "detail", err.Error())
	}
}

func main() {
	var o options
	flag.StringVar(&o.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with the bootstrap token")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "node kubeconfig to use or write")
	flag.StringVar(&o.certDir, "cert-dir", "/var/lib/kubelet/pki", "directory of the kubelet-client-*.pem store")
	flag.StringVar(&o.nodeName, "node-name", "", "node name (default: the hostname, lower-cased)")
	flag.StringVar(&o.caBundle, "ca-bundle", "", "CA bundle the issued certificates must chain to (default: the kubeconfig's CA)")
	flag.BoolVar(&o.once, "once", false, "bootstrap (if needed) and exit; no rotation loop")
	flag.DurationVar(&o.wait, "wait", time.Hour, "how long to wait for the bootstrap certificate")
	flag.UintVar(&o.expirationSeconds, "expiration-seconds", 0, "spec.expirationSeconds of the CSRs (0: signer default; else >= 600)")
	flag.BoolVar(&o.rotateNowAndExit, "rotate-now-and-exit", false, "test: rotate once right away (after bootstrap) and exit")
	flag.BoolVar(&o.poll, "poll", false, "poll the CSR with GET instead of watching it")
	flag.Parse()
	if o.kubeconfig == "" || o.bootstrapKubeconfig == "" {
		fmt.Fprintln(os.Stderr, "usage: kubeboot-go-agent --bootstrap-kubeconfig F --kubeconfig F --cert-dir D --node-name N [--ca-bundle F] [--once] [--wait 1h] [--expiration-seconds N]")
		os.Exit(2)
	}
	if o.nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			logError(fail("node-name", err))
			os.Exit(1)
		}
		o.nodeName = strings.ToLower(strings.TrimSpace(h))
	}
	if o.expirationSeconds > 1<<31-1 {
		logError(fail("flags", errors.New("--expiration-seconds too large")))
		os.Exit(2)
	}
	if err := run(&o); err != nil {
		logError(err)
		os.Exit(1)
	}
}

func run(o *options) error {
	certDir, err := filepath.Abs(o.certDir)
	if err != nil {
		return fail("cert-dir", err)
	}
	o.certDir = certDir
	logf("step", "start", "node", o.nodeName, "kubeconfig", o.kubeconfig, "cert_dir", o.certDir, "kubeboot", kubeboot.Version())

	valid, why, err := kubeconfigStillValid(o.kubeconfig, time.Now())
	if err != nil {
		return fail("kubeconfig", err)
	}
	if valid {
		logf("step", "kubeconfig-valid", "path", o.kubeconfig)
	} else {
		logf("step", "bootstrap-needed", "reason", why)
		if err := bootstrap(o); err != nil {
			return err
		}
	}
	if o.once {
		logf("step", "exit", "reason", "once")
		return nil
	}
	return rotationLoop(o)
}

// kubeconfigStillValid is the kubelet's isClientConfigStillValid (spec §3.1): the file loads,
// its client certificate and key form a pair, and no certificate has expired. The server is not
// contacted and the CA is not checked.
func kubeconfigStillValid(path string, now time.Time) (bool, string, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, "kubeconfig does not exist", nil
		}
		return false, "", err
	}
	kc, err := kubeboot.ReadKubeconfig(path)
	if err != nil {
		return false, "unreadable kubeconfig: " + err.Error(), nil
	}
	certPEM, err := kc.ClientCert.Load()
	if err != nil || len(certPEM) == 0 {
		return false, "no client certificate", nil
	}
	keyPEM, err := kc.ClientKey.Load()
	if err != nil || len(keyPEM) == 0 {
		return false, "no client key", nil
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return false, "client certificate and key: " + err.Error(), nil
	}
	certs, err := parseCerts(certPEM)
	if err != nil || len(certs) == 0 {
		return false, "no parseable client certificate", nil
	}
	for _, c := range certs {
		if now.After(c.NotAfter) {
			return false, "client certificate expired at " + c.NotAfter.UTC().Format(time.RFC3339), nil
		}
	}
	return true, "", nil
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

// cluster is what the transport needs from a kubeconfig.
type cluster struct {
	server   string
	caPEM    []byte // nil: system roots
	caFile   string // absolute, when the kubeconfig names a file
	insecure bool
	sni      string
}

func clusterOf(kc *kubeboot.Kubeconfig) (*cluster, error) {
	c := &cluster{server: strings.TrimRight(kc.Server, "/"), insecure: kc.InsecureSkipTLSVerify, sni: kc.TLSServerName}
	ca, err := kc.CA.Load()
	if err != nil {
		return nil, err
	}
	c.caPEM = ca
	if kc.CA.Source == kubeboot.SourceFile {
		c.caFile = kc.CA.File
	}
	return c, nil
}

// httpClient trusts only the cluster's CA (or the system roots when the kubeconfig has none) and
// presents cert when given.
func (c *cluster) httpClient(cert *tls.Certificate) (*http.Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.sni, InsecureSkipVerify: c.insecure}
	if len(c.caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.caPEM) {
			return nil, errors.New("no certificate in the cluster CA bundle")
		}
		tc.RootCAs = pool
	}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: reqTimeout, Proxy: http.ProxyFromEnvironment}
	return &http.Client{Transport: tr}, nil
}

func randU64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

func issuedCA(o *options, c *cluster) ([]byte, error) {
	if o.caBundle != "" {
		b, err := os.ReadFile(o.caBundle)
		if err != nil {
			return nil, fail("ca-bundle", err)
		}
		return b, nil
	}
	if len(c.caPEM) == 0 {
		return nil, fail("ca-bundle", errors.New("the kubeconfig has no CA; pass --ca-bundle"))
	}
	return c.caPEM, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// bootstrap is kubelet path B (spec §3.3).
func bootstrap(o *options) (err error) {
	bkc, err := kubeboot.ReadKubeconfig(o.bootstrapKubeconfig)
	if err != nil {
		return fail("load-bootstrap-kubeconfig", err)
	}
	wire := bkc.Token
	if wire == "" && bkc.TokenFile != "" {
		b, err := os.ReadFile(bkc.TokenFile)
		if err != nil {
			return fail("load-bootstrap-kubeconfig", err)
		}
		wire = strings.TrimSpace(string(b))
	}
	token, err := kubeboot.ParseToken(wire)
	if err != nil {
		return fail("bootstrap-token", err)
	}
	defer token.Close()
	cl, err := clusterOf(bkc)
	if err != nil {
		return fail("load-bootstrap-kubeconfig", err)
	}
	ca, err := issuedCA(o, cl)
	if err != nil {
		return err
	}
	logf("step", "load-bootstrap-kubeconfig", "server", cl.server, "token_id", token.ID())

	// Remember what exists so that a failure leaves no file behind.
	dirExisted := exists(o.certDir)
	keyCache := filepath.Join(o.certDir, storePrefix+".key.tmp")
	cacheExisted := exists(keyCache)
	store, err := kubeboot.OpenStore(storePrefix, o.certDir)
	if err != nil {
		return fail("open-store", err)
	}
	defer store.Close()
	_, curErr := store.Current()
	key, err := store.BootstrapKey()
	if err != nil {
		return fail("bootstrap-key", err)
	}
	defer key.Close()
	generated := !cacheExisted && exists(keyCache)
	source := "key-cache"
	switch {
	case curErr == nil:
		source = "current-pair"
	case generated:
		source = "generated"
	}
	logf("step", "key", "source", source, "path", keyCache)

	csrCreated := false
	defer func() {
		if err == nil || !generated {
			return
		}
		if csrCreated && errors.Is(err, kubeboot.ErrTimeout) {
			logf("step", "keep-key-cache", "reason", "the CSR exists; a restart reuses it", "path", keyCache)
			return
		}
		if rmErr := os.Remove(keyCache); rmErr == nil {
			logf("step", "cleanup", "removed", keyCache)
		}
		if !dirExisted {
			_ = os.Remove(o.certDir) // only if empty
		}
	}()

	client, err := cl.httpClient(nil)
	if err != nil {
		return fail("tls-config", err)
	}
	cfg := kubeboot.BootstrapConfig(o.nodeName, token, ca)
	cfg.ExpirationSeconds = uint32(o.expirationSeconds)
	cfg.Wait = o.wait
	cfg.Poll = o.poll
	eng, err := kubeboot.NewEngine(cfg, key, time.Now(), randU64())
	if err != nil {
		return fail("engine", err)
	}
	defer eng.Close()
	issued, err := drive(eng, client, cl.server, &csrCreated)
	if err != nil {
		return err
	}
	logf("step", "issued", "csr", issued.CSRName, "not_before", issued.NotBefore.Format(time.RFC3339),
		"not_after", issued.NotAfter.Format(time.RFC3339), "rotation_deadline", issued.RotationDeadline.Format(time.RFC3339))

	keyPEM, err := key.PEM()
	if err != nil {
		return fail("key", err)
	}
	if err := store.Update(time.Now(), issued.CertPEM, keyPEM); err != nil {
		return fail("store-update", err)
	}
	current, err := store.CurrentPath()
	if err != nil {
		return fail("store", err)
	}
	logf("step", "stored", "path", current)
	var caData []byte
	if cl.caFile == "" {
		caData = cl.caPEM
	}
	y, err := kubeboot.NodeKubeconfig(cl.server, cl.caFile, caData, cl.insecure, o.certDir)
	if err != nil {
		return fail("write-kubeconfig", err)
	}
	if err := writeFileAtomic(o.kubeconfig, y, 0o600); err != nil {
		return fail("write-kubeconfig", err)
	}
	logf("step", "kubeconfig-written", "path", o.kubeconfig)
	if err := store.RemoveKeyCache(); err != nil {
		logf("step", "remove-key-cache", "warning", err.Error())
	}
	generated = false
	return nil
}

// writeFileAtomic writes data to a temporary file next to path (mode perm), fsyncs it and renames
// it over path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// drive runs the engine over net/http until it is done or has failed. created is set once the
// apiserver has the CSR (201 or 409 on create).
func drive(eng *kubeboot.Engine, client *http.Client, server string, created *bool) (*kubeboot.Issued, error) {
	announced := ""
	var next *kubeboot.Action
	for {
		var a kubeboot.Action
		if next != nil {
			a, next = *next, nil
		} else {
			a = eng.Poll(time.Now())
		}
		switch a.Kind {
		case kubeboot.ActionSend:
			req := a.Request
			switch req.Kind {
			case kubeboot.RequestCreate:
				logf("step", "create-csr", "csr", csrNameOr(eng.CSRName(), "csr-<generated>"))
				status := doRequest(eng, client, server, req)
				if status == http.StatusCreated || status == http.StatusConflict {
					*created = true
				}
				if status == http.StatusConflict {
					logf("step", "csr-exists", "csr", eng.CSRName(), "action", "checking it is ours")
				}
			default:
				if name := eng.CSRName(); name != announced {
					announced = name
					logf("step", "wait-approval", "csr", name, "hint", "kubectl certificate approve "+name)
				}
				if req.Kind == kubeboot.RequestWatch {
					next = doWatch(eng, client, server, req)
				} else {
					doRequest(eng, client, server, req)
				}
			}
		case kubeboot.ActionAwait:
			// The transport here is synchronous: an outstanding request means it was lost.
			eng.OnTransportError(time.Now())
		case kubeboot.ActionWait:
			d := time.Until(a.Until)
			if d > 0 {
				if d >= time.Second {
					logf("step", "backoff", "until", a.Until.Format(time.RFC3339))
				}
				time.Sleep(d)
			}
		case kubeboot.ActionDone:
			return a.Issued, nil
		case kubeboot.ActionFailed:
			return nil, a.Err
		default:
			return nil, fail("engine", fmt.Errorf("unknown action %d", a.Kind))
		}
	}
}

func csrNameOr(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

func newHTTPRequest(ctx context.Context, server string, r *kubeboot.Request) (*http.Request, error) {
	var body io.Reader
	if len(r.Body) > 0 {
		body = strings.NewReader(string(r.Body))
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, server+r.Path, body)
	if err != nil {
		return nil, err
	}
	if r.Authorization != "" {
		req.Header.Set("Authorization", r.Authorization)
	}
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	if r.Accept != "" {
		req.Header.Set("Accept", r.Accept)
	}
	req.Header.Set("User-Agent", userAgent)
	return req, nil
}

// doRequest sends a create/get request and feeds the whole response; returns the status (0 on a
// transport error).
func doRequest(eng *kubeboot.Engine, client *http.Client, server string, r *kubeboot.Request) int {
	ctx, cancel := context.WithTimeout(context.Background(), reqTimeout)
	defer cancel()
	req, err := newHTTPRequest(ctx, server, r)
	if err != nil {
		logf("step", "transport-error", "request", r.Kind.String(), "detail", err.Error())
		eng.OnTransportError(time.Now())
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		logf("step", "transport-error", "request", r.Kind.String(), "detail", err.Error())
		eng.OnTransportError(time.Now())
		return 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		logf("step", "transport-error", "request", r.Kind.String(), "detail", err.Error())
		eng.OnTransportError(time.Now())
		return 0
	}
	logStatus(r.Kind.String(), resp.StatusCode)
	_ = eng.OnResponse(time.Now(), resp.StatusCode, body) // a failure is reported by the next Poll
	return resp.StatusCode
}

// logStatus names the answers the engine may retry, as the Rust CLI does: a 401 (a restarted
// apiserver can refuse a valid bootstrap token for a moment; retried a few times while waiting,
// else final), a 429 or a 5xx (backed off).
func logStatus(request string, status int) {
	switch {
	case status == http.StatusUnauthorized:
		logf("step", "unauthorized", "request", request, "status", "401")
	case status == http.StatusTooManyRequests || (status >= 500 && status <= 599):
		logf("step", "server-error", "request", request, "status", strconv.Itoa(status))
	}
}

// doWatch streams a watch response into the engine chunk by chunk. It returns the next action
// when the engine settled mid-stream (done, failed, or another request), else nil.
func doWatch(eng *kubeboot.Engine, client *http.Client, server string, r *kubeboot.Request) *kubeboot.Action {
	limit := time.Now().Add(kubeboot.WatchTimeout + 30*time.Second)
	if d := eng.Deadline(); d.Before(limit) {
		limit = d.Add(time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), limit)
	defer cancel()
	req, err := newHTTPRequest(ctx, server, r)
	if err != nil {
		eng.OnTransportError(time.Now())
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		logf("step", "transport-error", "request", "watch", "detail", err.Error())
		eng.OnTransportError(time.Now())
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if err != nil {
			eng.OnTransportError(time.Now())
			return nil
		}
		logStatus("watch", resp.StatusCode)
		_ = eng.OnResponse(time.Now(), resp.StatusCode, body)
		return nil
	}
	buf := make([]byte, 4096)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			now := time.Now()
			_ = eng.OnStreamData(now, buf[:n])
			if a := eng.Poll(now); a.Kind != kubeboot.ActionAwait {
				return &a
			}
		}
		if rerr == io.EOF {
			_ = eng.OnStreamEnd(time.Now())
			return nil
		}
		if rerr != nil {
			if ctx.Err() == nil {
				logf("step", "transport-error", "request", "watch", "detail", rerr.Error())
			}
			eng.OnTransportError(time.Now())
			return nil
		}
	}
}

// rotationLoop sleeps until the current certificate's rotation deadline and rotates, forever
// (or once with --rotate-now-and-exit).
func rotationLoop(o *options) error {
	store, err := kubeboot.OpenStore(storePrefix, o.certDir)
	if err != nil {
		return fail("open-store", err)
	}
	defer store.Close()
	jitter := uint32(randU64())
	var attempt uint32
	for {
		pair, err := store.Current()
		if err != nil {
			return fail("store-current", err)
		}
		certs, err := parseCerts(pair)
		if err != nil || len(certs) == 0 {
			return fail("store-current", fmt.Errorf("no parseable certificate in the current pair: %v", err))
		}
		leaf := certs[0]
		deadline := kubeboot.RotationDeadline(leaf.NotBefore, leaf.NotAfter, jitter)
		if !o.rotateNowAndExit && attempt == 0 {
			logf("step", "rotation-scheduled", "not_after", leaf.NotAfter.UTC().Format(time.RFC3339), "deadline", deadline.Format(time.RFC3339))
			if d := time.Until(deadline); d > 0 {
				time.Sleep(d)
			}
		}
		err = rotateOnce(o, store, pair)
		if err == nil {
			attempt = 0
			jitter = uint32(randU64())
			if o.rotateNowAndExit {
				logf("step", "exit", "reason", "rotate-now-and-exit")
				return nil
			}
			continue
		}
		if o.rotateNowAndExit {
			return err
		}
		logError(err)
		d := kubeboot.BackoffDelay(attempt, uint32(randU64()))
		attempt++
		logf("step", "rotation-retry", "attempt", strconv.Itoa(int(attempt)), "in", d.String())
		time.Sleep(d)
	}
}

// rotateOnce requests a new certificate for a new key, authenticated with the current pair.
func rotateOnce(o *options, store *kubeboot.Store, pair []byte) error {
	kc, err := kubeboot.ReadKubeconfig(o.kubeconfig)
	if err != nil {
		return fail("load-kubeconfig", err)
	}
	cl, err := clusterOf(kc)
	if err != nil {
		return fail("load-kubeconfig", err)
	}
	ca, err := issuedCA(o, cl)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(pair, pair)
	if err != nil {
		return fail("client-certificate", err)
	}
	client, err := cl.httpClient(&cert)
	if err != nil {
		return fail("tls-config", err)
	}
	key, err := kubeboot.GenerateKey()
	if err != nil {
		return fail("generate-key", err)
	}
	defer key.Close()
	logf("step", "rotate", "server", cl.server)
	cfg := kubeboot.RotationConfig(o.nodeName, ca)
	cfg.ExpirationSeconds = uint32(o.expirationSeconds)
	cfg.Poll = o.poll
	eng, err := kubeboot.NewEngine(cfg, key, time.Now(), randU64())
	if err != nil {
		return fail("engine", err)
	}
	defer eng.Close()
	var created bool
	issued, err := drive(eng, client, cl.server, &created)
	if err != nil {
		return err
	}
	logf("step", "issued", "csr", issued.CSRName, "not_before", issued.NotBefore.Format(time.RFC3339),
		"not_after", issued.NotAfter.Format(time.RFC3339), "rotation_deadline", issued.RotationDeadline.Format(time.RFC3339))
	keyPEM, err := key.PEM()
	if err != nil {
		return fail("key", err)
	}
	if err := store.Update(time.Now(), issued.CertPEM, keyPEM); err != nil {
		return fail("store-update", err)
	}
	current, _ := store.CurrentPath()
	logf("step", "rotated", "path", current, "not_after", issued.NotAfter.Format(time.RFC3339))
	return nil
}
