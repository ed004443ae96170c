// Package goagent is the root of the Go module kubeboot.dev/go, the Go side of kubeboot: the
// cgo binding (kubeboot.dev/go/kubeboot), the node agent (./cmd/kubeboot-go-agent) and
// side-by-side benchmarks against Go's crypto/x509 (bench_test.go). libkubeboot is found with
// pkg-config: `make test` here builds it and its build-tree .pc files first.
package goagent
