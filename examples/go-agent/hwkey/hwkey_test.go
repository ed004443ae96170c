package hwkey

// Against real devices, out of this process: swtpm (a TPM 2.0 simulator on loopback) and
// SoftHSM2 behind `p11-kit server` (the test loads only p11-kit's client module), with
// tpm2-tools, OpenSSL's tpm2 provider and pkcs11-tool as the independent readers. .ci/run
// installs them; without them these tests say so and skip.

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func need(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (.ci/run installs it)", tool)
		}
	}
}

func run(t testing.TB, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// swtpm starts a TPM simulator on 127.0.0.1 and returns its TCTI.
func swtpm(t testing.TB) string {
	need(t, "swtpm", "tpm2_load", "openssl")
	dir := t.TempDir()
	var port int
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		if c, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+1)); err == nil {
			c.Close()
			break
		}
	}
	cmd := exec.Command("swtpm", "socket", "--tpm2", "--flags", "not-need-init,startup-clear",
		"--tpmstate", "dir="+dir, "--server", fmt.Sprintf("type=tcp,port=%d,bindaddr=127.0.0.1", port),
		"--ctrl", fmt.Sprintf("type=tcp,port=%d,bindaddr=127.0.0.1", port+1))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port+1)); err == nil {
			c.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("swtpm:host=127.0.0.1,port=%d", port)
}

func verify(t *testing.T, s crypto.Signer, pub *ecdsa.PublicKey, msg []byte) {
	t.Helper()
	d := sha256.Sum256(msg)
	sig, err := s.Sign(nil, d[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if !ecdsa.VerifyASN1(pub, d[:], sig) {
		t.Fatal("the device's signature does not verify with its public key")
	}
}

func pubOfPEM(t *testing.T, b []byte) *ecdsa.PublicKey {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("no PEM: %s", b)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*ecdsa.PublicKey)
}

// A key this package makes is tpm2-tools' and OpenSSL's tpm2 provider's to load (the same
// storage key, the same blob format), with the attributes of a key that never leaves the TPM;
// a key the provider makes loads and signs here.
func TestTPMKeysLoadAcrossFrontEnds(t *testing.T) {
	tcti := swtpm(t)
	d := &Devices{TCTI: tcti}
	ref, pub, err := d.Generate("tpm", "kubelet-client-test")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(ref, []byte("-----BEGIN TSS2 PRIVATE KEY-----\n")) {
		t.Fatalf("%s", ref)
	}
	dir := t.TempDir()
	blob := filepath.Join(dir, "key.tss2.pem")
	if err := os.WriteFile(blob, ref, 0o600); err != nil {
		t.Fatal(err)
	}
	tools := []string{"TPM2TOOLS_TCTI=" + tcti}
	run(t, tools, "tpm2_load", "-r", blob, "-c", filepath.Join(dir, "key.ctx"))
	attrs := run(t, tools, "tpm2_readpublic", "-c", filepath.Join(dir, "key.ctx"))
	run(t, tools, "tpm2_flushcontext", "-t")
	if !bytes.Contains(attrs, []byte("value: fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign")) {
		t.Fatalf("attributes:\n%s", attrs)
	}
	prov := []string{"TPM2OPENSSL_TCTI=" + tcti}
	theirs := pubOfPEM(t, run(t, prov, "openssl", "pkey", "-provider", "tpm2", "-provider", "default", "-in", blob, "-pubout"))
	if !theirs.Equal(pub) {
		t.Fatal("OpenSSL's tpm2 provider reads another public key")
	}
	s, err := d.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, s, pub, []byte("kubeboot"))
	// The other way: a key OpenSSL's tpm2 provider makes.
	other := filepath.Join(dir, "openssl.tss2.pem")
	run(t, prov, "openssl", "genpkey", "-provider", "tpm2", "-algorithm", "EC", "-pkeyopt", "group:P-256", "-out", other)
	ob, _ := os.ReadFile(other)
	s2, err := d.Open(ob)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, s2, pubOfPEM(t, run(t, prov, "openssl", "pkey", "-provider", "tpm2", "-provider", "default", "-in", other, "-pubout")), []byte("x"))
	// Another TPM cannot load the blob: a typed error naming the TPM.
	d2 := &Devices{TCTI: swtpm(t)}
	if _, err := d2.Open(ref); err == nil || !strings.Contains(err.Error(), "tpm swtpm:host=127.0.0.1") {
		t.Fatalf("another TPM: %v", err)
	}
	if err := d.Destroy(ref); err != nil {
		t.Fatal(err)
	}
}

