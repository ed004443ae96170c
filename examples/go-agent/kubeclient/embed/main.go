// Command embed is the way to embed kubeboot in a Go program: the runtime (package agentrun)
// keeps the node's credentials — bootstrap, client and serving rotation — in the background,
// and the program uses them as they rotate:
//
//   - as system:node:<name> through client-go (package kubeclient): once a second it lists the
//     nodes it may see (its own: the Node authorizer lets a node list only itself) and annotates
//     its own Node, which it watches (it registers the Node if missing, as the kubelet does);
//   - as an HTTPS server on the newest serving certificate (agentrun.Runtime.TLSConfig).
//
// It prints `embed step=...` lines (and the agent's `agent=go-embed` lines); SIGTERM ends it
// with a summary line and exit status 0 when no request failed, else 1.
//
//	embed --kubeconfig F --bootstrap-kubeconfig F --cert-dir D --node-name N --ca-bundle F
//	    --https-addr 127.0.0.1:PORT --dns D --ip IP
package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"kubeboot.dev/go/agentrun"
	"kubeboot.dev/go/kubeboot"
	"kubeboot.dev/go/kubeclient"
)

// say prints one `embed step=...` line (lines come from several goroutines).
var sayMu sync.Mutex

func say(format string, args ...any) {
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Printf("embed "+format+"\n", args...)
}

func main() {
	c := kubeboot.DefaultAgentConfig()
	var dns, ip, addr string
	flag.StringVar(&c.Kubeconfig, "kubeconfig", "", "node kubeconfig")
	flag.StringVar(&c.BootstrapKubeconfig, "bootstrap-kubeconfig", "", "bootstrap kubeconfig")
	flag.StringVar(&c.CertDir, "cert-dir", "", "cert dir")
	flag.StringVar(&c.NodeName, "node-name", "", "node name")
	flag.StringVar(&c.CABundle, "ca-bundle", "", "CA bundle issued certificates must chain to")
	flag.StringVar(&dns, "dns", "", "serving DNS name")
	flag.StringVar(&ip, "ip", "127.0.0.1", "serving IP address")
	flag.StringVar(&addr, "https-addr", "127.0.0.1:10250", "serve HTTPS here on the serving certificate")
	flag.Parse()
	c.FrontEnd, c.Mode = "go-embed", kubeboot.ModeRun
	c.Serving = &kubeboot.ServingConfig{DNSNames: []string{dns}, IPAddresses: []string{ip}}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, c, addr); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c kubeboot.AgentConfig, addr string) error {
	// 1. The runtime: the agent in the background.
	rt, err := agentrun.Start(ctx, agentrun.Config{Agent: c, Lines: os.Stdout})
	if err != nil {
		return err
	}
	creds, err := rt.WaitCredentials(ctx)
	if err != nil {
		return err
	}
	say("step=ready node=%s client-serial=%s", c.NodeName, creds.Client.Leaf.SerialNumber)
	go logRotations(rt, creds)

	// 2. HTTPS on the newest serving certificate.
	srv := &http.Server{Addr: addr, TLSConfig: rt.TLSConfig(), ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })}
	go func() { say("step=https-stopped err=%q", srv.ListenAndServeTLS("", "")) }()
	defer srv.Close()

	// 3. client-go as system:node:<name>, following rotation.
	cfg, err := kubeclient.RESTConfig(rt)
	if err != nil {
		return err
	}
	cfg.Transport.(*kubeclient.Transport).Presented = func(leaf *x509.Certificate) {
		say("step=presented serial=%s at=%d", leaf.SerialNumber, time.Now().UnixNano())
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return exercise(ctx, rt, cs, c.NodeName)
}

// logRotations prints each new client or serving certificate with the moment it became current.
func logRotations(rt *agentrun.Runtime, c *agentrun.Credentials) {
	for {
		select {
		case <-c.Changed:
		case <-rt.Done():
			return
		}
		n, err := rt.Credentials()
		if err != nil || n == c {
			return
		}
		if n.Client != c.Client {
			say("step=rotated kind=client serial=%s at=%d", n.Client.Leaf.SerialNumber, time.Now().UnixNano())
		}
		if n.Serving != c.Serving && n.Serving != nil {
			say("step=rotated kind=serving serial=%s at=%d", n.Serving.Leaf.SerialNumber, time.Now().UnixNano())
		}
		c = n
	}
}

// exercise lists the nodes and annotates its own Node every second, and watches it, until ctx
// ends; then the summary. Any failed request is counted and printed.
func exercise(ctx context.Context, rt *agentrun.Runtime, cs *kubernetes.Clientset, node string) error {
	var mu sync.Mutex
	requests, failed, seen := 0, 0, 0
	count := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		requests++
		if err != nil && ctx.Err() == nil {
			failed++
			say("step=request-failed what=%s err=%q", what, err)
		}
	}
	nodes := cs.CoreV1().Nodes()
	_, err := nodes.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
		count("create-node", err)
	} else {
		count("get-node", err)
	}
	if err != nil {
		return err
	}
	go func() { // the watch, re-opened from the last version whenever the server ends it
		rv := ""
		for ctx.Err() == nil {
			w, err := nodes.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node, ResourceVersion: rv})
			count("watch", err)
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					count("watch-event", apierrors.FromObject(ev.Object))
					rv = ""
					break
				}
				if n, ok := ev.Object.(*corev1.Node); ok {
					rv = n.ResourceVersion
					if n.Annotations["kubeboot.dev/embed-tick"] != "" {
						mu.Lock()
						seen++
						mu.Unlock()
					}
				}
			}
			w.Stop()
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			<-rt.Done()
			mu.Lock()
			defer mu.Unlock()
			say("step=summary requests=%d failed=%d watch-events=%d ticks=%d agent-err=%v", requests, failed, seen, i-1, rt.Wait())
			if failed > 0 {
				return fmt.Errorf("%d of %d requests failed", failed, requests)
			}
			return nil
		case <-tick.C:
		}
		// (a node may list only its own Node: the Node authorizer, v1.37)
		list, err := nodes.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node})
		count("list-nodes", err)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"kubeboot.dev/embed-tick":"%d"}}}`, i)
		_, perr := nodes.Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		count("patch-node", perr)
		if err == nil && perr == nil && i%10 == 0 {
			mu.Lock()
			say("step=tick n=%d nodes=%d requests=%d failed=%d watch-events=%d", i, len(list.Items), requests, failed, seen)
			mu.Unlock()
		}
	}
}
