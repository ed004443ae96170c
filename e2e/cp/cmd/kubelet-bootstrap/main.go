// Command kubelet-bootstrap runs the upstream kubelet's path-B TLS bootstrap
// (k8s.io/kubernetes/pkg/kubelet/certificate/bootstrap.LoadClientCert, the code
// the kubelet runs with rotateCertificates=false and --bootstrap-kubeconfig set)
// and nothing else, so that e2e/kubelet-compare.sh can put kubeboot side by side
// with it: same key, same node name, same cluster.
//
//	kubelet-bootstrap --bootstrap-kubeconfig B --kubeconfig K --cert-dir D --node-name N [--timeout 5m] [--memstats] [--v 2]
//
// --memstats prints the Go runtime's memory statistics on exit (one line,
// "memstats: ..."): Go manages its own heap and goroutine stacks, so valgrind
// massif cannot see them; HeapSys and StackSys are what the runtime obtained
// from the OS for them, never more than was needed at the peak plus GC slack.
//
// The apiserver sees client-go's default User-Agent, derived from this
// binary's name: "kubelet-bootstrap/<version> (<os>/<arch>) kubernetes/<commit>".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/certificate/bootstrap"
)

func main() {
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	klog.InitFlags(fs)
	bootstrapPath := fs.String("bootstrap-kubeconfig", "", "bootstrap kubeconfig (server, CA, bootstrap token)")
	kubeconfigPath := fs.String("kubeconfig", "", "node kubeconfig to write")
	certDir := fs.String("cert-dir", "", "certificate directory (kubelet-client.key.tmp is the key cache)")
	nodeName := fs.String("node-name", "", "node name (CN=system:node:<name>)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	memstats := fs.Bool("memstats", false, "print Go runtime memory statistics to stderr on exit")
	_ = fs.Parse(os.Args[1:])
	if *bootstrapPath == "" || *kubeconfigPath == "" || *certDir == "" || *nodeName == "" {
		fmt.Fprintln(os.Stderr, "usage: kubelet-bootstrap --bootstrap-kubeconfig B --kubeconfig K --cert-dir D --node-name N [--timeout 5m]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	err := bootstrap.LoadClientCert(ctx, *kubeconfigPath, *bootstrapPath, *certDir, types.NodeName(*nodeName))
	klog.Flush()
	if *memstats {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(os.Stderr, "memstats: heap_sys=%d heap_inuse=%d total_alloc=%d mallocs=%d stack_sys=%d stack_inuse=%d sys=%d num_gc=%d\n",
			m.HeapSys, m.HeapInuse, m.TotalAlloc, m.Mallocs, m.StackSys, m.StackInuse, m.Sys, m.NumGC)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelet-bootstrap: %v\n", err)
		os.Exit(1)
	}
}
