// Command kubeboot-go-agent is a kubelet-style node agent in Go. Every decision (are the
// credentials usable, bootstrap, rotate, fall back, which files to write in which order) is
// libkubeboot's agent; this program only does I/O: HTTPS with net/http, sleeping and printing.
// Files and entropy go through libkubeboot's own crash-safe file store and the OS RNG.
//
//	kubeboot-go-agent --kubeconfig F [--bootstrap-kubeconfig F] [--cert-dir D] [--node-name N]
//	    [--ca-bundle F] [--once] [--rotations N] [--rotate-now] [--rotate-now-serving] [--wait 1h]
//	    [--rotation-wait 15m] [--expiration-seconds N] [--poll] [--serving --dns D --ip IP]
//	    [--discovery-endpoint URL --discovery-token T --discovery-token-ca-cert-hash H]
//	    [--metrics-bind-address IP:PORT] [--metrics-textfile F.prom] [--log-format text|json]
//	    [--ca-refresh-interval 10m] [--key pkcs11:token=T?module-path=M&pin-source=F | --key tpm: [--tcti T]]
//
// Without --once it runs as a daemon. The agent's `agent=go step=...` lines go to stdout; on
// failure it exits 1 with the typed reason. The kubelet's certificate metrics (libkubeboot's
// text, rendered when scraped) are served at http://IP:PORT/metrics and/or written to a
// node_exporter textfile.
//
// With --key every client key is made in a device it never leaves (a PKCS#11 token through
// crypto11, a TPM 2.0 through go-tpm: kubeboot.dev/go/hwkey), the CSR is signed there, and the
// TLS handshake presents the key as a crypto.Signer (tls.Certificate{PrivateKey: signer}); the
// cert dir and the kubeconfig hold the key's reference, never the key.
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
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"kubeboot.dev/go/hwkey"
	"kubeboot.dev/go/kubeboot"
)

const maxBody = 1 << 20

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	kubeboot.AgentConfig
	once           bool
	serving        bool
	dns, ips, pins list
	endpoint, tok  string
	unsafeSkip     bool
	metricsAddr    string
	textfile       string
	key            string
	devices        hwkey.Devices
}

func main() {
	var o options
	c := &o.AgentConfig
	flag.StringVar(&c.Kubeconfig, "kubeconfig", "", "node kubeconfig to use or write")
	flag.StringVar(&c.BootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with the bootstrap token")
	flag.StringVar(&c.CertDir, "cert-dir", "/var/lib/kubelet/pki", "the certificate directory")
	flag.StringVar(&c.NodeName, "node-name", "", "node name (default: the current certificate's)")
	flag.StringVar(&c.CABundle, "ca-bundle", "", "CA bundle issued certificates must chain to")
	flag.BoolVar(&o.once, "once", false, "make the credentials usable, then exit (default: run as a daemon)")
	flag.Func("rotations", "daemon: exit after N rotations", func(s string) error {
		_, err := fmt.Sscan(s, &c.MaxRotations)
		return err
	})
	flag.BoolVar(&c.RotateNowClient, "rotate-now", false, "rotate the client certificate now")
	flag.BoolVar(&c.RotateNowServing, "rotate-now-serving", false, "rotate the serving certificate now")
	flag.DurationVar(&c.BootstrapWait, "wait", time.Hour, "how long a bootstrap waits for its certificate")
	flag.DurationVar(&c.RotationWait, "rotation-wait", 15*time.Minute, "how long a rotation waits")
	flag.Func("expiration-seconds", "spec.expirationSeconds (>= 600)", func(s string) error {
		_, err := fmt.Sscan(s, &c.ExpirationSeconds)
		return err
	})
	flag.BoolVar(&c.Poll, "poll", false, "poll CSRs instead of watching them")
	flag.BoolVar(&o.serving, "serving", false, "also request and keep a kubelet serving certificate")
	flag.Var(&o.dns, "dns", "serving DNS name (repeatable)")
	flag.Var(&o.ips, "ip", "serving IP address (repeatable)")
	flag.StringVar(&o.endpoint, "discovery-endpoint", "", "kubeadm-style discovery: https://host:port")
	flag.StringVar(&o.tok, "discovery-token", "", "discovery: the bootstrap token")
	flag.Var(&o.pins, "discovery-token-ca-cert-hash", "discovery: sha256:<hex> CA pin (repeatable)")
	flag.BoolVar(&o.unsafeSkip, "discovery-token-unsafe-skip-ca-verification", false, "discovery without a pin")
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", "", "serve the kubelet's certificate metrics at http://IP:PORT/metrics")
	flag.StringVar(&o.textfile, "metrics-textfile", "", "also write them for node_exporter's textfile collector (a .prom file)")
	flag.Func("log-format", "text (agent=go step=... key=value) or json (one object per line)", func(s string) error {
		switch s {
		case "text":
			c.LogFormat = kubeboot.LogText
		case "json":
			c.LogFormat = kubeboot.LogJSON
		default:
			return errors.New("text or json")
		}
		return nil
	})
	flag.Func("ca-refresh-interval", "daemon: how often to re-read the cluster's CA into <cert-dir>/ca.crt (0: never)", func(s string) error {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return err
		case d < 0:
			return errors.New("must not be negative")
		case d == 0:
			c.CARefresh = -1 // never (0 in AgentConfig is the default)
		default:
			c.CARefresh = d
		}
		return nil
	})
	flag.StringVar(&o.key, "key", "", "make every client key in a device: pkcs11:token=T?module-path=M&pin-source=F, or tpm:")
	flag.StringVar(&o.devices.TCTI, "tcti", "", "the TPM's TCTI (swtpm:host=H,port=P, device:/dev/tpmrm0; default TPM2TOOLS_TCTI)")
	flag.Parse()
	if c.Kubeconfig == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(&o); err != nil {
		fmt.Fprintln(os.Stderr, "kubeboot-go-agent:", err)
		os.Exit(1)
	}
}

