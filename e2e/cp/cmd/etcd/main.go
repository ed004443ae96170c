// Command etcd runs upstream etcd (go.etcd.io/etcd/server/v3/etcdmain) with
// its normal command line. It exists so that the e2e harness can build etcd
// from the Go module proxy at the exact version kube-apiserver depends on.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
