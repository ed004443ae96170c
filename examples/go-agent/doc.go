// Package goagent holds the Go side of kubeboot: the cgo binding (./kubeboot), the node agent
// (./cmd/kubeboot-go-agent) and side-by-side benchmarks against Go's crypto/x509
// (bench_test.go). Build libkubeboot first: `make test` (cargo build --release -p kubeboot-ffi).
package goagent