// run runs the agent to its end.
func run(o *options) error {
	c := o.AgentConfig
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	c.FrontEnd, c.WorkingDir = "go", wd
	switch {
	case o.key == "":
	case o.key == "tpm:":
		c.KeyDevice = "tpm"
	case strings.HasPrefix(o.key, "tpm:"):
		return fmt.Errorf("--key %s: the agent keeps its TPM keys in the cert dir; give --key tpm:", o.key)
	case strings.HasPrefix(o.key, "pkcs11:"):
		c.KeyDevice = o.key // (the agent checks it)
	default:
		return fmt.Errorf("--key %s: the agent makes its own keys; give a device (pkcs11:... or tpm:) or no --key", o.key)
	}
	c.Mode = kubeboot.ModeRun
	if o.once {
		c.Mode = kubeboot.ModeOnce
	}
	if o.serving {
		c.Serving = &kubeboot.ServingConfig{DNSNames: o.dns, IPAddresses: o.ips}
	}
	if o.endpoint != "" {
		t, err := kubeboot.ParseToken(o.tok)
		if err != nil {
			return fmt.Errorf("--discovery-token: %w", err)
		}
		defer t.Close()
		c.Discovery = &kubeboot.DiscoveryConfig{Endpoint: o.endpoint, Token: t, Pins: o.pins,
			UnsafeSkipCAVerification: o.unsafeSkip}
	}
	_, offset := time.Now().Zone()
	c.UTCOffset = offset
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return err
	}
	c.Seed = binary.LittleEndian.Uint64(seed[:])
	if o.textfile != "" {
		if err := kubeboot.CheckMetricsTextfile(o.textfile); err != nil {
			return fmt.Errorf("--metrics-textfile %s: node_exporter reads only *.prom files", o.textfile)
		}
	}
	agent, err := kubeboot.NewAgent(c)
	if err != nil {
		return err
	}
	defer agent.Close()
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-bind-address %s: want IP:PORT", o.metricsAddr)
		}
		l, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-bind-address: %w", err)
		}
		go serveMetrics(l, agent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return drive(ctx, agent, &textfile{path: o.textfile}, hup, &o.devices)
}

// notifier is systemd's notification socket ($NOTIFY_SOCKET, sd_notify(3)): READY=1 at the
// agent's first ready event, STATUS= the latest line, STOPPING=1. Without it nothing is sent.
type notifier struct {
	addr  *net.UnixAddr
	ready bool
}

func newNotifier() *notifier {
	p := os.Getenv("NOTIFY_SOCKET")
	if p == "" {
		return &notifier{}
	}
	// (Go's net package maps a leading '@' to the abstract namespace itself)
	return &notifier{addr: &net.UnixAddr{Name: p, Net: "unixgram"}}
}

