module kubeboot.dev/go

go 1.25.0

require (
	github.com/ThalesGroup/crypto11 v1.6.2
	github.com/google/go-tpm v0.9.8
)

require (
	github.com/miekg/pkcs11 v1.1.2 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/thales-e-security/pool v0.0.2 // indirect
	golang.org/x/sys v0.8.0 // indirect
)
