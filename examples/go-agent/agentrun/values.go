package agentrun

// What users type: one small function per kind of value, for every Go front-end's flags (the
// Go agent's, an embedding program's). Each returns a clear error and changes nothing.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"kubeboot.dev/go/kubeboot"
)

// ParseDuration is a wait or an interval: a Go duration ("90s", "15m", "1h"), not negative.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// ParseCount is a count or a number of seconds: a decimal integer that fits 32 bits.
func ParseCount(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("want a number from 0 to %d", uint32(1<<32-1))
	}
	return uint32(n), nil
}

// ParseKey is --key: where client keys are made, as AgentConfig.KeyDevice ("" for software,
// "tpm", or a token's pkcs11: URI, which the agent checks).
func ParseKey(s string) (string, error) {
	switch {
	case s == "":
		return "", nil
	case s == "tpm:":
		return "tpm", nil
	case strings.HasPrefix(s, "tpm:"):
		return "", fmt.Errorf("%s: the agent keeps its TPM keys in the cert dir; give tpm:", s)
	case strings.HasPrefix(s, "pkcs11:"):
		return s, nil
	}
	return "", fmt.Errorf("%s: the agent makes its own keys; give a device (pkcs11:... or tpm:) or none", s)
}

// ParseIP is an IP address as text (a serving certificate's SAN).
func ParseIP(s string) (string, error) {
	if net.ParseIP(s) == nil {
		return "", fmt.Errorf("%s: not an IP address", s)
	}
	return s, nil
}

// ParseAddress is a listening address, IP:PORT.
func ParseAddress(s string) (string, error) {
	host, _, err := net.SplitHostPort(s)
	if err != nil || net.ParseIP(host) == nil {
		return "", fmt.Errorf("%s: want IP:PORT", s)
	}
	return s, nil
}

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