const p11Client = "/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so"

// softhsm starts SoftHSM2 behind p11-kit server with a token "gotest" (user PIN 1234) and
// returns the device URI and the directory.
func softhsm(t testing.TB) (string, string) {
	need(t, "softhsm2-util", "p11-kit", "pkcs11-tool")
	module := "/usr/lib/softhsm/libsofthsm2.so"
	dir := t.TempDir()
	conf := filepath.Join(dir, "softhsm2.conf")
	os.MkdirAll(filepath.Join(dir, "tokens"), 0o700)
	os.WriteFile(conf, []byte("directories.tokendir = "+dir+"/tokens\nobjectstore.backend = file\n"), 0o600)
	env := []string{"SOFTHSM2_CONF=" + conf}
	run(t, env, "softhsm2-util", "--init-token", "--free", "--label", "gotest", "--so-pin", "5678", "--pin", "1234")
	sock := filepath.Join(dir, "p11.sock")
	srv := exec.Command("p11-kit", "server", "-f", "-n", sock, "--provider", module, "pkcs11:token=gotest")
	srv.Env = append(os.Environ(), env...)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Setenv("P11_KIT_SERVER_ADDRESS", "unix:path="+sock)
	pin := filepath.Join(dir, "pin")
	os.WriteFile(pin, []byte("1234\n"), 0o600)
	return "pkcs11:token=gotest?module-path=" + p11Client + "&pin-source=" + pin, dir
}

// SoftHSM2 behind p11-kit server: a key made through crypto11 is sensitive and never
// extractable (pkcs11-tool reads it), signs, and is destroyed; a wrong PIN and a missing object
// are errors naming the token.
func TestPKCS11Token(t *testing.T) {
	device, dir := softhsm(t)
	// A wrong PIN (first: a token logged in once stays logged in for this process).
	os.WriteFile(filepath.Join(dir, "bad"), []byte("9999\n"), 0o600)
	bad := "pkcs11:token=gotest?module-path=" + p11Client + "&pin-source=" + dir + "/bad"
	_, _, err := (&Devices{}).Generate(bad, "x")
	if err == nil || !strings.Contains(err.Error(), "pkcs11 token=gotest") {
		t.Fatalf("wrong PIN: %v", err)
	}
	d := &Devices{}
	ref, pub, err := d.Generate(device, "kubelet-client-test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, s, pub, []byte("kubeboot"))
	objects := run(t, nil, "pkcs11-tool", "--module", p11Client, "--login", "--pin", "1234", "--list-objects")
	if !bytes.Contains(objects, []byte("Access:     sensitive, always sensitive, never extractable, local")) {
		t.Fatalf("%s", objects)
	}
	if err := d.Destroy(ref); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Open(ref); err == nil || !strings.Contains(err.Error(), "pkcs11 token=gotest: no private key object=kubelet-client-test") {
		t.Fatalf("after destroy: %v", err)
	}
	if err := d.Destroy(ref); err != nil {
		t.Fatalf("destroying a key that is gone: %v", err)
	}
	// After a login (the signer's token closed with it), a wrong PIN is still refused.
	_ = s.(io.Closer).Close()
	if _, _, err := (&Devices{}).Generate(bad, "y"); err == nil {
		t.Fatal("a wrong PIN after a login made a key")
	}
}

// BenchmarkSign: one ECDSA P-256 signature of a CSR-sized message with a software key
// (crypto/ecdsa), in SoftHSM2 behind p11-kit server (crypto11), and in swtpm (go-tpm: connect,
// recreate the storage key, load, sign, flush), side by side.
func BenchmarkSign(b *testing.B) {
	msg := bytes.Repeat([]byte{0x30}, 300)
	soft, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	device, _ := softhsm(b)
	d := &Devices{TCTI: swtpm(b)}
	tref, _, err := d.Generate("tpm", "bench")
	if err != nil {
		b.Fatal(err)
	}
	pref, _, err := d.Generate(device, "bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ref  []byte
	}{{"software", nil}, {"pkcs11-softhsm", pref}, {"tpm-swtpm", tref}} {
		var s crypto.Signer = soft
		if c.ref != nil {
			if s, err = d.Open(c.ref); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				dg := sha256.Sum256(msg)
				if _, err := s.Sign(rand.Reader, dg[:], crypto.SHA256); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
