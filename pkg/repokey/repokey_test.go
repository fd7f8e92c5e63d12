package repokey

import (
	"bytes"
	"crypto"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

func generate(t testing.TB, name string) []byte {
	t.Helper()
	key, err := Generate(name, "repo@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestGenerateParseRoundTrip(t *testing.T) {
	armored := generate(t, "Example repo")
	if !bytes.HasPrefix(armored, []byte("-----BEGIN PGP PRIVATE KEY BLOCK-----")) {
		t.Fatalf("not an armored private key: %.40q", armored)
	}
	k, err := Parse(armored)
	if err != nil {
		t.Fatal(err)
	}
	if fps := k.Fingerprints(); len(fps) != 1 || len(fps[0]) != 40 {
		t.Fatalf("fingerprints %v", fps)
	}
	// The key is Ed25519 (EdDSA), signing-capable, and its self-signature hashes with SHA-256.
	list, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		t.Fatal(err)
	}
	e := list[0]
	if e.PrimaryKey.PubKeyAlgo != packet.PubKeyAlgoEdDSA {
		t.Errorf("algorithm %v, want EdDSA", e.PrimaryKey.PubKeyAlgo)
	}
	if len(e.Subkeys) != 0 {
		t.Errorf("%d subkeys, want none", len(e.Subkeys))
	}
	for name, id := range e.Identities {
		if !strings.Contains(name, "Example repo <repo@example.com>") {
			t.Errorf("identity %q", name)
		}
		if id.SelfSignature.Hash != crypto.SHA256 {
			t.Errorf("self-signature hash %v, want SHA-256", id.SelfSignature.Hash)
		}
		if !id.SelfSignature.FlagSign {
			t.Error("the primary key is not marked signing-capable")
		}
	}
	// The public keys read back as exactly that key, with no secret.
	pub, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(k.PublicKeys()))
	if err != nil {
		t.Fatal(err)
	}
	if len(pub) != 1 || pub[0].PrivateKey != nil || fmt.Sprintf("%X", pub[0].PrimaryKey.Fingerprint) != k.Fingerprints()[0] {
		t.Fatalf("public keys %v", pub)
	}
	if strings.Contains(string(k.PublicKeys()), "PRIVATE") {
		t.Error("key.asc holds a private key block")
	}
	if s := fmt.Sprintf("%v %+v %#v", k, k, k); strings.Contains(s, "BEGIN") || !strings.Contains(s, k.Fingerprints()[0]) {
		t.Errorf("the keyring formats as %q", s)
	}
	// Two keys generated are two keys.
	other, _ := Parse(generate(t, ""))
	if other.Fingerprints()[0] == k.Fingerprints()[0] {
		t.Error("two generated keys share a fingerprint")
	}
}

func TestSignVerify(t *testing.T) {
	k, err := Parse(generate(t, "Signer"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(k.PublicKeys()))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("Origin: Slipway\nSuite: stable\n-dash line\nFrom the start\n")

	clear, err := k.ClearSign(msg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := clearsign.Decode(clear)
	if b == nil {
		t.Fatalf("InRelease does not decode as clear-signed: %s", clear)
	}
	if !bytes.Equal(b.Plaintext, bytes.TrimSuffix(msg, []byte("\n"))) && !bytes.Equal(b.Plaintext, msg) {
		t.Errorf("clear-signed text %q", b.Plaintext)
	}
	if _, err := b.VerifySignature(pub, nil); err != nil {
		t.Errorf("clear signature does not verify: %v", err)
	}
	if !bytes.Contains(clear, []byte("Hash: SHA256")) {
		t.Errorf("InRelease does not hash with SHA-256:\n%s", clear)
	}

	detached, err := k.DetachSign(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openpgp.CheckArmoredDetachedSignature(pub, bytes.NewReader(msg), bytes.NewReader(detached), nil); err != nil {
		t.Errorf("detached signature does not verify: %v", err)
	}
	if _, err := openpgp.CheckArmoredDetachedSignature(pub, bytes.NewReader(append([]byte("x"), msg...)), bytes.NewReader(detached), nil); err == nil {
		t.Error("a detached signature verifies another message")
	}
	block, err := armor.Decode(bytes.NewReader(detached))
	if err != nil || block.Type != "PGP SIGNATURE" {
		t.Fatalf("detached signature armor %v %v", block, err)
	}
	p, err := packet.Read(block.Body)
	if err != nil {
		t.Fatal(err)
	}
	if sig, ok := p.(*packet.Signature); !ok || sig.Hash != crypto.SHA256 {
		t.Errorf("detached signature packet %T %+v, want SHA-256", p, p)
	}
}

// gpgEnv runs gpg tools with a scratch home.
func gpgRun(t *testing.T, home string, name string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "GNUPGHOME="+home, "LC_ALL=C")
	return cmd.CombinedOutput()
}

func needGPG(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"gpg", "gpgv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	home := t.TempDir()
	os.Chmod(home, 0o700)
	return home
}

// TestGPGVVerifies checks the signatures with the verifier apt runs (gpgv), against key.asc made
// into a binary keyring by gpg --dearmor, as the setup instructions do. With two keys (rotation),
// the first signs and gpgv accepts key.asc holding both.
func TestGPGVVerifies(t *testing.T) {
	home := needGPG(t)
	dir := t.TempDir()
	first, second := generate(t, "New key"), generate(t, "Old key")
	k, err := Parse(append(append([]byte{}, first...), second...))
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Fingerprints()) != 2 {
		t.Fatalf("fingerprints %v", k.Fingerprints())
	}
	asc := filepath.Join(dir, "key.asc")
	os.WriteFile(asc, k.PublicKeys(), 0o600)
	keyring := filepath.Join(dir, "repo.gpg")
	if out, err := gpgRun(t, home, "gpg", "--batch", "--dearmor", "-o", keyring, asc); err != nil {
		t.Fatalf("gpg --dearmor: %v\n%s", err, out)
	}
	listing, err := gpgRun(t, home, "gpg", "--batch", "--with-colons", "--show-keys", keyring)
	if err != nil {
		t.Fatalf("gpg --show-keys: %v\n%s", err, listing)
	}
	for _, fp := range k.Fingerprints() {
		if !strings.Contains(string(listing), "fpr:::::::::"+fp+":") {
			t.Errorf("key.asc lacks %s:\n%s", fp, listing)
		}
	}

	release := []byte("Origin: Slipway\nLabel: test\nSuite: stable\nCodename: stable\n")
	inRelease, err := k.ClearSign(release)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "InRelease"), inRelease, 0o600)
	out, err := gpgRun(t, home, "gpgv", "--status-fd", "1", "--keyring", keyring, filepath.Join(dir, "InRelease"))
	if err != nil {
		t.Fatalf("gpgv InRelease: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "VALIDSIG "+k.Fingerprints()[0]) {
		t.Errorf("InRelease is not signed by the first key:\n%s", out)
	}

	os.WriteFile(filepath.Join(dir, "Release"), release, 0o600)
	sig, err := k.DetachSign(release)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "Release.gpg"), sig, 0o600)
	out, err = gpgRun(t, home, "gpgv", "--status-fd", "1", "--keyring", keyring, filepath.Join(dir, "Release.gpg"), filepath.Join(dir, "Release"))
	if err != nil {
		t.Fatalf("gpgv Release.gpg: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "VALIDSIG "+k.Fingerprints()[0]) {
		t.Errorf("Release.gpg is not signed by the first key:\n%s", out)
	}

	// One byte changed: gpgv refuses.
	tampered := bytes.Replace(release, []byte("test"), []byte("tesT"), 1)
	os.WriteFile(filepath.Join(dir, "Release"), tampered, 0o600)
	if out, err := gpgRun(t, home, "gpgv", "--keyring", keyring, filepath.Join(dir, "Release.gpg"), filepath.Join(dir, "Release")); err == nil {
		t.Errorf("gpgv accepts a changed Release:\n%s", out)
	}
}

