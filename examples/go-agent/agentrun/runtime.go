// Package agentrun runs kubeboot's node agent in the background of a Go program: the daemon
// side of a kubelet-style node agent, decided once here — HTTPS with net/http on the agent's
// connection settings, device keys through package hwkey (or any kubeboot.KeyStore), the
// agent's file steps with libkubeboot's crash-safe store, sleeping, SIGHUP → wake, systemd
// readiness and status (NOTIFY_SOCKET), the kubelet's certificate metrics (an HTTP endpoint and
// a node_exporter textfile), the progress line — and it hands the program the node's
// credentials as they rotate: Credentials, a tls.Config whose GetCertificate serves the newest
// serving pair and whose client side presents the current client certificate, and (package
// kubeboot.dev/go/kubeclient) a client-go rest.Config for system:node:<name>.
//
// Every decision is the agent's (kubeboot.Agent): this package only does what it asks.
//
//	rt, err := agentrun.Start(ctx, agentrun.Config{Agent: cfg})
//	creds, err := rt.WaitCredentials(ctx) // or rt.Credentials(): ErrNotReady before the first
//	srv := &http.Server{TLSConfig: rt.TLSConfig()}
//	err = rt.Wait() // nil when done or stopped by ctx, else the agent's typed *kubeboot.Error
package agentrun

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"kubeboot.dev/go/hwkey"
	"kubeboot.dev/go/kubeboot"
)

// MaxResponse is the largest response body the runtime reads (a larger one is a transport
// error, never a truncated body).
const MaxResponse = kubeboot.MaxResponse

// Config is what the runtime runs.
type Config struct {
	// Agent is the agent's configuration (start from kubeboot.DefaultAgentConfig). FrontEnd
	// defaults to "go", WorkingDir to the process's; UTCOffset and Seed are the runtime's
	// (the local zone, the OS RNG).
	Agent kubeboot.AgentConfig
	// Capacities of the agent's memory; nil: the hosts' (kubeboot.HostCapacities).
	Capacities *kubeboot.Capacities
	// Keys holds device keys (AgentConfig.KeyDevice, or a pair whose key a device holds); nil:
	// hwkey.Devices with TPM2TOOLS_TCTI.
	Keys kubeboot.KeyStore
	// Lines receives every event line (nil: none). On a terminal a progress line replaces the
	// line before it.
	Lines io.Writer
	// Errors receives the runtime's own messages (a file error's path, a textfile that could
	// not be written); nil: os.Stderr.
	Errors io.Writer
	// OnEvent is called with every event, in order, from the runtime's goroutine (return
	// quickly).
	OnEvent func(kubeboot.Event)
	// MetricsAddr: serve the kubelet's certificate metrics at http://MetricsAddr/metrics (and
	// /healthz); empty: none.
	MetricsAddr string
	// MetricsTextfile: also write them for node_exporter's textfile collector (a .prom file).
	MetricsTextfile string
	// SystemdNotify: tell $NOTIFY_SOCKET READY=1 at the first usable credentials, STATUS= each
	// line, STOPPING=1 at the end (a Type=notify service).
	SystemdNotify bool
	// WakeOnSIGHUP: SIGHUP ends a sleep between attempts (the agent reads its files again).
	WakeOnSIGHUP bool
}

// Runtime is a running agent.
type Runtime struct {
	cfg   Config
	agent *kubeboot.Agent
	creds *credentials
	wake  chan struct{}
	done  chan struct{}
	err   error
	errs  io.Writer
	mu    sync.Mutex
	st    Status
}

// Status is what the runtime has seen so far.
type Status struct {
	// Line is the latest event line.
	Line string
	// Ready: usable credentials were reached at least once.
	Ready bool
	// Outcome: the agent's, once done.
	Outcome *kubeboot.Outcome
	// Stopped: it ended (done, failed or stopped).
	Stopped bool
}

// Start validates cfg and starts the agent in a goroutine that ends when the agent is done or
// fails, or ctx is cancelled (then before a request or a sleep, never between a file write and
// what completes it; a request under way is cancelled). A bad configuration is the agent's typed
// error (*kubeboot.Error) and nothing runs.
func Start(ctx context.Context, cfg Config) (*Runtime, error) {
	c := cfg.Agent
	if c.FrontEnd == "" {
		c.FrontEnd = "go"
	}
	if c.WorkingDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		c.WorkingDir = wd
	}
	_, c.UTCOffset = time.Now().Zone()
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, err
	}
	c.Seed = binary.LittleEndian.Uint64(seed[:])
	if cfg.Keys == nil {
		cfg.Keys = &hwkey.Devices{}
	}
	errs := cfg.Errors
	if errs == nil {
		errs = os.Stderr
	}
	if cfg.MetricsTextfile != "" {
		if err := kubeboot.CheckMetricsTextfile(cfg.MetricsTextfile); err != nil {
			return nil, fmt.Errorf("metrics textfile %s: node_exporter reads only *.prom files: %w", cfg.MetricsTextfile, err)
		}
	}
	agent, err := kubeboot.NewAgent(cfg.Capacities)
	if err != nil {
		return nil, err
	}
	if err := agent.Start(c); err != nil {
		agent.Close()
		return nil, err
	}
	var metrics net.Listener
	if cfg.MetricsAddr != "" {
		if _, err := ParseAddress(cfg.MetricsAddr); err != nil {
			agent.Close()
			return nil, fmt.Errorf("metrics address %w", err)
		}
		if metrics, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			agent.Close()
			return nil, fmt.Errorf("metrics address: %w", err)
		}
	}
	cfg.Agent = c
	r := &Runtime{cfg: cfg, agent: agent, wake: make(chan struct{}, 1), done: make(chan struct{}), errs: errs,
		creds: newCredentials(cfg.Keys, abs(c.WorkingDir, c.Kubeconfig))}
	if metrics != nil {
		go serveMetrics(metrics, agent, r.done)
	}
	go r.run(ctx)
	return r, nil
}

