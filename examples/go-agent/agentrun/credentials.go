package agentrun

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"kubeboot.dev/go/kubeboot"
)

// ErrNotReady: the agent has not made the node's credentials usable yet (the first bootstrap
// or check has not completed). Nothing stale or half-written is ever handed out instead.
var ErrNotReady = errors.New("agentrun: the node's credentials are not ready yet")

// ErrNoServing: there is no serving certificate (none configured, or none issued yet).
var ErrNoServing = errors.New("agentrun: no serving certificate")

// Credentials are the node's credentials at one moment: what the agent made current. They never
// change; newer ones replace them (Changed is closed then).
type Credentials struct {
	// Client is the client certificate and its key (Leaf set; a device's key is its
	// crypto.Signer).
	Client *tls.Certificate
	// Serving is the serving certificate; nil when there is none.
	Serving *tls.Certificate
	// Cluster is the apiserver the node kubeconfig names.
	Cluster Cluster
	// Changed is closed when newer credentials replace these (a rotation, a new CA).
	Changed <-chan struct{}
}

// Cluster is where the node's apiserver is and how to trust it (from the node kubeconfig).
type Cluster struct {
	// Server is the URL, https://host:port.
	Server string
	// ServerName: verify the server for this name instead of the URL's host; empty: the URL's.
	ServerName string
	// CAPEM is the CA bundle the node trusts for the apiserver.
	CAPEM []byte
	// Insecure: do not verify the server (the kubeconfig says so).
	Insecure bool
}

// RootCAs is CAPEM as a pool (exactly these CAs, never the system's).
func (c Cluster) RootCAs() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(c.CAPEM)
	return p
}

func (c Cluster) equal(o Cluster) bool {
	return c.Server == o.Server && c.ServerName == o.ServerName && c.Insecure == o.Insecure && bytes.Equal(c.CAPEM, o.CAPEM)
}

// credentials follows the agent's file steps: the pairs it reads and judges, and each pair it
// makes current, loaded the moment the swap succeeded.
type credentials struct {
	keys       kubeboot.KeyStore
	kubeconfig string

	mu                                 sync.Mutex
	clientCert, clientKey, servingPath string
	client, serving                    *tls.Certificate
	cluster                            Cluster
	isReady                            bool
	cur                                *Credentials
	changed                            chan struct{}
	readyCh                            chan struct{}
}

func newCredentials(keys kubeboot.KeyStore, kubeconfig string) *credentials {
	return &credentials{keys: keys, kubeconfig: kubeconfig, readyCh: make(chan struct{})}
}

// observe follows a READ or FILE action the runtime has just performed (ok: it succeeded).
func (c *credentials) observe(a kubeboot.Action, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := a.Read; r != nil {
		switch r.Role {
		case kubeboot.RoleClientCertificate:
			c.clientCert, c.clientKey = r.Path, r.Path
		case kubeboot.RoleClientKey:
			c.clientKey = r.Path
		case kubeboot.RoleServingPair:
			c.servingPath = r.Path
		}
		return
	}
	f := a.File
	if f == nil || !ok {
		return
	}
	switch f.Step {
	case kubeboot.StepSwapCurrent:
		// The pair is current now: take it at once (a rotation is followed without delay).
		if f.Path == c.servingPath {
			if p, err := loadPair(c.keys, f.Path, f.Path); err == nil {
				c.serving = newer(c.serving, p)
			}
		} else if p, err := loadPair(c.keys, f.Path, f.Path); err == nil {
			c.clientCert, c.clientKey, c.client = f.Path, f.Path, newer(c.client, p)
		}
	case kubeboot.StepWriteCA, kubeboot.StepWriteKubeconfig:
		if cl, err := readCluster(c.kubeconfig); err == nil {
			c.cluster = cl
		}
	default:
		return
	}
	c.publish()
}

// ready: the agent says the credentials are usable. Load what it judged (the metrics say which
// certificates it found usable, and their notAfter must be the files'), then publish.
func (c *credentials) ready(agent *kubeboot.Agent) error {
	m, err := agent.Metrics()
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	if m.HasClient {
		p, err := c.loadClient()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("client %s: %w", c.clientCert, err))
		case !p.Leaf.NotAfter.Equal(m.ClientNotAfter):
			errs = append(errs, fmt.Errorf("client %s changed since the agent read it", c.clientCert))
		default:
			c.client = newer(c.client, p)
		}
	}
	if m.HasServing && c.servingPath != "" {
		p, err := loadPair(c.keys, c.servingPath, c.servingPath)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("serving %s: %w", c.servingPath, err))
		case !p.Leaf.NotAfter.Equal(m.ServingNotAfter):
			errs = append(errs, fmt.Errorf("serving %s changed since the agent read it", c.servingPath))
		default:
			c.serving = newer(c.serving, p)
		}
	}
	cl, err := readCluster(c.kubeconfig)
	if err != nil {
		errs = append(errs, fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err))
	} else {
		c.cluster = cl
	}
	if c.client != nil && c.cluster.Server != "" && !c.isReady {
		c.isReady = true
		close(c.readyCh)
	}
	c.publish()
	return errors.Join(errs...)
}

// newer is loaded unless it is the certificate old already is (then old: the same pair keeps
// its identity, and nothing is announced as changed).
func newer(old, loaded *tls.Certificate) *tls.Certificate {
	if old != nil && bytes.Equal(old.Leaf.Raw, loaded.Leaf.Raw) {
		return old
	}
	return loaded
}

