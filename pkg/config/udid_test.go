package config_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
)

func TestUDIDSigner(t *testing.T) {
	dir := t.TempDir()
	cert, key := profileservicetest.Identity(t)
	issuer, _ := profileservicetest.Identity(t)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: issuer.Raw})...)
	if err := os.WriteFile(certFile, chain, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(vars map[string]string) (*config.Config, error) {
		return config.Load(func(k string) string { return vars[k] })
	}
	cfg, err := load(map[string]string{"SLIPWAY_UDID_SIGNING_CERT": certFile, "SLIPWAY_UDID_SIGNING_KEY": keyFile})
	if err != nil {
		t.Fatal(err)
	}
	c, ch, k, err := cfg.UDIDSigner()
	if err != nil || !c.Equal(cert) || len(ch) != 1 || !ch[0].Equal(issuer) || k == nil {
		t.Fatalf("signer: %v %v %d %v", err, c.Subject, len(ch), k)
	}
	if _, err := load(map[string]string{"SLIPWAY_UDID_SIGNING_CERT": certFile}); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("a certificate without a key: %v", err)
	}
	for name, vars := range map[string]map[string]string{
		"missing file": {"SLIPWAY_UDID_SIGNING_CERT": filepath.Join(dir, "nope"), "SLIPWAY_UDID_SIGNING_KEY": keyFile},
		"key as cert":  {"SLIPWAY_UDID_SIGNING_CERT": keyFile, "SLIPWAY_UDID_SIGNING_KEY": keyFile},
		"cert as key":  {"SLIPWAY_UDID_SIGNING_CERT": certFile, "SLIPWAY_UDID_SIGNING_KEY": certFile},
	} {
		cfg, err := load(vars)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := cfg.UDIDSigner(); err == nil || strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v (want an error that does not echo the path)", name, err)
		}
	}
	if cfg, _ := load(nil); cfg.UDIDOrganization != "Slipway" {
		t.Errorf("default organization %q", cfg.UDIDOrganization)
	}
}
