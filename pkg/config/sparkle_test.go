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
