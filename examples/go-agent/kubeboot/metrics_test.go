package kubeboot

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// An agent with nothing to go on fails; its metrics say so, in the kubelet's names, and can be
// read from another goroutine while it runs.
func TestAgentMetricsText(t *testing.T) {
	dir := t.TempDir()
	a, err := NewAgent(AgentConfig{FrontEnd: "go-test", WorkingDir: dir, Kubeconfig: "kubelet.conf",
		CertDir: "pki", NodeName: "node-1", Mode: ModeOnce})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
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
	var last AgentAction
	for i := 0; i < 100; i++ {
		last = a.Poll(now)
		if last.Kind == AgentFailed || last.Kind == AgentDone {
			break
		}
		if last.Kind == AgentRead || last.Kind == AgentFile {
			if _, err := a.PerformFileAction(now); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if last.Kind != AgentFailed {
		t.Fatalf("want AgentFailed, got %v", last.Kind)
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
}