// loadClient loads the client pair the agent read: its files, or the node kubeconfig's inline
// data.
func (c *credentials) loadClient() (*tls.Certificate, error) {
	if c.clientCert != "" {
		return loadPair(c.keys, c.clientCert, c.clientKey)
	}
	kc, err := kubeboot.ReadKubeconfig(c.kubeconfig)
	if err != nil {
		return nil, err
	}
	if kc.ClientCert.Source != kubeboot.SourceData || kc.ClientKey.Source != kubeboot.SourceData {
		return nil, errors.New("the kubeconfig names no client certificate")
	}
	p, err := tls.X509KeyPair(kc.ClientCert.Data, kc.ClientKey.Data)
	return &p, err
}

// publish makes the loaded credentials the current ones, once ready, if anything changed.
func (c *credentials) publish() {
	if !c.isReady {
		return
	}
	if o := c.cur; o != nil && o.Client == c.client && o.Serving == c.serving && o.Cluster.equal(c.cluster) {
		return
	}
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
	c.cur = &Credentials{Client: c.client, Serving: c.serving, Cluster: c.cluster, Changed: c.changed}
}

func (c *credentials) get() (*Credentials, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return nil, ErrNotReady
	}
	return c.cur, nil
}

// loadPair loads a certificate chain and its key (a software key's PEM, or the reference of a
// key a device holds) from the files the agent names; the leaf is parsed.
func loadPair(keys kubeboot.KeyStore, certPath, keyPath string) (*tls.Certificate, error) {
	if certPath == "" {
		return nil, errors.New("no certificate file")
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM := certPEM
	if keyPath != certPath {
		if keyPEM, err = os.ReadFile(keyPath); err != nil {
			return nil, err
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil && keys != nil {
		// A device's key: its reference is the key file's block that is not a certificate. The
		// device is opened at the first handshake that signs with it, not before.
		var ref []byte
		for rest := keyPEM; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				ref = pem.EncodeToMemory(b)
				break
			}
		}
		dp, derr := chainOf(certPEM)
		if derr != nil || ref == nil {
			return nil, errors.Join(err, derr)
		}
		pair, err = dp, nil
		pair.PrivateKey = &deviceKey{keys: keys, ref: ref, pub: pair.Leaf.PublicKey}
	}
	if err != nil {
		return nil, err
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &pair, nil
}

// chainOf is the certificate chain of a PEM file, its leaf parsed.
func chainOf(certPEM []byte) (tls.Certificate, error) {
	var pair tls.Certificate
	for rest := certPEM; ; {
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
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	pair.Leaf = leaf
	return pair, err
}

// deviceKey is a key a device holds, as a crypto.Signer that opens the device when it first
// signs (a handshake) and closes it when the pair is nobody's any more.
type deviceKey struct {
	keys kubeboot.KeyStore
	ref  []byte
	pub  crypto.PublicKey
	mu   sync.Mutex
	s    crypto.Signer
}

func (k *deviceKey) Public() crypto.PublicKey { return k.pub }

func (k *deviceKey) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.s == nil {
		s, err := k.keys.Open(k.ref)
		if err != nil {
			return nil, err
		}
		k.s = s
		if c, ok := s.(io.Closer); ok {
			runtime.SetFinalizer(k, func(*deviceKey) { _ = c.Close() })
		}
	}
	return k.s.Sign(rand, digest, opts)
}

// readCluster reads the node kubeconfig's cluster: the server, the TLS settings and the CA.
func readCluster(path string) (Cluster, error) {
	kc, err := kubeboot.ReadKubeconfig(path)
	if err != nil {
		return Cluster{}, err
	}
	cl := Cluster{Server: kc.Server, ServerName: kc.TLSServerName, Insecure: kc.InsecureSkipTLSVerify}
	switch kc.CA.Source {
	case kubeboot.SourceData:
		cl.CAPEM = kc.CA.Data
	case kubeboot.SourceFile:
		if cl.CAPEM, err = os.ReadFile(kc.CA.File); err != nil {
			return Cluster{}, err
		}
	}
	return cl, nil
}

// Credentials are the current credentials, or ErrNotReady before the first.
func (r *Runtime) Credentials() (*Credentials, error) { return r.creds.get() }

// WaitCredentials waits for the first credentials (or ctx, or the runtime's end: then its
// error, or ErrNotReady).
func (r *Runtime) WaitCredentials(ctx context.Context) (*Credentials, error) {
	select {
	case <-r.creds.readyCh:
		return r.creds.get()
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.done:
		if c, err := r.creds.get(); err == nil {
			return c, nil
		}
		if r.err != nil {
			return nil, r.err
		}
		return nil, ErrNotReady
	}
}

// TLSConfig is a tls.Config on the node's credentials as they rotate: as a server it presents
// the newest serving certificate (GetCertificate; ErrNoServing without one, ErrNotReady before
// the first credentials), as a client the current client certificate (GetClientCertificate),
// trusting the cluster's CA as the node kubeconfig names it when TLSConfig is called (the
// system's roots are never used). For the apiserver with client-go, use package
// kubeboot.dev/go/kubeclient, whose connections also follow a new CA.
func (r *Runtime) TLSConfig() *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, err := r.Credentials()
			if err != nil {
				return nil, err
			}
			if c.Serving == nil {
				return nil, ErrNoServing
			}
			return c.Serving, nil
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := r.Credentials()
			if err != nil {
				return nil, err
			}
			return c.Client, nil
		},
		RootCAs: x509.NewCertPool(),
	}
	if c, err := r.Credentials(); err == nil {
		cfg.RootCAs = c.Cluster.RootCAs()
		cfg.ServerName = c.Cluster.ServerName
	}
	return cfg
}