// TestParseGPGExport reads a key as an operator may make it instead: gpg's own, exported armored.
func TestParseGPGExport(t *testing.T) {
	home := needGPG(t)
	if out, err := gpgRun(t, home, "gpg", "--batch", "--passphrase", "", "--quick-gen-key", "GPG made <gpg@example.com>", "ed25519", "sign", "never"); err != nil {
		t.Fatalf("gpg --quick-gen-key: %v\n%s", err, out)
	}
	armored, err := gpgRun(t, home, "gpg", "--batch", "--armor", "--export-secret-keys", "gpg@example.com")
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	k, err := Parse(armored)
	if err != nil {
		t.Fatalf("a gpg-made key: %v", err)
	}
	if _, err := k.ClearSign([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	public, _ := gpgRun(t, home, "gpg", "--batch", "--armor", "--export", "gpg@example.com")
	if _, err := Parse(public); err == nil || !strings.Contains(err.Error(), "public key") {
		t.Errorf("gpg's public key export: %v", err)
	}
}

func TestParseRefuses(t *testing.T) {
	good := generate(t, "Good")
	k, _ := Parse(good)

	list, _ := openpgp.ReadArmoredKeyRing(bytes.NewReader(good))
	if err := list[0].EncryptPrivateKeys([]byte("secret passphrase"), nil); err != nil {
		t.Fatal(err)
	}
	var enc bytes.Buffer
	w, _ := armor.Encode(&enc, openpgp.PrivateKeyType, nil)
	if err := list[0].SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()

	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"empty":      {nil, "no armored OpenPGP key"},
		"garbage":    {[]byte("this is not a key at all\x00\xff"), "no armored OpenPGP key"},
		"public key": {k.PublicKeys(), "is a public key"},
		"encrypted":  {enc.Bytes(), "passphrase"},
		"signature":  {mustSign(t, k), "not a PGP PRIVATE KEY BLOCK"},
		"broken armor": {[]byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n!!!!\n-----END PGP PRIVATE KEY BLOCK-----\n"),
			"key block 1"},
		"twice":         {append(append([]byte{}, good...), good...), "twice"},
		"public second": {append(append([]byte{}, good...), k.PublicKeys()...), "key block 2 is a public key"},
		"too large":     {bytes.Repeat([]byte("a"), MaxFileSize+1), "larger than"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			for _, line := range strings.Split(string(good), "\n")[2:5] {
				if len(line) > 8 && strings.Contains(err.Error(), line) {
					t.Errorf("the error quotes the key: %v", err)
				}
			}
		})
	}
}

func mustSign(t *testing.T, k *Keyring) []byte {
	sig, err := k.DetachSign([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "repo.key")
	os.WriteFile(path, generate(t, "Loaded"), 0o600)
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "SLIPWAY_REPO_KEY_FILE: cannot read") {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(path, []byte("hunter2-not-a-key"), 0o600)
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), "SLIPWAY_REPO_KEY_FILE: ") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("junk file: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	good := generate(f, "Fuzz")
	k, _ := Parse(good)
	f.Add(good)
	f.Add(k.PublicKeys())
	f.Add([]byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxx\n-----END PGP PRIVATE KEY BLOCK-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := Parse(data)
		if err != nil {
			return
		}
		if len(k.Fingerprints()) == 0 {
			t.Fatal("a keyring without keys")
		}
		if _, err := k.ClearSign([]byte("msg\n")); err != nil {
			t.Fatalf("a parsed key cannot sign: %v", err)
		}
	})
}
