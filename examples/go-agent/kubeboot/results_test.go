package kubeboot

import (
	"bufio"
	"bytes"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goName is the Go constant for a header result name: KUBEBOOT_RESULT_CSR_DENIED → CodeCSRDenied.
func goName(header string) string {
	initialisms := map[string]string{"OK": "OK", "UTF8": "UTF8", "CSR": "CSR", "UID": "UID", "HTTP": "HTTP",
		"DNS": "DNS", "IP": "IP", "CA": "CA", "SANS": "SANs", "URI": "URI", "JWS": "JWS", "IO": "IO"}
	var b strings.Builder
	b.WriteString("Code")
	for _, w := range strings.Split(strings.TrimPrefix(header, "KUBEBOOT_RESULT_"), "_") {
		if s, ok := initialisms[w]; ok {
			b.WriteString(s)
		} else {
			b.WriteString(w[:1] + strings.ToLower(w[1:]))
		}
	}
	return b.String()
}

// generatedResults is results.go as generated from include/kubeboot.h's kubeboot_result enum.
func generatedResults(t *testing.T) []byte {
	h, err := os.ReadFile(filepath.Join("..", "..", "..", "include", "kubeboot.h"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^\s+(KUBEBOOT_RESULT_[A-Z0-9_]+) = (\d+),$`)
	var out bytes.Buffer
	out.WriteString("// Code generated from include/kubeboot.h by TestResultConstantsAreTheHeader; DO NOT EDIT.\n")
	out.WriteString("// Regenerate: KUBEBOOT_BLESS=1 go test -run TestResultConstantsAreTheHeader ./kubeboot\n\n")
	out.WriteString("package kubeboot\n\n/*\n#include \"kubeboot.h\"\n*/\nimport \"C\"\n\n")
	out.WriteString("// Result codes of libkubeboot (stable; equal to `kubeboot::Error::code()`), one per\n")
	out.WriteString("// KUBEBOOT_RESULT_* of the C header, with the header's values.\nconst (\n")
	s := bufio.NewScanner(bytes.NewReader(h))
	n := 0
	for s.Scan() {
		if m := re.FindStringSubmatch(s.Text()); m != nil {
			out.WriteString("\t" + goName(m[1]) + " uint32 = C." + m[1] + " // " + m[2] + "\n")
			n++
		}
	}
	out.WriteString(")\n")
	if n < 80 {
		t.Fatalf("only %d result codes in the header", n)
	}
	src, err := format.Source(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestResultConstantsAreTheHeader(t *testing.T) {
	want := generatedResults(t)
	if os.Getenv("KUBEBOOT_BLESS") != "" {
		if err := os.WriteFile("results.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile("results.go")
	if err != nil || !bytes.Equal(have, want) {
		t.Fatalf("results.go is stale: KUBEBOOT_BLESS=1 go test -run TestResultConstantsAreTheHeader ./kubeboot")
	}
	// Every constant has a name in the library's catalogue.
	n := 0
	re := regexp.MustCompile(`\t(Code\w+)\s+uint32 = C\.(\w+)\s+// (\d+)`)
	for _, m := range re.FindAllStringSubmatch(string(have), -1) {
		var code uint32
		for _, c := range m[3] {
			code = code*10 + uint32(c-'0')
		}
		if ResultName(code) == "unknown" {
			t.Fatalf("%s: the library has no name for %d", m[1], code)
		}
		n++
	}
	if n < 80 {
		t.Fatalf("only %d constants", n)
	}
}
