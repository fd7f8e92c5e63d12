package e2e_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
)

// TestCLIFeedFields (issue 23): `slipway upload` carries the update feeds' fields, the Sparkle
// signature, the Tauri .sig file, the rollout and the critical flag, in one request and through
// an upload session alike, and the release shows them back; a rollout outside 0-100 is the
// server's clear refusal.
func TestCLIFeedFields(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t)
	token := h.CreateToken(t, "ci", "upload")
	dir := t.TempDir()
	_, key, _ := ed25519.GenerateKey(nil)
	tauriSig := base64.StdEncoding.EncodeToString([]byte("untrusted comment: signature from tauri secret key\nRUQf\ntrusted comment: x\nabc\n"))
	sigFile := writeFile(t, dir, "Desk.app.tar.gz.sig", []byte(tauriSig+"\n"))
	for i, session := range []string{"never", "always"} {
		zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: fmt.Sprintf("1.%d", i), Build: fmt.Sprint(10 + i)})
		sig := base64.StdEncoding.EncodeToString(ed25519.Sign(key, zip))
		res := h.Run(t, "upload", writeFile(t, dir, "Desk.zip", zip), "--url", s.URL, "--token", token, "--progress", "none", "--json",
			"--session", session, "--ed-signature", sig, "--tauri-signature-file", sigFile, "--rollout", "25", "--critical")
		if res.ExitCode != 0 {
			t.Fatalf("--session %s: exit %d\n%s", session, res.ExitCode, res)
		}
		var rel struct {
			EdSignature    string `json:"ed_signature"`
			TauriSignature string `json:"tauri_signature"`
			Rollout        int    `json:"rollout_percent"`
			Critical       bool   `json:"critical"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &rel); err != nil || rel.EdSignature != sig || rel.TauriSignature != tauriSig ||
			rel.Rollout != 25 || !rel.Critical {
			t.Errorf("--session %s: %+v (%v)\n%s", session, rel, err, res.Stdout)
		}
	}
	res := h.Run(t, "upload", writeFile(t, dir, "Desk.zip", appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk"})),
		"--url", s.URL, "--token", token, "--progress", "none", "--rollout", "150")
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "rollout") || !strings.Contains(res.Stderr, "0 to 100") {
		t.Errorf("--rollout 150: exit %d\n%s", res.ExitCode, res)
	}
	assertNoSecret(t, res, token)
}
