package hwkey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ThalesGroup/crypto11"

	"kubeboot.dev/go/kubeboot"
)

// tokens opens the token of a URI for each use and closes it after: a token's login lasts as
// long as a session of this process is open, so a wrong PIN in another URI must meet a token
// nobody here is logged in to (crypto11 loads and initialises a module once per process and
// finalises it with its last context).
type tokens struct{}

// token is a URI's token: its name for messages, and its context.
type token struct {
	name string
	ctx  *crypto11.Context
}

// tokenSigner is a key with the token context it was found in: Close closes that context.
type tokenSigner struct {
	crypto11.Signer
	ctx *crypto11.Context
}

func (s *tokenSigner) Close() error { return s.ctx.Close() }

func attr(uri, name string) (string, error) {
	v, _, err := kubeboot.PKCS11URIAttribute(uri, name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", uri, err)
	}
	return string(v), nil
}

// context opens the token a URI names: its module-path, token= (or slot-id=), and the
// user PIN from pin-source.
func (t *tokens) context(uri string) (token, error) {
	var v [4]string
	for i, n := range []string{"module-path", "token", "slot-id", "pin-source"} {
		s, err := attr(uri, n)
		if err != nil {
			return token{}, err
		}
		v[i] = s
	}
	module, label, slot, pinSource := v[0], v[1], v[2], v[3]
	tk := token{name: "pkcs11 token=" + label}
	if module == "" {
		return tk, fmt.Errorf("%s: the URI names no module-path", tk.name)
	}
	if _, err := os.Stat(module); err != nil {
		return tk, fmt.Errorf("%s: module %s: no such file", tk.name, module)
	}
	cfg := &crypto11.Config{Path: module}
	if slot != "" {
		n, err := strconv.Atoi(slot)
		if err != nil {
			return tk, fmt.Errorf("%s: slot-id %q", tk.name, slot)
		}
		cfg.SlotNumber = &n
	} else {
		cfg.TokenLabel = label
	}
	if pinSource != "" {
		b, err := os.ReadFile(strings.TrimPrefix(pinSource, "file:"))
		if err != nil {
			return tk, fmt.Errorf("%s: pin-source %s: cannot read it", tk.name, pinSource)
		}
		cfg.Pin = strings.TrimRight(string(b), "\r\n")
		clear(b)
	} else {
		cfg.LoginNotSupported = true
	}
	c, err := crypto11.Configure(cfg)
	cfg.Pin = ""
	if err != nil {
		return tk, fmt.Errorf("%s: %v", tk.name, err)
	}
	tk.ctx = c
	return tk, nil
}

// generate makes a key pair labelled label with a random 16-byte CKA_ID: crypto11 makes the
// private key CKA_SENSITIVE, not CKA_EXTRACTABLE, CKA_SIGN, CKA_TOKEN.
func (t *tokens) generate(device, label string) ([]byte, *ecdsa.PublicKey, error) {
	tk, err := t.context(device)
	if err != nil {
		return nil, nil, err
	}
	defer tk.ctx.Close()
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, nil, err
	}
	s, err := tk.ctx.GenerateECDSAKeyPairWithLabel(id, []byte(label), elliptic.P256())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: C_GenerateKeyPair: %v", tk.name, err)
	}
	pub, ok := s.Public().(*ecdsa.PublicKey)
	if !ok {
		return nil, nil, fmt.Errorf("%s: the new key is not an ECDSA key", tk.name)
	}
	ref, err := kubeboot.PKCS11KeyReference(device, label, id)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the key's reference: %w", tk.name, err)
	}
	return ref, pub, nil
}

// find is the key pair a reference's URI names (object= and id=); nil when there is none.
func (t *tokens) find(reference []byte) (token, crypto11.Signer, string, error) {
	uri, err := kubeboot.KeyReferenceURI(reference)
	if err != nil {
		return token{}, nil, "", fmt.Errorf("the PKCS#11 key reference: %w", err)
	}
	tk, err := t.context(uri)
	if err != nil {
		return tk, nil, "", err
	}
	label, _, err := kubeboot.PKCS11URIAttribute(uri, "object")
	if err != nil {
		return tk, nil, "", err
	}
	id, _, err := kubeboot.PKCS11URIAttribute(uri, "id")
	if err != nil {
		return tk, nil, "", err
	}
	if len(id) == 0 {
		id = nil
	}
	found, err := tk.ctx.FindKeyPairs(id, label)
	switch {
	case err != nil:
		return tk, nil, string(label), fmt.Errorf("%s object=%s: %v", tk.name, label, err)
	case len(found) > 1:
		return tk, nil, string(label), fmt.Errorf("%s: more than one private key object=%s", tk.name, label)
	case len(found) == 0:
		return tk, nil, string(label), nil
	}
	return tk, found[0], string(label), nil
}

// open is the key a reference names, with its token open until the signer's Close.
func (t *tokens) open(reference []byte) (crypto.Signer, error) {
	tk, s, label, err := t.find(reference)
	if err == nil && s == nil {
		err = fmt.Errorf("%s: no private key object=%s", tk.name, label)
	}
	if err != nil {
		if tk.ctx != nil {
			_ = tk.ctx.Close()
		}
		return nil, err
	}
	return &tokenSigner{Signer: s, ctx: tk.ctx}, nil
}

func (t *tokens) destroy(reference []byte) error {
	tk, s, label, err := t.find(reference)
	if tk.ctx != nil {
		defer tk.ctx.Close()
	}
	if err != nil || s == nil {
		return err // (no such key: it is gone already)
	}
	if err := s.Delete(); err != nil {
		return fmt.Errorf("%s object=%s: C_DestroyObject: %v", tk.name, label, err)
	}
	return nil
}
