package httpapi_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

func hexSums(b []byte) (string, string, string) {
	a, c, d := sha256.Sum256(b), sha512.Sum512(b), sha1.Sum(b)
	return hex.EncodeToString(a[:]), hex.EncodeToString(c[:]), hex.EncodeToString(d[:])
}

// waitRelease polls GET /api/releases/:id until cond holds (the verifier runs in the background).
func (m *mgmt) waitRelease(relID int64, cond func(map[string]any) bool) map[string]any {
	m.t.Helper()
	var rel map[string]any
	testkit.EventuallyOK(m.t, 60*time.Second, fmt.Sprintf("release %d to reach the state", relID), func() error {
		rel = m.want(m.call("GET", fmt.Sprintf("/api/releases/%d", relID), m.e.AdminToken, ""), 200, "get release")
		if cond(rel) {
			return nil
		}
		return fmt.Errorf("it is %v", rel)
	})
	return rel
}

// Issue 23: a proxied upload's SHA-256 is computed while the bytes stream in (a mobile build is
// verified at once). A desktop build's SHA-512 and SHA-1, which only the update feeds need, are
// computed by the verifier's one read of the stored object: the release is pending until then.
func TestChecksumsComputedOnProxyUpload(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Phone", BundleID: "com.example.phone", Version: "1.0", Build: "1"})
	rel := m.e.UploadApp(t, "Phone.ipa", ipa)
	if s256, _, _ := hexSums(ipa); rel["checksum_state"] != "verified" || rel["sha256"] != s256 {
		t.Fatalf("mobile release checksums: state %v sha256 %v", rel["checksum_state"], rel["sha256"])
	}
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Sums", BundleID: "com.example.sums", Version: "1.0", Build: "1"})
	rel = m.e.UploadApp(t, "Sums.zip", zip)
	s256, s512, s1 := hexSums(zip)
	if rel["checksum_state"] != "pending" || rel["sha256"] != s256 || rel["sha512"] != "" {
		t.Fatalf("a desktop release is answered before its SHA-512 is computed: %v %v %v", rel["checksum_state"], rel["sha256"], rel["sha512"])
	}
	rel = m.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] != "pending" })
	if rel["checksum_state"] != "verified" || rel["sha256"] != s256 || rel["sha512"] != s512 || rel["sha1"] != s1 || rel["checksum_error"] != "" {
		t.Fatalf("release checksums: state %v sha256 %v sha512 %v sha1 %v", rel["checksum_state"], rel["sha256"], rel["sha512"], rel["sha1"])
	}
}

// Issue 23: on the resumable-session path the SHA-256 is the client's word. The release says so
// (unverified, no checksums shown) until the verifier has read the stored object once; then it
// carries the checksums of the stored bytes. A declared SHA-256 that the bytes do not match makes
// the release a mismatch, with the reason, and its downloads are refused (409).
func TestChecksumsVerifiedOnSessionPath(t *testing.T) {
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) {
			s := sessions{newMgmt(t, apptest.Options{Storage: storage})}
			upload := func(zip []byte, declared string) map[string]any {
				sess := s.start(startBody("App.zip", len(zip), declared, nil), 201)
				for i, p := range sess.Parts {
					off := int64(i) * sess.PartSize
					if st := s.put(p.URL, zip[off:off+p.Size]); st != 200 {
						t.Fatalf("part %d: %d", p.Number, st)
					}
				}
				return s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 201, "complete")
			}
			good := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Good", BundleID: "com.example.good", Version: "1.0", Build: "1",
				Extra: []appletest.Entry{{Name: "Good.app/Contents/Resources/filler", Data: make([]byte, 6<<20), Store: true}}})
			rel := upload(good, sha(good))
			if rel["checksum_state"] != "unverified" || rel["sha256"] != "" || rel["sha512"] != "" {
				// The verifier may have been quicker than the answer only if the answer was read
				// after it: the completion answers what it recorded.
				t.Fatalf("a session's release must be answered unverified: %v %v", rel["checksum_state"], rel["sha256"])
			}
			s256, s512, s1 := hexSums(good)
			rel = s.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] != "unverified" })
			if rel["checksum_state"] != "verified" || rel["sha256"] != s256 || rel["sha512"] != s512 || rel["sha1"] != s1 {
				t.Fatalf("verified release: %v %v %v %v", rel["checksum_state"], rel["sha256"], rel["sha512"], rel["sha1"])
			}

			// A declared checksum the bytes do not match.
			bad := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Bad", BundleID: "com.example.bad", Version: "1.0", Build: "1"})
			liar := strings.Repeat("ab", 32)
			rel = upload(bad, liar)
			rel = s.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] != "unverified" })
			reason, _ := rel["checksum_error"].(string)
			if rel["checksum_state"] != "mismatch" || !strings.Contains(reason, liar) || rel["sha256"] != "" {
				t.Fatalf("mismatched release: %v %q %v", rel["checksum_state"], reason, rel["sha256"])
			}
			r := s.e.Get(t, fmt.Sprintf("/download/releases/%d", id(rel)))
			if r.Status != 409 || !strings.Contains(r.Error(t), "SHA-256") {
				t.Fatalf("download of a mismatched release: %d %s", r.Status, r.Body)
			}
		})
	}
}

// Issue 23: the signature and rollout fields are checked at upload, stored and shown back, and
// edited through the release API; bad ones are 422 naming the field.
func TestUploadFeedFields(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Fields", BundleID: "com.example.fields", Version: "1.0", Build: "1"})
	sig := base64.StdEncoding.EncodeToString(make([]byte, 64))
	for _, bad := range []struct{ field, value, want string }{
		{"ed_signature", "not base64!", "base64"},
		{"ed_signature", base64.StdEncoding.EncodeToString(make([]byte, 63)), "64 bytes"},
		{"rollout", "101", "0 to 100"},
		{"rollout", "-1", "0 to 100"},
		{"rollout", "half", "0 to 100"},
		{"critical", "maybe", "true or false"},
	} {
		r := m.e.Upload(t, "/api/apps/upload", "", apptest.Field("token", m.e.UploadToken), apptest.Field(bad.field, bad.value), apptest.File("F.zip", zip))
		if r.Status != 422 || !strings.Contains(string(r.Body), bad.field) || !strings.Contains(string(r.Body), bad.want) {
			t.Errorf("%s=%q: %d %s", bad.field, bad.value, r.Status, r.Body)
		}
	}
	if objs := m.e.Objects(t); len(objs) != 0 {
		t.Fatalf("refused uploads left objects: %v", objs)
	}
	rel := m.e.UploadApp(t, "F.zip", zip, apptest.Field("ed_signature", sig), apptest.Field("rollout", "25"), apptest.Field("critical", "true"))
	if rel["ed_signature"] != sig || rel["rollout_percent"] != float64(25) || rel["critical"] != true {
		t.Fatalf("stored fields: %v %v %v", rel["ed_signature"], rel["rollout_percent"], rel["critical"])
	}
	path := fmt.Sprintf("/api/releases/%d", id(rel))
	m.want(m.call("PATCH", path, m.e.AdminToken, `{"rollout": 150}`), 422, "rollout over 100")
	m.want(m.call("PATCH", path, m.e.AdminToken, `{"ed_signature": "AAAA"}`), 422, "short signature")
	got := m.want(m.call("PATCH", path, m.e.AdminToken, `{"rollout": 100, "critical": false, "ed_signature": ""}`), 200, "edit")
	if got["ed_signature"] != "" || got["rollout_percent"] != float64(100) || got["critical"] != false {
		t.Fatalf("edited fields: %v", got)
	}
}
