package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.PublicURL != "http://localhost:8080" || c.MaxUploadBytes != 4<<30 || c.PresignTTL != 15*time.Minute ||
		c.StorageURL != "file://./data/objects" || !c.SecretGenerated || len(c.Secret) < 32 || c.LogFormat != "json" ||
		c.Location != time.UTC || c.MaxConcurrentUploads != 16 || len(c.TrustedProxies) != 0 {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestInvalidValuesNameTheVariable(t *testing.T) {
	cases := map[string]string{
		"SLIPWAY_PUBLIC_URL":             "ftp://x",
		"SLIPWAY_DATABASE_URL":           "mysql://x",
		"SLIPWAY_STORAGE_URL":            "gs://bucket",
		"SLIPWAY_MAX_UPLOAD_BYTES":       "abc",
		"SLIPWAY_MAX_CONCURRENT_UPLOADS": "0",
		"SLIPWAY_PRESIGN_TTL":            "forever",
		"SLIPWAY_CDN_URL":                "cdn.example.com",
		"SLIPWAY_SECRET":                 "short",
		"SLIPWAY_LOG_LEVEL":              "loud",
		"SLIPWAY_LOG_FORMAT":             "xml",
		"SLIPWAY_TIMEZONE":               "Mars/Olympus",
		"SLIPWAY_GC_INTERVAL":            "-1m",
		"SLIPWAY_DRAIN_TIMEOUT":          "soon",
		"SLIPWAY_TRUSTED_PROXIES":        "10.0.0.0",
	}
	for name, value := range cases {
		_, err := Load(env(map[string]string{name: value}))
		if err == nil || !strings.HasPrefix(err.Error(), name+":") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%q: error %v, want one line starting with the variable", name, value, err)
		}
	}
}

func TestPublicURLTrailingSlashTrimmed(t *testing.T) {
	c, err := Load(env(map[string]string{"SLIPWAY_PUBLIC_URL": "https://apps.example.com/"}))
	if err != nil || c.PublicURL != "https://apps.example.com" {
		t.Fatalf("%v %v", c.PublicURL, err)
	}
}

// TestReadmeDocumentsEveryVariable keeps the README's configuration table complete.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Vars {
		if !strings.Contains(string(readme), "`"+v.Name+"`") {
			t.Errorf("README does not document %s", v.Name)
		}
	}
}

// SLIPWAY_SECRET_PREVIOUS lists former keys, comma-separated, each as long as a secret must be;
// it needs a current SLIPWAY_SECRET, and its errors never echo a key.
func TestSecretPrevious(t *testing.T) {
	const cur, old1, old2 = "current-key-current-key-current-k", "old-key-one-old-key-one-old-key-1", "old-key-two-old-key-two-old-key-2"
	c, err := Load(env(map[string]string{"SLIPWAY_SECRET": cur, "SLIPWAY_SECRET_PREVIOUS": " " + old1 + " , " + old2 + "," + cur}))
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Secret) != cur || len(c.SecretPrevious) != 2 || string(c.SecretPrevious[0]) != old1 || string(c.SecretPrevious[1]) != old2 {
		t.Fatalf("Secret %q, SecretPrevious %q", c.Secret, c.SecretPrevious)
	}
	if c, err := Load(env(map[string]string{"SLIPWAY_SECRET": cur})); err != nil || len(c.SecretPrevious) != 0 {
		t.Fatalf("unset: %v %v", c.SecretPrevious, err)
	}
	for _, bad := range []map[string]string{
		{"SLIPWAY_SECRET": cur, "SLIPWAY_SECRET_PREVIOUS": old1 + ",short-hunter2"},
		{"SLIPWAY_SECRET": cur, "SLIPWAY_SECRET_PREVIOUS": old1 + ","},
		{"SLIPWAY_SECRET_PREVIOUS": old1},
	} {
		_, err := Load(env(bad))
		if err == nil || !strings.HasPrefix(err.Error(), "SLIPWAY_SECRET_PREVIOUS:") || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), old1) {
			t.Errorf("%v: error %v", bad, err)
		}
	}
}

// An identity provider without allowed domains, allowed groups or SLIPWAY_OIDC_ALLOW_ANY admits
// nobody, and Load says so (serve logs it at start); naming one of them, it does not warn.
func TestOIDCClosedWarns(t *testing.T) {
	base := map[string]string{"SLIPWAY_OIDC_ISSUER": "https://login.example.com/", "SLIPWAY_OIDC_CLIENT_ID": "slipway"}
	warnsClosed := func(extra map[string]string) bool {
		t.Helper()
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		c, err := Load(env(m))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.Warnings {
			if strings.Contains(w, "nobody may sign in") && strings.Contains(w, "SLIPWAY_OIDC_ALLOW_ANY") {
				return true
			}
		}
		return false
	}
	if !warnsClosed(nil) {
		t.Error("no warning for an identity provider that admits nobody")
	}
	for _, extra := range []map[string]string{
		{"SLIPWAY_OIDC_ALLOWED_DOMAINS": "example.com"},
		{"SLIPWAY_OIDC_ALLOWED_GROUPS": "eng"},
		{"SLIPWAY_OIDC_ALLOW_ANY": "true"},
	} {
		if warnsClosed(extra) {
			t.Errorf("%v still warns", extra)
		}
	}
	c, err := Load(env(map[string]string{"SLIPWAY_OIDC_ISSUER": "https://login.example.com/", "SLIPWAY_OIDC_CLIENT_ID": "slipway",
		"SLIPWAY_OIDC_ALLOW_ANY": "yes", "SLIPWAY_OIDC_TRUST_EMAILS": "true", "SLIPWAY_OIDC_ALLOWED_DOMAINS": "example.com"}))
	if err != nil || !c.OIDC.AllowAny || !c.OIDC.TrustEmails {
		t.Fatalf("the switches: %+v %v", c.OIDC, err)
	}
	if _, err := Load(env(map[string]string{"SLIPWAY_OIDC_ALLOW_ANY": "maybe"})); err == nil || !strings.Contains(err.Error(), "SLIPWAY_OIDC_ALLOW_ANY") {
		t.Errorf("a bad switch: %v", err)
	}
}
