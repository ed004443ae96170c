// Package goagent is the root of the Go module kubeboot.dev/go, the Go side of kubeboot: the
// cgo binding (kubeboot.dev/go/kubeboot), the runtime that runs the agent in a Go program
// (kubeboot.dev/go/agentrun), the node agent over it (./cmd/kubeboot-go-agent), device keys
// (kubeboot.dev/go/hwkey) and side-by-side benchmarks against Go's crypto/x509 (bench_test.go).
// client-go's side is the module kubeboot.dev/go/kubeclient in ./kubeclient. libkubeboot is found
// with pkg-config: `make test` here builds it and its build-tree .pc files first.
package goagent
