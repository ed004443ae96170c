// Command kubeboot-go-agent is a kubelet-style node agent in Go: flags over the runtime of
// package kubeboot.dev/go/agentrun, which runs libkubeboot's agent (every decision) with
// net/http, the crash-safe file store, device keys, signals, readiness and metrics.
//
//	kubeboot-go-agent --kubeconfig F [--bootstrap-kubeconfig F] [--cert-dir D] [--node-name N]
//	    [--ca-bundle F] [--once] [--rotations N] [--rotate-now] [--rotate-now-serving] [--wait 1h]
//	    [--rotation-wait 15m] [--expiration-seconds N] [--poll] [--serving --dns D --ip IP]
//	    [--discovery-endpoint URL --discovery-token T --discovery-token-ca-cert-hash H]
//	    [--metrics-bind-address IP:PORT] [--metrics-textfile F.prom] [--log-format text|json]
//	    [--ca-refresh-interval 10m] [--key pkcs11:token=T?module-path=M&pin-source=F | --key tpm: [--tcti T]]
//
// Without --once it runs as a daemon (SIGHUP: read the files again; SIGTERM: exit 0). The
// agent's `agent=go step=...` lines go to stdout; on failure it exits 1 with the typed reason,
// on a bad flag 2.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"kubeboot.dev/go/agentrun"
	"kubeboot.dev/go/hwkey"
	"kubeboot.dev/go/kubeboot"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	cfg                 agentrun.Config
	once, serving, skip bool
	dns, ips, pins      list
	endpoint, tok, tcti string
}

func flags(fs *agentrun.Flags, o *options) {
	c := &o.cfg.Agent
	*c = kubeboot.DefaultAgentConfig()
	c.CertDir = "/var/lib/kubelet/pki"
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "node kubeconfig to use or write")
	fs.StringVar(&c.BootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with the bootstrap token")
	fs.StringVar(&c.CertDir, "cert-dir", c.CertDir, "the certificate directory")
	fs.StringVar(&c.NodeName, "node-name", "", "node name (default: the current certificate's)")
	fs.StringVar(&c.CABundle, "ca-bundle", "", "CA bundle issued certificates must chain to")
	fs.BoolVar(&o.once, "once", false, "make the credentials usable, then exit (default: run as a daemon)")
	agentrun.Value(fs, "rotations", "daemon: exit after N rotations", &c.MaxRotations, agentrun.ParseCount)
	fs.BoolVar(&c.RotateNowClient, "rotate-now", false, "rotate the client certificate now")
	fs.BoolVar(&c.RotateNowServing, "rotate-now-serving", false, "rotate the serving certificate now")
	agentrun.Value(fs, "wait", "how long a bootstrap waits for its certificate (default 1h)", &c.BootstrapWait, agentrun.ParseDuration)
	agentrun.Value(fs, "rotation-wait", "how long a rotation waits (default 15m)", &c.RotationWait, agentrun.ParseDuration)
	agentrun.Value(fs, "expiration-seconds", "spec.expirationSeconds (>= 600)", &c.ExpirationSeconds, agentrun.ParseCount)
	fs.BoolVar(&c.Poll, "poll", false, "poll CSRs instead of watching them")
	fs.BoolVar(&o.serving, "serving", false, "also request and keep a kubelet serving certificate")
	fs.Var(&o.dns, "dns", "serving DNS name (repeatable)")
	agentrun.Value(fs, "ip", "serving IP address (repeatable)", new(string), func(s string) (string, error) {
		ip, err := agentrun.ParseIP(s)
		o.ips = append(o.ips, ip)
		return ip, err
	})
	fs.StringVar(&o.endpoint, "discovery-endpoint", "", "kubeadm-style discovery: https://host:port")
	fs.StringVar(&o.tok, "discovery-token", "", "discovery: the bootstrap token")
	fs.Var(&o.pins, "discovery-token-ca-cert-hash", "discovery: sha256:<hex> CA pin (repeatable)")
	fs.BoolVar(&o.skip, "discovery-token-unsafe-skip-ca-verification", false, "discovery without a pin")
	agentrun.Value(fs, "metrics-bind-address", "serve the kubelet's certificate metrics at http://IP:PORT/metrics", &o.cfg.MetricsAddr, agentrun.ParseAddress)
	fs.StringVar(&o.cfg.MetricsTextfile, "metrics-textfile", "", "also write them for node_exporter's textfile collector (a .prom file)")
	agentrun.Value(fs, "log-format", "text (agent=go step=... key=value) or json (one object per line)", &c.LogFormat, agentrun.ParseLogFormat)
	agentrun.Value(fs, "ca-refresh-interval", "daemon: how often to re-read the cluster's CA into <cert-dir>/ca.crt (0: never)", &c.CARefresh, agentrun.ParseDuration)
	agentrun.Value(fs, "key", "make every client key in a device: pkcs11:token=T?module-path=M&pin-source=F, or tpm:", &c.KeyDevice, agentrun.ParseKey)
	fs.StringVar(&c.Attestation, "attestation", "", "attest the bootstrap (with --key tpm:): the attestation key's certificate chain, as kubeboot device provision wrote it")
	fs.StringVar(&o.tcti, "tcti", "", "the TPM's TCTI (swtpm:host=H,port=P, device:/dev/tpmrm0; default TPM2TOOLS_TCTI)")
}

func main() {
	var o options
	fs := agentrun.NewFlags(os.Args[0])
	flags(fs, &o)
	fs.ParseOrExit(os.Args[1:])
	if o.cfg.Agent.Kubeconfig == "" || fs.NArg() != 0 {
		fs.SetOutput(os.Stderr)
		fs.Usage()
		os.Exit(2)
	}
	if err := run(&o); err != nil {
		fmt.Fprintln(os.Stderr, "kubeboot-go-agent:", err)
		os.Exit(1)
	}
}

// run runs the agent to its end: nil when done or stopped by SIGTERM/SIGINT.
func run(o *options) error {
	c := &o.cfg.Agent
	c.FrontEnd, c.Mode = "go", kubeboot.ModeRun
	if o.once {
		c.Mode = kubeboot.ModeOnce
	}
	if o.serving {
		c.Serving = &kubeboot.ServingConfig{DNSNames: o.dns, IPAddresses: o.ips}
	}
	if o.endpoint != "" {
		t, err := kubeboot.ParseToken(o.tok)
		if err != nil {
			return fmt.Errorf("--discovery-token: %w", err)
		}
		defer t.Close()
		c.Discovery = &kubeboot.DiscoveryConfig{Endpoint: o.endpoint, Token: t, Pins: o.pins,
			UnsafeSkipCAVerification: o.skip, Timeout: kubeboot.DefaultDiscoveryTimeout()}
	}
	o.cfg.Keys = &hwkey.Devices{TCTI: o.tcti}
	o.cfg.Lines, o.cfg.SystemdNotify, o.cfg.WakeOnSIGHUP = os.Stdout, true, true
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rt, err := agentrun.Start(ctx, o.cfg)
	if err != nil {
		return err
	}
	return rt.Wait()
}
