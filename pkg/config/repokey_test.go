package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/repokey"
)

// SLIPWAY_REPO_KEY_FILE names the OpenPGP key that signs the repositories: read at start; a file
// that is not an unprotected private key stops the process with a line naming the variable,
// never quoting the file.
func TestRepoKeyFile(t *testing.T) {
	dir := t.TempDir()
	key, err := repokey.Generate("Test", "repo@example.com")
	if err != nil {
		t.Fatal(err)
	}
	good, pub, junk := filepath.Join(dir, "repo.key"), filepath.Join(dir, "pub.asc"), filepath.Join(dir, "junk")
	os.WriteFile(good, key, 0o600)
	k, _ := repokey.Parse(key)
	os.WriteFile(pub, k.PublicKeys(), 0o600)
	os.WriteFile(junk, []byte("s3cr3t-junk"), 0o600)
	load := func(file string) (*config.Config, error) {
		return config.Load(func(name string) string {
			if name == "SLIPWAY_REPO_KEY_FILE" {
				return file
			}
			return ""
		})
	}
	if cfg, err := load(""); err != nil || cfg.RepoKey != nil {
		t.Fatalf("unset: %v, key %v", err, cfg.RepoKey)
	}
	cfg, err := load(good)
	if err != nil || cfg.RepoKey == nil || cfg.RepoKey.Fingerprints()[0] != k.Fingerprints()[0] {
		t.Fatalf("a good key: %v", err)
	}
	for file, want := range map[string]string{pub: "public key", junk: "no armored OpenPGP key", filepath.Join(dir, "missing"): "cannot read"} {
		_, err := load(file)
		if err == nil || !strings.HasPrefix(err.Error(), "SLIPWAY_REPO_KEY_FILE: ") || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v", filepath.Base(file), err)
		}
	}
	os.Chmod(good, 0o644)
	cfg, err = load(good)
	if err != nil || len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0], "SLIPWAY_REPO_KEY_FILE: ") {
		t.Errorf("a readable key file: %v %v", err, cfg.Warnings)
	}
}
