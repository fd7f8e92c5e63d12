package config_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
)

// Issue 23: SLIPWAY_SPARKLE_KEY_FILE names the key Slipway signs Sparkle enclosures with; it is
// read at start, and a wrong file stops the process with a line naming the variable and never
// quoting the file's contents.
func TestSparkleKeyFile(t *testing.T) {
	dir := t.TempDir()
	pub, priv, _ := ed25519.GenerateKey(nil)
	secret := base64.StdEncoding.EncodeToString(priv.Seed())
	good, bad := filepath.Join(dir, "sparkle.key"), filepath.Join(dir, "bad.key")
	os.WriteFile(good, []byte(secret+"\n"), 0o600)
	os.WriteFile(bad, []byte(secret[:20]), 0o600)
	load := func(file string) (*config.Config, error) {
		return config.Load(func(k string) string {
			if k == "SLIPWAY_SPARKLE_KEY_FILE" {
				return file
			}
			return ""
		})
	}
	if cfg, err := load(""); err != nil || cfg.SparkleKey != nil {
		t.Fatalf("unset: %v, key %v", err, cfg.SparkleKey)
	}
	cfg, err := load(good)
	if err != nil || cfg.SparkleKey == nil || !bytes.Equal(cfg.SparkleKey.Public(), pub) {
		t.Fatalf("a good key: %v", err)
	}
	for _, file := range []string{bad, filepath.Join(dir, "missing")} {
		_, err := load(file)
		if err == nil || !strings.HasPrefix(err.Error(), "SLIPWAY_SPARKLE_KEY_FILE: ") || strings.Contains(err.Error(), secret[:12]) {
			t.Fatalf("%s: %v", file, err)
		}
	}
}

// A key file others may read is started with, and said: serve logs the warning at start.
func TestReadableKeyFileWarns(t *testing.T) {
	dir := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(nil)
	key := filepath.Join(dir, "sparkle.key")
	if err := os.WriteFile(key, []byte(base64.StdEncoding.EncodeToString(priv.Seed())), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func() *config.Config {
		t.Helper()
		cfg, err := config.Load(func(k string) string {
			if k == "SLIPWAY_SPARKLE_KEY_FILE" {
				return key
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if w := load().Warnings; len(w) != 0 {
		t.Fatalf("a private key file warns: %v", w)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	w := load().Warnings
	if len(w) != 1 || !strings.HasPrefix(w[0], "SLIPWAY_SPARKLE_KEY_FILE: ") || !strings.Contains(w[0], "0644") {
		t.Fatalf("a world-readable key file: %v", w)
	}
}