func abs(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// Done is closed when the runtime has ended.
func (r *Runtime) Done() <-chan struct{} { return r.done }

// Wait waits for the end: nil when the agent is done or ctx stopped it, else why it failed (an
// *kubeboot.Error with the typed reason, errors.Is-comparable with the kubeboot.Err* values).
func (r *Runtime) Wait() error {
	<-r.done
	return r.err
}

// Wake ends a sleep between attempts now (the agent reads its files again, as after SIGHUP).
func (r *Runtime) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Status is a copy of what the runtime has seen.
func (r *Runtime) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// Metrics is the agent's certificate metrics as of its last step.
func (r *Runtime) Metrics() (kubeboot.Metrics, error) { return r.agent.Metrics() }

// MetricsText is the kubelet's certificate metrics at now (the Prometheus text format).
func (r *Runtime) MetricsText(now time.Time) ([]byte, error) { return r.agent.MetricsText(now) }

func (r *Runtime) run(ctx context.Context) {
	var hup chan os.Signal
	if r.cfg.WakeOnSIGHUP {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	notify := newNotifier(r.cfg.SystemdNotify, r.errs)
	err := r.drive(ctx, hup, notify)
	r.mu.Lock()
	r.st.Stopped = true
	r.mu.Unlock()
	r.err = err
	r.agent.Close()
	close(r.done)
}

func (r *Runtime) drive(ctx context.Context, hup <-chan os.Signal, notify *notifier) error {
	a := r.agent
	t := &transport{keys: r.cfg.Keys, max: MaxResponse}
	defer t.close()
	tf := &textfile{path: r.cfg.MetricsTextfile, errs: r.errs}
	out := newPrinter(r.cfg.Lines)
	// One place for a line of the agent's, from Poll or from a watch's idle progress.
	onEvent := func(ev kubeboot.Event) {
		if ev.Ready {
			if err := r.creds.ready(a); err != nil {
				fmt.Fprintln(r.errs, "kubeboot: loading the credentials:", err)
			}
		}
		out.line(ev.Line, ev.Update)
		notify.event(ev.Line, ev.Ready)
		r.mu.Lock()
		r.st.Line = ev.Line
		r.st.Ready = r.st.Ready || ev.Ready
		r.mu.Unlock()
		if r.cfg.OnEvent != nil {
			r.cfg.OnEvent(ev)
		}
	}
	for {
		now := time.Now()
		_, offset := now.Zone()
		a.SetUTCOffset(offset)
		select {
		case <-hup:
			a.Wake()
		case <-r.wake:
			a.Wake()
		default:
		}
		act := a.Poll(now)
		if ctx.Err() != nil && (act.Kind == kubeboot.ActionSleep || act.Kind == kubeboot.ActionHTTP) {
			notify.send("STOPPING=1")
			return nil
		}
		if act.Kind == kubeboot.ActionEvent || act.Kind == kubeboot.ActionDone || act.Kind == kubeboot.ActionFailed || tf.due(now) {
			tf.write(a, now)
		}
		switch act.Kind {
		case kubeboot.ActionRead, kubeboot.ActionFile:
			msg, err := a.PerformFileAction(now)
			if err != nil {
				return err
			}
			if msg != "" {
				fmt.Fprintln(r.errs, "kubeboot:", msg)
			}
			r.creds.observe(act, msg == "")
		case kubeboot.ActionEntropy:
			if err := a.PerformEntropy(); err != nil {
				return err
			}
		case kubeboot.ActionKey:
			if err := a.PerformKeyAction(now, act.Key, r.cfg.Keys); err != nil {
				fmt.Fprintln(r.errs, "kubeboot:", err)
			}
		case kubeboot.ActionHTTP:
			t.do(ctx, a, act.HTTP, onEvent)
		case kubeboot.ActionSleep:
			d := time.Until(act.Sleep)
			if tf.path != "" && d > kubeboot.MetricsTextfileRefresh {
				d = kubeboot.MetricsTextfileRefresh // then poll again: the agent says sleep on
			}
			timer := time.NewTimer(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				notify.send("STOPPING=1")
				return nil
			case <-hup:
				a.Wake()
			case <-r.wake:
				a.Wake()
			case <-timer.C:
			}
			timer.Stop()
		case kubeboot.ActionEvent:
			onEvent(*act.Event)
		case kubeboot.ActionDone:
			r.mu.Lock()
			r.st.Outcome = act.Done
			r.mu.Unlock()
			return nil
		case kubeboot.ActionFailed:
			out.line(act.Failed.Line, false)
			notify.event(act.Failed.Line, false)
			r.mu.Lock()
			r.st.Line = act.Failed.Line
			r.mu.Unlock()
			return act.Failed.Err
		default:
			return errors.New("kubeboot: unknown agent action")
		}
	}
}
