// Package kubeclient gives client-go the node identity kubeboot's runtime keeps
// (system:node:<name>): a rest.Config whose connections move to a rotated client certificate the
// moment it is current, as the kubelet's transport does (pkg/kubelet/certificate/transport.go:
// it presents the certificate manager's current pair in GetClientCertificate and, when it sees a
// new one — it looks every 10 s — closes every connection so the next requests handshake with
// it), not at client-go's 5-minute re-read of the kubeconfig's files.
//
// Here the runtime says when a pair became current (agentrun.Credentials.Changed), so nothing
// polls; and instead of closing connections under requests in flight, new requests go to a new
// connection pool at once while the old pool's connections close as soon as they are idle (a
// watch under way ends when the server ends it, on the identity it started with, which is still
// valid: rotation happens at 70–90 % of a certificate's life).
//
// It is a module of its own (kubeboot.dev/go/kubeclient) so that client-go weighs only on the
// programs that use it.
package kubeclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"kubeboot.dev/go/agentrun"
)

// drainFor is how long a replaced pool is watched for idle connections to close (longer than
// any watch the apiserver keeps open: its --min-request-timeout default is 30 min).
const drainFor = time.Hour

// Transport is an http.RoundTripper on the runtime's current credentials: every new connection
// presents the current client certificate and trusts the node kubeconfig's current CA, and a
// rotation (or a new CA) sends the next request over a new connection.
type Transport struct {
	rt *agentrun.Runtime
	// Presented, when set before the first request, is called with the client certificate each
	// new connection presents (to log or measure which identity is in use).
	Presented func(*x509.Certificate)

	mu    sync.Mutex
	pool  *http.Transport
	creds *agentrun.Credentials
}

// NewTransport follows rt's credentials until rt ends. ErrNotReady before the first
// credentials (see agentrun.Runtime.WaitCredentials).
func NewTransport(rt *agentrun.Runtime) (*Transport, error) {
	c, err := rt.Credentials()
	if err != nil {
		return nil, err
	}
	t := &Transport{rt: rt}
	t.pool, t.creds = t.newPool(c), c
	go t.follow()
	return t, nil
}

// RESTConfig is a client-go rest.Config for the node identity: the apiserver of the node
// kubeconfig and a Transport. ErrNotReady before the first credentials.
func RESTConfig(rt *agentrun.Runtime) (*rest.Config, error) {
	t, err := NewTransport(rt)
	if err != nil {
		return nil, err
	}
	return &rest.Config{Host: t.creds.Cluster.Server, Transport: t}, nil
}

// RoundTrip sends req over the current pool.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	p := t.pool
	t.mu.Unlock()
	return p.RoundTrip(req)
}

// CloseIdleConnections closes the current pool's idle connections.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	p := t.pool
	t.mu.Unlock()
	p.CloseIdleConnections()
}

// follow swaps in a new pool whenever the client certificate or the cluster changes.
func (t *Transport) follow() {
	for {
		t.mu.Lock()
		c := t.creds
		t.mu.Unlock()
		select {
		case <-c.Changed:
		case <-t.rt.Done():
			return
		}
		n, err := t.rt.Credentials()
		if err != nil || n == c {
			return
		}
		t.mu.Lock()
		old := t.pool
		if n.Client != c.Client || !sameCluster(n.Cluster, c.Cluster) {
			t.pool = t.newPool(n)
			go drain(old)
		}
		t.creds = n
		t.mu.Unlock()
	}
}

func sameCluster(a, b agentrun.Cluster) bool {
	return a.Server == b.Server && a.ServerName == b.ServerName && a.Insecure == b.Insecure && string(a.CAPEM) == string(b.CAPEM)
}

// drain closes a replaced pool's connections as each becomes idle.
func drain(p *http.Transport) {
	p.CloseIdleConnections()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for end := time.Now().Add(drainFor); time.Now().Before(end); {
		<-tick.C
		p.CloseIdleConnections()
	}
}

// newPool is net/http's transport with client-go's settings (timeouts, HTTP/2 health checks)
// on c: exactly the cluster's CA, and the current client certificate at each handshake.
func (t *Transport) newPool(c *agentrun.Credentials) *http.Transport {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            c.Cluster.RootCAs(),
		ServerName:         c.Cluster.ServerName,
		InsecureSkipVerify: c.Cluster.Insecure,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cur, err := t.rt.Credentials()
			if err != nil {
				return nil, err
			}
			if cur.Client == nil {
				return nil, errors.New("kubeclient: no client certificate")
			}
			if t.Presented != nil {
				t.Presented(cur.Client.Leaf)
			}
			return cur.Client, nil
		},
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tc,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
		HTTP2:               &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}
}
