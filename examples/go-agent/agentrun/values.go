package agentrun

// What users type: one small function per kind of value, for every Go front-end's flags (the
// Go agent's, an embedding program's). Each returns a clear error and changes nothing.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"kubeboot.dev/go/kubeboot"
)

// ParseDuration is a wait or an interval, as the core's grammar reads it (kubeboot.ParseDuration).
func ParseDuration(s string) (time.Duration, error) { return kubeboot.ParseDuration(s) }

// ParseCount is a count or a number of seconds: a decimal integer that fits 32 bits.
func ParseCount(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("want a number from 0 to %d", uint32(1<<32-1))
	}
	return uint32(n), nil
}

// ParseKey is --key: where client keys are made, as AgentConfig.KeyDevice ("" for software,
// or the device), by the core's grammar (kubeboot.ParseKeyDevice).
func ParseKey(s string) (string, error) { return kubeboot.ParseKeyDevice(s) }

// ParseIP is an IP address as text (a serving certificate's SAN), checked by the core's grammar.
func ParseIP(s string) (string, error) { return s, kubeboot.CheckIP(s) }

// ParseAddress is a listening address (IPv4:port, [IPv6]:port), checked by the core's grammar.
func ParseAddress(s string) (string, error) { return s, kubeboot.CheckBindAddress(s) }

// ParseLogFormat is text (agent=go step=... key=value) or json (one object per line).
func ParseLogFormat(s string) (kubeboot.LogFormat, error) {
	switch s {
	case "text":
		return kubeboot.LogText, nil
	case "json":
		return kubeboot.LogJSON, nil
	}
	return 0, fmt.Errorf("%s: text or json", s)
}

// Flags is a program's flag set whose values the core's grammar reads (the Parse* functions
// here): a refused value prints the grammar's one line and exits 2, as every kubeboot front-end
// does; another usage error prints the error and the usage and exits 2; -h the usage, exit 0.
type Flags struct {
	*flag.FlagSet
	refused string
}

// NewFlags is an empty set for the program name.
func NewFlags(name string) *Flags {
	f := &Flags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.SetOutput(io.Discard)
	return f
}

// Value is a flag whose text parse (one of the Parse* functions) reads into *dst.
func Value[T any](f *Flags, name, usage string, dst *T, parse func(string) (T, error)) {
	f.Func(name, usage, func(s string) (err error) {
		if *dst, err = parse(s); err != nil && f.refused == "" {
			f.refused = kubeboot.FlagRefusal("--"+name, s, err)
		}
		return err
	})
}

// ParseOrExit parses args, or exits as Flags says.
func (f *Flags) ParseOrExit(args []string) {
	err := f.Parse(args)
	if err == nil {
		return
	}
	f.SetOutput(os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		f.Usage()
		os.Exit(0)
	case f.refused != "":
		fmt.Fprintln(os.Stderr, f.refused)
	default:
		fmt.Fprintln(os.Stderr, err)
		f.Usage()
	}
	os.Exit(2)
}
