package kubeboot_test

import (
	"errors"
	"fmt"

	"kubeboot.dev/go/kubeboot"
)

// A bootstrap token: its ID, the Secret that holds it and the user it authenticates as; the
// secret half is never printed.
func ExampleParseToken() {
	t, err := kubeboot.ParseToken("abcdef.0123456789abcdef")
	if err != nil {
		panic(err)
	}
	defer t.Close()
	fmt.Println(t.ID(), t.SecretName(), t.UserName())
	fmt.Println(t)
	_, err = kubeboot.ParseToken("ABCDEF.0123456789abcdef")
	fmt.Println(errors.Is(err, kubeboot.ErrInvalidToken))
	// Output:
	// abcdef bootstrap-token-abcdef system:bootstrap:abcdef
	// abcdef.<redacted>
	// true
}

// The node's key and the name of its bootstrap CSR, as the kubelet names it: the same key gives
// the same node-csr-<digest>, so a restarted node finds its own CSR.
func ExampleNodeCSRName() {
	entropy := make([]byte, 32)
	for i := range entropy {
		entropy[i] = byte(i + 1) // from your CSPRNG (crypto/rand) in real use
	}
	key, err := kubeboot.KeyFromEntropy(entropy)
	if err != nil {
		panic(err)
	}
	defer key.Close()
	a, _ := kubeboot.NodeCSRName(key, "node-1")
	b, _ := kubeboot.NodeCSRName(key, "node-1")
	fmt.Println(a == b, len(a), a[:9])
	// Output: true 52 node-csr-
}

// When to rotate a certificate valid for 100 days: between 70 % and 90 % of its lifetime.
func ExampleParseCAPin() {
	_, err := kubeboot.ParseCAPin("sha256:" + "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	fmt.Println(err)
	_, err = kubeboot.ParseCAPin("md5:0011")
	fmt.Println(errors.Is(err, kubeboot.ErrInvalidPin))
	// Output:
	// <nil>
	// true
}