func (n *notifier) send(msg string) {
	if n.addr == nil {
		return
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err == nil {
		_, err = c.Write([]byte(msg))
		c.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeboot-go-agent: NOTIFY_SOCKET:", err)
	}
}

func (n *notifier) event(line string, ready bool) {
	if ready && !n.ready {
		n.ready = true
		n.send("READY=1\nSTATUS=" + line)
		return
	}
	n.send("STATUS=" + line)
}

// serveMetrics answers GET /metrics with the agent's text rendered at that moment (the agent
// is safe to ask from this goroutine), and /healthz.
func serveMetrics(l net.Listener, agent *kubeboot.Agent) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		b, err := agent.MetricsText(time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	_ = srv.Serve(l)
}

// textfile is the node_exporter textfile: rewritten after every event (each change of the
// metrics comes with one) and at least every MetricsTextfileRefresh (the TTLs age).
type textfile struct {
	path    string
	written time.Time
}

func (t *textfile) due(now time.Time) bool {
	return t.path != "" && now.Sub(t.written) >= kubeboot.MetricsTextfileRefresh
}

// write writes it atomically (a temporary file beside it, renamed), mode 0644: the collector
// reads whole files, often as another user. A failure is reported, never fatal.
func (t *textfile) write(agent *kubeboot.Agent, now time.Time) {
	if t.path == "" {
		return
	}
	t.written = now
	b, err := agent.MetricsText(now)
	if err == nil {
		tmp := filepath.Join(filepath.Dir(t.path), fmt.Sprintf(".%s.%d.tmp", filepath.Base(t.path), os.Getpid()))
		err = writeSynced(tmp, b)
		if err == nil {
			err = os.Rename(tmp, t.path)
		}
		if err != nil {
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeboot-go-agent: --metrics-textfile:", err)
	}
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// printLine prints a line; on a terminal a progress update replaces the rows the line before took.
func printLine(line string, update bool, rows *int) {
	var ws struct{ Row, Col, X, Y uint16 }
	cols := 0
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, 1, syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))); e == 0 {
		cols = int(ws.Col)
	}
	if cols > 0 && update && *rows > 0 {
		fmt.Printf("\x1b[%dF\x1b[J", *rows)
	}
	fmt.Println(line)
	*rows = 0
	if cols > 0 {
		*rows = (len(line) + cols - 1) / cols
	}
}

func drive(ctx context.Context, agent *kubeboot.Agent, tf *textfile, hup <-chan os.Signal, keys kubeboot.KeyStore) error {
	t := transport{keys: keys}
	rows := 0
	notify := newNotifier()
	for {
		now := time.Now()
		_, offset := now.Zone()
		agent.SetUTCOffset(offset)
		select {
		case <-hup:
			agent.Wake()
		default:
		}
		a := agent.Poll(now)
		// SIGTERM/SIGINT: stop before a request or a sleep (never between a write and what
		// completes it); a request under way is cancelled (it writes nothing).
		if ctx.Err() != nil && (a.Kind == kubeboot.AgentSleep || a.Kind == kubeboot.AgentHTTP) {
			notify.send("STOPPING=1")
			return nil
		}
		if a.Kind == kubeboot.AgentEvent || a.Kind == kubeboot.AgentDone || a.Kind == kubeboot.AgentFailed || tf.due(now) {
			tf.write(agent, now)
		}
		switch a.Kind {
		case kubeboot.AgentRead, kubeboot.AgentFile:
			if msg, err := agent.PerformFileAction(now); err != nil {
				return err
			} else if msg != "" {
				fmt.Fprintln(os.Stderr, "kubeboot-go-agent:", msg)
			}
		case kubeboot.AgentEntropy:
			if err := agent.PerformEntropy(); err != nil {
				return err
			}
		case kubeboot.AgentKey:
			if err := agent.PerformKeyAction(now, a.Key, keys); err != nil {
				fmt.Fprintln(os.Stderr, "kubeboot-go-agent:", err)
			}
		case kubeboot.AgentHTTP:
			t.do(ctx, agent, a.HTTP)
		case kubeboot.AgentSleep:
			d := time.Until(a.Until)
			if tf.path != "" && d > kubeboot.MetricsTextfileRefresh {
				d = kubeboot.MetricsTextfileRefresh // then poll again: the agent says sleep on
			}
			select {
			case <-ctx.Done():
				notify.send("STOPPING=1")
				return nil
			case <-hup:
				agent.Wake()
			case <-time.After(d):
			}
		case kubeboot.AgentEvent:
			printLine(a.Line, a.LineUpdate, &rows)
			notify.event(a.Line, a.LineReady)
		case kubeboot.AgentDone:
			return nil
		case kubeboot.AgentFailed:
			printLine(a.Line, false, &rows)
			notify.event(a.Line, false)
			return a.Err
		default:
			return errors.New("unknown agent action")
		}
	}
}

