// Package repokey holds the installation's OpenPGP repository signing keys: the key that signs
// the APT and DNF repository indexes (InRelease, Release.gpg, repomd.xml.asc) and the public keys
// clients pin (key.asc). The packets are github.com/ProtonMail/go-crypto's; nothing here writes one
// by hand.
//
// A key file holds one or more armored private keys, concatenated. The first signs; all of them
// are published, so a new key can be announced before it signs (rotation: add the new key second,
// wait until clients have fetched key.asc, swap the order, later drop the old key).
//
// Every signature and every self-signature Generate makes hashes with SHA-256: apt and gpgv on
// Debian 12 and later reject SHA-1.
package repokey

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// MaxFileSize bounds a key file: a few keys are a few kilobytes.
const MaxFileSize = 1 << 20

// maxKeys bounds how many keys a file may hold (a rotation needs two).
const maxKeys = 8

// EnvVar is the setting that names the key file.
const EnvVar = "SLIPWAY_REPO_KEY_FILE"

// Keyring holds the installation's repository signing keys: the first signs, all are published (rotation).
type Keyring struct {
	entities []*openpgp.Entity
	signer   *packet.PrivateKey // the first key's signing key (its primary or a signing subkey)
	public   []byte             // armored public keys of every entity
}

// String never shows key material: only the fingerprints.
func (k *Keyring) String() string {
	return "repokey.Keyring{" + strings.Join(k.Fingerprints(), ", ") + "}"
}

// GoString is String, for %#v.
func (k *Keyring) GoString() string { return k.String() }

// Parse reads one or more armored OpenPGP private keys (concatenated). A public key, a key
// protected by a passphrase, a key that cannot sign, or anything that is not an armored private
// key is refused with an error that names the problem; errors never quote the file.
func Parse(armored []byte) (*Keyring, error) {
	if len(armored) > MaxFileSize {
		return nil, fmt.Errorf("the key file is larger than %d bytes: it should hold one or two armored private keys", MaxFileSize)
	}
	blocks := splitArmor(armored)
	if len(blocks) == 0 {
		return nil, errors.New("no armored OpenPGP key in the file (expected -----BEGIN PGP PRIVATE KEY BLOCK-----; make one with `slipway repo-key generate`)")
	}
	k := &Keyring{}
	seen := map[string]bool{}
	now := time.Now()
	for i, b := range blocks {
		block, err := armor.Decode(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("key block %d is not valid OpenPGP armor", i+1)
		}
		switch block.Type {
		case openpgp.PrivateKeyType:
		case openpgp.PublicKeyType:
			return nil, fmt.Errorf("key block %d is a public key: the file must hold the private key (gpg --armor --export-secret-keys, or `slipway repo-key generate`)", i+1)
		default:
			return nil, fmt.Errorf("key block %d is a %q, not a PGP PRIVATE KEY BLOCK", i+1, block.Type)
		}
		list, err := openpgp.ReadKeyRing(io.LimitReader(block.Body, MaxFileSize))
		if err != nil {
			return nil, fmt.Errorf("key block %d does not read as an OpenPGP private key: %s", i+1, safeError(err))
		}
		for _, e := range list {
			fp := fingerprint(e)
			if e.PrivateKey == nil {
				return nil, fmt.Errorf("key %s holds no private key", fp)
			}
			if seen[fp] {
				return nil, fmt.Errorf("key %s is in the file twice", fp)
			}
			seen[fp] = true
			if len(k.entities) == maxKeys {
				return nil, fmt.Errorf("the file holds more than %d keys", maxKeys)
			}
			sk, ok := e.SigningKey(now)
			if !ok || sk.PrivateKey == nil {
				return nil, fmt.Errorf("key %s has no valid signing key (expired, revoked, or not signing-capable)", fp)
			}
			if sk.PrivateKey.Dummy() {
				return nil, fmt.Errorf("key %s: its signing key's secret is not in the file (a stub, as gpg exports keys kept on a card)", fp)
			}
			if sk.PrivateKey.Encrypted {
				return nil, fmt.Errorf("key %s is protected by a passphrase: Slipway signs unattended and needs it without one (gpg --passwd to clear it, then export again)", fp)
			}
			if k.signer == nil {
				k.signer = sk.PrivateKey
			}
			k.entities = append(k.entities, e)
		}
	}
	if len(k.entities) == 0 {
		return nil, errors.New("the file holds no OpenPGP key")
	}
	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	for _, e := range k.entities {
		if err := e.Serialize(w); err != nil {
			return nil, fmt.Errorf("key %s: its public key cannot be written: %s", fingerprint(e), safeError(err))
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	pub.WriteByte('\n')
	k.public = pub.Bytes()
	return k, nil
}

// Load reads and parses the key file at path. Its errors name the setting, never the content.
func Load(path string) (*Keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the file", EnvVar)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the file", EnvVar)
	}
	k, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", EnvVar, err)
	}
	return k, nil
}

