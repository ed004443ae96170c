// Command fake-cri serves the upstream fake container runtime of the release it is built
// against (k8s.io/cri-client/pkg/fake.NewFakeRemoteRuntime: the CRI RuntimeService and
// ImageService over gRPC, backed by the in-memory fakes of k8s.io/cri-api/pkg/apis/testing that
// the kubelet's own tests use) on a unix socket, so that the upstream kubelet runs on a machine
// without a container runtime (e2e/kubelet-node.sh, e2e/run's kubelet scenarios). It runs no
// container; its Start reports the runtime and the network ready, as a real runtime does once it
// is up.
//
//	fake-cri --listen /path/to/cri.sock
//
// It serves until SIGTERM or SIGINT, then stops the gRPC server and removes the socket file.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cri-client/pkg/fake"
)

func main() {
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	listen := fs.String("listen", "", "unix socket path to serve the CRI on")
	_ = fs.Parse(os.Args[1:])
	if *listen == "" {
		fmt.Fprintln(os.Stderr, "usage: fake-cri --listen /path/to/cri.sock")
		os.Exit(2)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	rt := fake.NewFakeRemoteRuntime()
	if err := rt.Start("unix://" + *listen); err != nil {
		fmt.Fprintf(os.Stderr, "fake-cri: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fake-cri: serving on %s\n", *listen)
	<-stop
	rt.Stop()
	_ = os.Remove(*listen)
}
