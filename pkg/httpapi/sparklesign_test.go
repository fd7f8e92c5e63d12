package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/edsign"
	"github.com/slipwayhq/slipway/test/apptest"
)

// sparkleKey is an operator's Sparkle key as generate_keys -x exports it (base64 of the seed).
func sparkleKey(t *testing.T) (ed25519.PrivateKey, *edsign.Key) {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(nil)
	k, err := edsign.ParseKey([]byte(base64.StdEncoding.EncodeToString(priv.Seed())))
	if err != nil {
		t.Fatal(err)
	}
	return priv, k
}

// appcastSignatureOf finds the release's appcast item, downloads its enclosure and returns the
// bytes and the item's decoded signature.
func (f feedEnv) appcastSignatureOf(slug, build string) ([]byte, []byte) {
	f.t.Helper()
	for _, it := range f.appcast("/channels/" + slug + "/appcast.xml").Items {
		if it.Version == build {
			got := f.e.Follow(f.t, it.Enclosure.URL)
			sig, err := base64.StdEncoding.DecodeString(it.Enclosure.Signature)
			if got.Status != 200 || err != nil {
				f.t.Fatalf("build %s: enclosure %d, signature %q (%v)", build, got.Status, it.Enclosure.Signature, err)
			}
			return got.Body, sig
		}
	}
	f.t.Fatalf("build %s is not in the appcast", build)
	return nil, nil
}

// Issue 23: with SLIPWAY_SPARKLE_KEY_FILE, Slipway signs the macOS packages uploaded without a
// Sparkle signature, by the verifier's reads of the stored object (a proxied upload and a
// resumable session's alike); the appcast's edSignature verifies over the enclosure's bytes with
// the operator's public key (crypto/ed25519) and is exactly crypto/ed25519's signature. A
// signature the CI sent is kept, not replaced. The key shows in no log.
func TestSlipwaySignsSparkleEnclosures(t *testing.T) {
	priv, key := sparkleKey(t)
	_, ciKey, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{Configure: func(c *config.Config) { c.SparkleKey = key }}), ciKey}

	slug, unsigned := f.macBuildUnsigned()
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0.0", Build: "1", MinOS: "12.0"})
	signed := f.waitRelease(id(unsigned), func(r map[string]any) bool { return r["ed_signature"] != "" })
	if want := base64.StdEncoding.EncodeToString(ed25519.Sign(priv, zip)); signed["ed_signature"] != want || signed["checksum_state"] != "verified" {
		t.Fatalf("Slipway's signature %v (%v), want crypto/ed25519's %s", signed["ed_signature"], signed["checksum_state"], want)
	}
	body, sig := f.appcastSignatureOf(slug, "1")
	if !ed25519.Verify(priv.Public().(ed25519.PublicKey), body, sig) {
		t.Fatal("the appcast's signature does not verify over the enclosure with the operator's public key")
	}

	// The CI's own signature is the one the feed carries.
	ci, ciZip := f.macBuild(slug, "1.1", "2")
	if ci["ed_signature"] != base64.StdEncoding.EncodeToString(ed25519.Sign(ciKey, ciZip)) {
		t.Fatalf("the CI's signature was replaced: %v", ci["ed_signature"])
	}
	if body, sig := f.appcastSignatureOf(slug, "2"); !ed25519.Verify(ciKey.Public().(ed25519.PublicKey), body, sig) {
		t.Fatal("the CI's signature does not verify in the appcast")
	}

	// A resumable session's package: its declared SHA-256 is verified and it is signed, by the
	// same background reads.
	s := sessions{f.mgmt}
	big := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.2", Build: "3", MinOS: "12.0",
		Extra: []appletest.Entry{{Name: "Desk.app/Contents/Resources/filler", Data: bytes.Repeat([]byte("slipway"), 1<<20), Store: true}}})
	sess := s.start(startBody("Desk.zip", len(big), sha(big), map[string]any{"channel_key": slug}), 201)
	for i, p := range sess.Parts {
		off := int64(i) * sess.PartSize
		if st := s.put(p.URL, big[off:off+p.Size]); st != 200 {
			t.Fatalf("part %d: %d", p.Number, st)
		}
	}
	rel := s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 201, "complete")
	rel = f.waitRelease(id(rel), func(r map[string]any) bool { return r["ed_signature"] != "" })
	if rel["checksum_state"] != "verified" || rel["ed_signature"] != base64.StdEncoding.EncodeToString(ed25519.Sign(priv, big)) {
		t.Fatalf("the session's release: %v, signature %v", rel["checksum_state"], rel["ed_signature"])
	}

	if logs := f.e.LogText(); strings.Contains(logs, base64.StdEncoding.EncodeToString(priv.Seed())[:16]) ||
		!strings.Contains(logs, "signed a macOS package for Sparkle") {
		t.Fatalf("the logs: the key's secret is there, or the signing is not: %s", logs)
	}
}

// Issue 23: builds verified before the operator configured a key are signed once it is: the
// verifier also takes verified macOS releases without a signature (and only those).
func TestSparkleKeySignsEarlierBuilds(t *testing.T) {
	priv, key := sparkleKey(t)
	_, ciKey, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{}), ciKey}
	slug, unsigned := f.macBuildUnsigned()
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0.0", Build: "1", MinOS: "12.0"})
	if rel := f.waitRelease(id(unsigned), func(r map[string]any) bool { return r["checksum_state"] == "verified" }); rel["ed_signature"] != "" {
		t.Fatalf("signed without a key: %v", rel["ed_signature"])
	}
	ci, _ := f.macBuild(slug, "1.1", "2")
	ipa := f.e.UploadApp(t, "P.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Phone", BundleID: "com.example.phone", Version: "1.0", Build: "1"}))

	// The replica restarts with the key: a verifier with it works through what is there.
	svc := f.e.Service
	v := uploads.NewVerifier(f.e.DB, f.e.Storage, distribution.Effects{Cache: svc.Reads, Webhooks: svc.Sender, Objects: svc.Objects, Events: svc.Events},
		time.Minute, slog.New(slog.DiscardHandler))
	v.SparkleKey = key
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n := 0; ; n++ {
		did, err := v.VerifyNext(ctx)
		if err != nil || n > 5 {
			t.Fatalf("verify %d: %v", n, err)
		}
		if !did {
			break
		}
	}
	rel := f.waitRelease(id(unsigned), func(map[string]any) bool { return true })
	if rel["ed_signature"] != base64.StdEncoding.EncodeToString(ed25519.Sign(priv, zip)) {
		t.Fatalf("the earlier build: signature %v", rel["ed_signature"])
	}
	if again := f.waitRelease(id(ci), func(map[string]any) bool { return true }); again["ed_signature"] != ci["ed_signature"] {
		t.Fatalf("the CI-signed build changed: %v", again["ed_signature"])
	}
	if again := f.waitRelease(id(ipa), func(map[string]any) bool { return true }); again["ed_signature"] != nil && again["ed_signature"] != "" {
		t.Fatalf("an iOS build was signed: %v", again["ed_signature"])
	}
	body, sig := f.appcastSignatureOf(slug, "1")
	if !ed25519.Verify(priv.Public().(ed25519.PublicKey), body, sig) {
		t.Fatalf("the appcast's signature of the earlier build does not verify (%d bytes)", len(body))
	}
}