// config is what every signature is made with: SHA-256, and go-crypto's salt notation (a
// non-critical notation that gpgv ignores) against fault attacks on EdDSA.
func config() *packet.Config {
	return &packet.Config{DefaultHash: crypto.SHA256}
}

// Generate makes a new armored Ed25519 private key (a signing and certifying primary key, no
// subkey, no passphrase, no expiry) whose self-signature hashes with SHA-256.
func Generate(name, email string) ([]byte, error) {
	if name == "" {
		name = "Slipway repository signing key"
	}
	cfg := &packet.Config{
		Algorithm:   packet.PubKeyAlgoEdDSA, // Ed25519 as gpg 2.2 and apt know it (EdDSA, curve Ed25519)
		Curve:       packet.Curve25519,
		DefaultHash: crypto.SHA256,
	}
	e, err := openpgp.NewEntity(name, "", email, cfg)
	if err != nil {
		return nil, fmt.Errorf("generating the key: %w", err)
	}
	e.Subkeys = nil // only signing: the encryption subkey NewEntity adds has no use here
	var out bytes.Buffer
	w, err := armor.Encode(&out, openpgp.PrivateKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		return nil, fmt.Errorf("writing the key: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// ClearSign returns msg clear-signed by the first key (InRelease).
func (k *Keyring) ClearSign(msg []byte) ([]byte, error) {
	var out bytes.Buffer
	w, err := clearsign.Encode(&out, k.signer, config())
	if err != nil {
		return nil, fmt.Errorf("clear-signing: %s", safeError(err))
	}
	if _, err := w.Write(msg); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("clear-signing: %s", safeError(err))
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// DetachSign returns an armored detached signature of msg by the first key (Release.gpg,
// repomd.xml.asc).
func (k *Keyring) DetachSign(msg []byte) ([]byte, error) {
	var out bytes.Buffer
	cfg := config()
	cfg.SigningKeyId = k.signer.KeyId
	if err := openpgp.ArmoredDetachSign(&out, k.entities[0], bytes.NewReader(msg), cfg); err != nil {
		return nil, fmt.Errorf("signing: %s", safeError(err))
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// PublicKeys returns the armored public keys of every key in the file (key.asc).
func (k *Keyring) PublicKeys() []byte { return bytes.Clone(k.public) }

// Fingerprints returns the keys' fingerprints, upper-case hex, the signing key first.
func (k *Keyring) Fingerprints() []string {
	out := make([]string, len(k.entities))
	for i, e := range k.entities {
		out[i] = fingerprint(e)
	}
	return out
}

func fingerprint(e *openpgp.Entity) string {
	if e.PrimaryKey == nil {
		return "(no primary key)"
	}
	return strings.ToUpper(fmt.Sprintf("%x", e.PrimaryKey.Fingerprint))
}

// splitArmor returns each "-----BEGIN PGP ...-----" ... "-----END PGP ...-----" block of data.
func splitArmor(data []byte) [][]byte {
	var blocks [][]byte
	for {
		start := bytes.Index(data, []byte("-----BEGIN PGP "))
		if start < 0 {
			return blocks
		}
		data = data[start:]
		end := bytes.Index(data, []byte("-----END PGP "))
		if end < 0 {
			return append(blocks, data) // armor.Decode names it broken
		}
		nl := bytes.IndexByte(data[end:], '\n')
		if nl < 0 {
			return append(blocks, data)
		}
		blocks = append(blocks, data[:end+nl+1])
		data = data[end+nl+1:]
	}
}

// safeError is an OpenPGP library error's text, cut short: the library's messages name
// structures, never key bytes, and a bound keeps a log line a line.
func safeError(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
