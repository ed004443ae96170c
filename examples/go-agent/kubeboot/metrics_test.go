package kubeboot

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// An agent with nothing to go on fails; its metrics say so, in the kubelet's names, and can be
// read from another goroutine while it runs.
func TestAgentMetricsText(t *testing.T) {
	dir := t.TempDir()
	a, err := NewAgent(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cfg := DefaultAgentConfig()
	cfg.FrontEnd, cfg.WorkingDir, cfg.Kubeconfig, cfg.CertDir, cfg.NodeName = "go-test", dir, "kubelet.conf", "pki", "node-1"
	if err := a.Start(cfg); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // a scraper
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := a.MetricsText(time.Now()); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	var last Action
	for i := 0; i < 100; i++ {
		last = a.Poll(now)
		if last.Kind == ActionFailed || last.Kind == ActionDone {
			break
		}
		if last.Kind == ActionRead || last.Kind == ActionFile {
			if _, err := a.PerformFileAction(now); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if last.Kind != ActionFailed || last.Failed == nil || !strings.Contains(last.Failed.Line, "step=failed") {
		t.Fatalf("want ActionFailed with its line, got %+v", last)
	}
	b, err := a.MetricsText(now)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		"# TYPE kubelet_certificate_manager_client_ttl_seconds gauge\n",
		"\nkubelet_certificate_manager_client_ttl_seconds +Inf\n",
		"\nkubelet_certificate_manager_client_expiration_renew_errors 1\n",
		"\nkubelet_certificate_manager_server_rotation_seconds_bucket{le=\"+Inf\"} 0\n",
		"\nkubelet_server_expiration_renew_errors 0\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	if m, err := a.Metrics(); err != nil || m.HasClient || m.ClientRenewErrors != 1 {
		t.Errorf("Metrics: %+v %v", m, err)
	}
	if err := CheckMetricsTextfile("/var/lib/node_exporter/kubeboot.prom"); err != nil {
		t.Error(err)
	}
	if err := CheckMetricsTextfile("kubeboot.txt"); err == nil {
		t.Error("kubeboot.txt accepted as a textfile")
	}
	a.Close()
	if _, err := a.MetricsText(now); err != ErrInvalidState {
		t.Errorf("after Close: %v", err)
	}
	if err := a.Start(cfg); !errors.Is(err, ErrInvalidState) {
		t.Errorf("Start after Close: %v", err)
	}
}

// The capacities: the hosts' pass their own check and size an agent; one too small is a typed
// too-large naming it, at NewAgent, before anything runs.
func TestCapacities(t *testing.T) {
	host := HostCapacities()
	if err := host.Check(); err != nil {
		t.Fatal(err)
	}
	n, err := host.AgentSize()
	if err != nil || n < host.Response+host.PEM {
		t.Fatalf("size %d: %v", n, err)
	}
	small := host
	small.Response = 16
	err = small.Check()
	var ce *CapacityError
	if !errors.As(err, &ce) || ce.Which != CapacityResponse || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%v", err)
	}
	if _, err := NewAgent(&small); !errors.As(err, &ce) || ce.Which != CapacityResponse {
		t.Fatalf("NewAgent: %v", err)
	}
	smallN, err := Capacities{Response: host.Response, PEM: host.PEM, Key: host.Key, File: host.File,
		Path: host.Path, ServingDNS: 0}.AgentSize()
	if err != nil || smallN >= n {
		t.Fatalf("fewer DNS names, no less memory: %d vs %d (%v)", smallN, n, err)
	}
	a, err := NewAgent(&host)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// A bad configuration is refused at Start, typed.
	cfg := DefaultAgentConfig()
	cfg.FrontEnd, cfg.WorkingDir, cfg.Kubeconfig, cfg.CertDir = "go-test", t.TempDir(), "k", "pki"
	cfg.Mode = Mode(9)
	if err := a.Start(cfg); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("mode 9: %v", err)
	}
	cfg = DefaultAgentConfig()
	if cfg.BootstrapWait != time.Hour || cfg.RotationWait != 15*time.Minute || cfg.CARefresh != 10*time.Minute ||
		cfg.Mode != ModeOnce || DefaultDiscoveryTimeout() != 5*time.Minute {
		t.Fatalf("defaults: %+v", cfg)
	}
}
