package agentrun

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"kubeboot.dev/go/kubeboot"
)

// transport is net/http with one client per connection id (the agent changes the id whenever
// the settings change); a client key held by a device is presented through its crypto.Signer.
type transport struct {
	id     uint32
	client *http.Client
	err    error
	keys   kubeboot.KeyStore
	max    int64
	// signer: the device's key of the current client, closed with it.
	signer io.Closer
}

func (t *transport) close() {
	if t.client != nil {
		t.client.CloseIdleConnections()
	}
	if t.signer != nil {
		_ = t.signer.Close()
		t.signer = nil
	}
}

func (t *transport) clientFor(c kubeboot.Connection) (*http.Client, error) {
	if t.client != nil && t.id == c.ID {
		return t.client, t.err
	}
	t.close()
	t.id, t.client, t.err = c.ID, nil, nil
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.Insecure}
	if !c.Insecure {
		tc.RootCAs = x509.NewCertPool() // exactly the agent's CAs, never the system's
		if !tc.RootCAs.AppendCertsFromPEM(c.CAPEM) {
			t.err = errors.New("no certificate in the CA bundle")
		}
	}
	if len(c.ClientCertPEM) > 0 {
		var pair tls.Certificate
		var err error
		if c.ClientKeyHolder != kubeboot.HolderSoftware {
			pair, t.signer, err = devicePair(t.keys, c.ClientCertPEM, c.ClientKeyPEM)
		} else {
			pair, err = tls.X509KeyPair(c.ClientCertPEM, c.ClientKeyPEM)
		}
		if err != nil {
			t.err = fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	t.client = &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second}}
	return t.client, t.err
}

// devicePair is the certificate chain with the device's key (reference) as its crypto.Signer:
// the handshake's CertificateVerify is signed in the device. The signer is closed with the pair.
func devicePair(keys kubeboot.KeyStore, chainPEM, reference []byte) (tls.Certificate, io.Closer, error) {
	pair, err := chainOf(chainPEM)
	if err != nil {
		return pair, nil, err
	}
	if keys == nil {
		return pair, nil, errors.New("a device holds the key and there is no key store")
	}
	signer, err := keys.Open(reference)
	if err != nil {
		return pair, nil, err
	}
	pair.PrivateKey = signer
	closer, _ := signer.(io.Closer)
	return pair, closer, nil
}

func (t *transport) do(stop context.Context, agent *kubeboot.Agent, r *kubeboot.HTTPRequest, onEvent func(kubeboot.Event)) {
	client, err := t.clientFor(r.Conn)
	if err != nil {
		agent.OnTransportError(time.Now(), err.Error())
		return
	}
	ctx, cancel := context.WithDeadline(stop, r.GiveUpAt.Add(time.Second))
	defer cancel()
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
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
		t.stream(agent, r, resp.Body, onEvent)
		return
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, t.max+1))
	switch {
	case err != nil:
		agent.OnTransportError(time.Now(), err.Error())
	case int64(len(b)) > t.max:
		agent.OnTransportError(time.Now(), fmt.Sprintf("response body larger than %d bytes", t.max))
	default:
		agent.OnHTTPResponse(time.Now(), kubeboot.HTTPResponse{Status: resp.StatusCode,
			RetryAfter: resp.Header.Get("Retry-After"), Body: b})
	}
}

// stream feeds a 200 watch to the agent as it arrives; while it stays quiet past the request's
// IdleAt the agent is told once a second (its progress lines go to onEvent) and the watch stays
// open until the agent or the server ends it.
func (t *transport) stream(agent *kubeboot.Agent, r *kubeboot.HTTPRequest, body io.Reader, onEvent func(kubeboot.Event)) {
	type chunk struct {
		b   []byte
		err error
	}
	chunks := make(chan chunk)
	done := make(chan struct{})
	defer close(done) // the reader ends at its next Read, which the body's Close breaks
	go func() {
		for {
			buf := make([]byte, 8192)
			n, err := body.Read(buf)
			select {
			case chunks <- chunk{buf[:n], err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var idle <-chan time.Time
	var timer *time.Timer
	if !r.IdleAt.IsZero() {
		timer = time.NewTimer(time.Until(r.IdleAt))
		defer timer.Stop()
		idle = timer.C
	}
	for {
		select {
		case c := <-chunks:
			if len(c.b) > 0 && !agent.OnStreamData(time.Now(), c.b) {
				return // the agent needs no more of the stream
			}
			if c.err != nil {
				agent.OnStreamEnd(time.Now()) // ended or broke
				return
			}
		case <-idle:
			keep := agent.OnStreamIdle(time.Now())
			for ev, ok := agent.NextEvent(); ok; ev, ok = agent.NextEvent() {
				onEvent(ev)
			}
			if !keep {
				return
			}
			timer.Reset(time.Second)
		}
	}
}
