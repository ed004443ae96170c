// Command x509_verdicts prints Go's crypto/x509 verdict on each case directory of
// core/tests/verify_peers.rs (leaf.pem: the leaf, then intermediates; ca.pem: the roots;
// profile: client or serving): "<case> ok" or "<case> error: <x509's message>".
//
// Usage: go run x509_verdicts.go DIR NOW_UNIX_SECONDS CASE...
//
// The verdict is x509.ParseCertificate on every certificate, then Certificate.Verify with the
// intermediates and roots as pools, CurrentTime = NOW and KeyUsages = clientAuth or serverAuth,
// as the kube-apiserver checks a client certificate (no DNS name: names are kubeboot's own check).
package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func certs(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out, nil
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

func verdict(dir string, now time.Time) error {
	chain, err := certs(filepath.Join(dir, "leaf.pem"))
	if err != nil {
		return err
	}
	roots, err := certs(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return err
	}
	profile, err := os.ReadFile(filepath.Join(dir, "profile"))
	if err != nil {
		return err
	}
	usage := x509.ExtKeyUsageClientAuth
	if string(profile) == "serving" {
		usage = x509.ExtKeyUsageServerAuth
	}
	opts := x509.VerifyOptions{
		Roots:         x509.NewCertPool(),
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{usage},
	}
	for _, r := range roots {
		opts.Roots.AddCert(r)
	}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err = chain[0].Verify(opts)
	return err
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: x509_verdicts DIR NOW CASE...")
		os.Exit(2)
	}
	secs, err := strconv.ParseInt(os.Args[2], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, name := range os.Args[3:] {
		if err := verdict(filepath.Join(os.Args[1], name), time.Unix(secs, 0)); err != nil {
			fmt.Printf("%s error: %v\n", name, err)
		} else {
			fmt.Printf("%s ok\n", name)
		}
	}
}
