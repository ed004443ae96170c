// Command kubelet-bootstrap-fleet is bench/fleet's upstream side: N nodes bootstrapping at once,
// each a goroutine running the upstream kubelet's path-B TLS bootstrap
// (k8s.io/kubernetes/pkg/kubelet/certificate/bootstrap.LoadClientCert, what
// cmd/kubelet-bootstrap runs for one node) with its own files, all in one process (a process
// per node would need ~30 MB each: 1000 of them do not fit this machine).
//
//	kubelet-bootstrap-fleet --dir D --count N [--prefix P] [--timeout 30m] [--progress FILE] [--report FILE]
//
// Node i (name P-i) uses D/P-i/bootstrap.kubeconfig (written by the caller; its CA file is the
// node's own copy, so that client-go's transport cache, keyed by the TLS settings, gives every
// node its own transport and connection, as on separate machines), and writes
// D/P-i/kubelet.conf and D/P-i/pki. One line per node goes to --report (node=<name> ok=<0|1>
// ttc_ms=<ms> failure=<error>), the number credentialed so far to --progress, and a summary to
// stdout (fleet: side=upstream nodes=N ok=K wall_ms=... p50_ms=... vmhwm_kib=...). Exit 0 when
// every node got credentials.
//
// A LoadClientCert that returns an error is run again after --restart-after (10 s), until
// --timeout: the kubelet exits on that error and its unit restarts it (kubeadm's kubelet.service:
// Restart=always, RestartSec=10); the restarts are counted (restarts=<n> in the report).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/certificate/bootstrap"
)

type outcome struct {
	name     string
	ok       bool
	ttc      time.Duration
	err      string
	restarts int
}

// memoryKiB: VmHWM (peak RSS) and VmRSS of this process.
func memoryKiB() (int64, int64) {
	b, _ := os.ReadFile("/proc/self/status")
	field := func(k string) int64 {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, k) {
				var v int64
				fmt.Sscan(strings.TrimSpace(strings.TrimPrefix(l, k)), &v)
				return v
			}
		}
		return 0
	}
	return field("VmHWM:"), field("VmRSS:")
}

func percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

func main() {
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	klog.InitFlags(fs)
	dir := fs.String("dir", "", "fleet directory (one subdirectory per node)")
	count := fs.Int("count", 0, "nodes")
	prefix := fs.String("prefix", "fleet-up", "node name prefix (names are <prefix>-<i>)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	progress := fs.String("progress", "", "file holding the number of nodes credentialed so far")
	report := fs.String("report", "", "file for one line per node")
	restartAfter := fs.Duration("restart-after", 10*time.Second, "run LoadClientCert again this long after it failed")
	_ = fs.Set("v", "0")
	_ = fs.Parse(os.Args[1:])
	if *dir == "" || *count <= 0 {
		fmt.Fprintln(os.Stderr, "usage: kubelet-bootstrap-fleet --dir D --count N [--prefix P] [--timeout 30m] [--progress FILE] [--report FILE]")
		os.Exit(2)
	}
	_, idle := memoryKiB()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	t0 := time.Now()
	var done atomic.Int64
	var progressMu sync.Mutex
	out := make([]outcome, *count)
	var wg sync.WaitGroup
	for i := 0; i < *count; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("%s-%d", *prefix, i)
			d := filepath.Join(*dir, name)
			restarts := 0
			var err error
			for {
				err = bootstrap.LoadClientCert(ctx, filepath.Join(d, "kubelet.conf"),
					filepath.Join(d, "bootstrap.kubeconfig"), filepath.Join(d, "pki"), types.NodeName(name))
				if err == nil || ctx.Err() != nil {
					break
				}
				restarts++
				select {
				case <-ctx.Done():
				case <-time.After(*restartAfter):
				}
			}
			o := outcome{name: name, ok: err == nil, ttc: time.Since(t0), restarts: restarts}
			if err != nil {
				o.err = strings.ReplaceAll(err.Error(), "\n", " ")
			} else if *progress != "" {
				n := done.Add(1)
				progressMu.Lock()
				_ = os.WriteFile(*progress, []byte(fmt.Sprintf("%d\n", n)), 0o644)
				progressMu.Unlock()
			}
			out[i] = o
		}(i)
	}
	wg.Wait()
	wall := time.Since(t0)
	klog.Flush()
	hwm, rss := memoryKiB()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var lines strings.Builder
	var ttcs []int64
	ok := 0
	for _, o := range out {
		e := o.err
		if e == "" {
			e = "-"
		}
		okn := 0
		if o.ok {
			ok++
			okn = 1
			ttcs = append(ttcs, o.ttc.Milliseconds())
		}
		fmt.Fprintf(&lines, "node=%s ok=%d ttc_ms=%d restarts=%d failure=%q\n", o.name, okn, o.ttc.Milliseconds(), o.restarts, e)
	}
	if *report != "" {
		if err := os.WriteFile(*report, []byte(lines.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	sort.Slice(ttcs, func(a, b int) bool { return ttcs[a] < ttcs[b] })
	last := int64(0)
	if len(ttcs) > 0 {
		last = ttcs[len(ttcs)-1]
	}
	fmt.Printf("fleet: side=upstream nodes=%d ok=%d wall_ms=%d last_ms=%d p50_ms=%d p90_ms=%d p99_ms=%d "+
		"vmhwm_kib=%d vmrss_kib=%d vmrss_idle_kib=%d go_heap_sys=%d go_stack_sys=%d go_sys=%d\n",
		*count, ok, wall.Milliseconds(), last, percentile(ttcs, 50), percentile(ttcs, 90), percentile(ttcs, 99),
		hwm, rss, idle, m.HeapSys, m.StackSys, m.Sys)
	if ok != *count {
		os.Exit(1)
	}
}
