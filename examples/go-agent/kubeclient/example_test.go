package kubeclient_test

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kubeboot.dev/go/agentrun"
	"kubeboot.dev/go/kubeboot"
	"kubeboot.dev/go/kubeclient"
)

// Embedding the node agent: the runtime keeps the node's credentials in the background; client-go
// talks as system:node:<name> and an HTTPS server presents the serving certificate, both
// following every rotation. (Compiled, not run: it needs a cluster; e2e/embed-go runs the
// program of kubeclient/embed, which does this.)
func Example() {
	ctx := context.Background()
	cfg := kubeboot.DefaultAgentConfig()
	cfg.Mode = kubeboot.ModeRun
	cfg.Kubeconfig, cfg.BootstrapKubeconfig = "/var/lib/kubelet/kubeconfig", "/var/lib/kubelet/bootstrap-kubeconfig"
	cfg.CertDir, cfg.NodeName = "/var/lib/kubelet/pki", "node-1"
	cfg.Serving = &kubeboot.ServingConfig{IPAddresses: []string{"10.0.0.1"}}
	rt, err := agentrun.Start(ctx, agentrun.Config{Agent: cfg})
	if err != nil {
		panic(err) // the agent's typed reason (a *kubeboot.Error)
	}
	if _, err := rt.WaitCredentials(ctx); err != nil {
		panic(err)
	}
	rest, err := kubeclient.RESTConfig(rt)
	if err != nil {
		panic(err)
	}
	cs := kubernetes.NewForConfigOrDie(rest)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	fmt.Println(len(nodes.Items), err)
	srv := &http.Server{Addr: "10.0.0.1:10250", TLSConfig: rt.TLSConfig()}
	go srv.ListenAndServeTLS("", "")
	_ = rt.Wait()
}