// transport is net/http with one client per connection id; a client key held by a device is
// presented through its crypto.Signer.
type transport struct {
	id     uint32
	client *http.Client
	err    error
	keys   kubeboot.KeyStore
	// signer: the device's key of the current client, closed with it.
	signer io.Closer
}

func (t *transport) clientFor(c kubeboot.Connection) (*http.Client, error) {
	if t.client != nil && t.id == c.ID {
		return t.client, t.err
	}
	t.id, t.client, t.err = c.ID, nil, nil
	if t.signer != nil {
		_ = t.signer.Close()
		t.signer = nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.Insecure}
	if !c.Insecure {
		tc.RootCAs = x509.NewCertPool() // exactly the agent's CAs, never the system's
		if !tc.RootCAs.AppendCertsFromPEM(c.CAPEM) {
			t.err = errors.New("no certificate in the CA bundle")
		}
	}
	if len(c.ClientCertPEM) > 0 && c.ClientKeyHolder != kubeboot.HolderSoftware {
		pair, err := t.deviceCertificate(c)
		if err != nil {
			t.err = fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	} else if len(c.ClientCertPEM) > 0 {
		pair, err := tls.X509KeyPair(c.ClientCertPEM, c.ClientKeyPEM)
		if err != nil {
			t.err = fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	t.client = &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second}}
	return t.client, t.err
}

// deviceCertificate is the certificate chain with the device's key as its crypto.Signer: the
// handshake's CertificateVerify is signed in the device.
func (t *transport) deviceCertificate(c kubeboot.Connection) (tls.Certificate, error) {
	var pair tls.Certificate
	for rest := c.ClientCertPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			pair.Certificate = append(pair.Certificate, b.Bytes)
		}
	}
	if len(pair.Certificate) == 0 {
		return pair, errors.New("no certificate")
	}
	signer, err := t.keys.Open(c.ClientKeyPEM)
	pair.PrivateKey = signer
	if closer, ok := signer.(io.Closer); ok {
		t.signer = closer
	}
	return pair, err
}

func (t *transport) do(stop context.Context, agent *kubeboot.Agent, r *kubeboot.AgentHTTPRequest) {
	client, err := t.clientFor(r.Conn)
	if err != nil {
		agent.OnTransportError(time.Now(), err.Error())
		return
	}
	ctx, cancel := context.WithDeadline(stop, r.GiveUpAt.Add(time.Second))
	defer cancel()
	var body io.Reader
	if len(r.Body) > 0 {
		body = strings.NewReader(string(r.Body))
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.Conn.Server+r.Path, body)
	if err != nil {
		agent.OnTransportError(time.Now(), err.Error())
		return
	}
	for k, v := range map[string]string{"Authorization": r.Authorization, "Content-Type": r.ContentType,
		"Accept": r.Accept, "User-Agent": r.UserAgent} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		agent.OnTransportError(time.Now(), err.Error())
		return
	}
	defer resp.Body.Close()
	if r.Kind == kubeboot.RequestCSRWatch && resp.StatusCode == http.StatusOK {
		buf := make([]byte, 8192)
		for {
			n, rerr := resp.Body.Read(buf)
			if n > 0 && !agent.OnStreamData(time.Now(), buf[:n]) {
				return // the agent needs no more of the stream
			}
			if rerr != nil {
				agent.OnStreamEnd(time.Now()) // ended or broke
				return
			}
		}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		agent.OnTransportError(time.Now(), err.Error())
		return
	}
	agent.OnHTTPResponseWithRetryAfter(time.Now(), resp.StatusCode, resp.Header.Get("Retry-After"), b)
}
