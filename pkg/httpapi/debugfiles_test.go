package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// debugEnv is a Slipway on MinIO with one iOS app (bundle com.example.demo) and one Android app.
type debugEnv struct {
	*apptest.Env
	ios, android string // channel keys
}

func newDebugEnv(t *testing.T) *debugEnv {
	e := apptest.New(t, apptest.Options{Storage: apptest.S3})
	ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Demo", BundleID: "com.example.demo", Version: "1.0", Build: "1"})
	apk := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.droid", VersionCode: 3, VersionName: "1.2", MinSDK: 21, Label: "Droid"}})
	d := &debugEnv{Env: e}
	d.ios = e.UploadApp(t, "demo.ipa", ipa)["channel"].(map[string]any)["slug"].(string)
	d.android = e.UploadApp(t, "droid.apk", apk)["channel"].(map[string]any)["slug"].(string)
	return d
}

func (d *debugEnv) uploadDebug(t *testing.T, channel string, zip []byte, fields ...apptest.Part) *apptest.Response {
	t.Helper()
	parts := append([]apptest.Part{apptest.Field("channel_key", channel)}, fields...)
	return d.Upload(t, "/api/debug_files/upload", d.UploadToken, append(parts, apptest.File("symbols.zip", zip))...)
}

type debugFile struct {
	ID             int64  `json:"id"`
	AppName        string `json:"app_name"`
	DeviceType     string `json:"device_type"`
	ReleaseVersion string `json:"release_version"`
	BuildVersion   string `json:"build_version"`
	FileURL        string `json:"file_url"`
	Metadata       []struct {
		ID          int64          `json:"id"`
		DebugFileID int64          `json:"debug_file_id"`
		UUID        string         `json:"uuid"`
		Type        string         `json:"type"`
		Object      string         `json:"object"`
		Data        map[string]any `json:"data"`
		Size        int64          `json:"size"`
		CreatedAt   string         `json:"created_at"`
		UpdatedAt   string         `json:"updated_at"`
	} `json:"metadata"`
}

func TestDebugFileFixtures(t *testing.T) {
	d := newDebugEnv(t)
	type slice struct {
		arch, uuid, object string
		size               int64
		main               bool
	}
	cases := []struct {
		file, rel, build string
		slices           []slice
	}{
		{"debug/ios-dsym-single-arm64.zip", "1.0", "1", []slice{{"arm64", "EA9BBF2D-BFDD-3CE0-85B2-1CBE7152FCA5", "iOS", 866911, true}}},
		{"debug/ios-dsym-single-fat-armv7-arm64.zip", "1.0", "2", []slice{
			{"armv7", "26DFC15D-BDCE-351F-B5DE-6EE9F5DD6D85", "iOS", 866526, true}, {"arm64", "17F58291-DD25-3FC8-9417-CCBE8163D33E", "iOS", 866911, true}}},
		{"debug/ios-dsyms-two-at-root.zip", "1.0", "1", []slice{
			{"arm64", "52E65DBE-8234-3387-B733-C5044E26653F", "AppInfo", -1, true}, {"arm64", "628E9796-746C-3FEC-91E7-586B4BED352A", "AppInfoNotificationCenter", -1, false}}},
	}
	for _, c := range cases {
		data := fixtures.Read(t, c.file)
		r := d.uploadDebug(t, d.ios, data, apptest.Field("release_version", "ignored"), apptest.Field("build_version", "ignored"))
		if r.Status != 201 {
			t.Fatalf("%s: %d %s", c.file, r.Status, r.Body)
		}
		var df debugFile
		r.JSON(t, &df)
		if df.AppName != "Demo" || df.DeviceType != "ios" || df.ReleaseVersion != c.rel || df.BuildVersion != c.build || len(df.Metadata) != len(c.slices) {
			t.Fatalf("%s: %+v", c.file, df)
		}
		for i, want := range c.slices {
			m := df.Metadata[i]
			if m.Type != want.arch || m.UUID != want.uuid || m.Object != want.object || (want.size >= 0 && m.Size != want.size) ||
				m.Data["main"] != want.main || m.DebugFileID != df.ID || m.CreatedAt == "" {
				t.Errorf("%s slice %d: %+v, want %+v", c.file, i, m, want)
			}
		}
		// file_url downloads the archive byte for byte.
		if got := d.Follow(t, df.FileURL); got.Status != 200 || !bytes.Equal(got.Body, data) {
			t.Errorf("%s: file_url gives %d, %d bytes", c.file, got.Status, len(got.Body))
		}
	}
	full := fixtures.Read(t, "debug/android-proguard-full.zip")
	r := d.uploadDebug(t, d.android, full)
	var df debugFile
	r.JSON(t, &df)
	if r.Status != 201 || df.ReleaseVersion != "1.0" || df.BuildVersion != "1" || len(df.Metadata) != 1 {
		t.Fatalf("proguard full: %d %s", r.Status, r.Body)
	}
	m := df.Metadata[0]
	files, _ := m.Data["files"].([]any)
	if m.UUID != "81384aeb-4837-5f73-a771-417b4399a483" || m.Type != "proguard" || m.Object != "com.icyleaf.appinfo" || len(files) != 3 {
		t.Fatalf("proguard metadata: %+v", m)
	}
	// The mapping-only archive has the same mapping (same UUID) but other bytes: versions must
	// come from the form.
	only := fixtures.Read(t, "debug/android-proguard-mapping-only.zip")
	if r := d.uploadDebug(t, d.android, only); r.Status != 422 {
		t.Fatalf("mapping only without versions: %d %s", r.Status, r.Body)
	}
	r = d.uploadDebug(t, d.android, only, apptest.Field("release_version", "2.0"), apptest.Field("build_version", "20"))
	r.JSON(t, &df)
	if r.Status != 201 || df.ReleaseVersion != "2.0" || df.Metadata[0].UUID != "81384aeb-4837-5f73-a771-417b4399a483" || df.Metadata[0].Object != "" {
		t.Fatalf("mapping only: %d %s", r.Status, r.Body)
	}
	if r := d.uploadDebug(t, d.ios, fixtures.Read(t, "debug/invalid/zip-with-only-empty-folder.zip")); r.Status != 422 {
		t.Fatalf("empty folder zip: %d %s", r.Status, r.Body)
	}
}

func TestDebugFileLifecycle(t *testing.T) {
	d := newDebugEnv(t)
	dsym := func(build string, uuid string) []byte {
		return debuginfotest.BuildDSYMZip(
			debuginfotest.DSYM{Path: "Ext.appex.dSYM", Identifier: "com.example.demo.ext", ReleaseVersion: "1.0", BuildVersion: build,
				Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "11111111-2222-3333-4444-" + uuid}}},
			debuginfotest.DSYM{Path: "dSYMs/Demo.app.dSYM", Identifier: "com.example.demo", ReleaseVersion: "1.0", BuildVersion: build,
				Archs: []debuginfotest.Arch{{Name: "armv7", UUID: "AAAAAAAA-2222-3333-4444-" + uuid}, {Name: "arm64", UUID: "BBBBBBBB-2222-3333-4444-" + uuid}}})
	}
	v2, v10 := dsym("2", "000000000002"), dsym("10", "000000000010")
	r2 := d.uploadDebug(t, d.ios, v2)
	r10 := d.uploadDebug(t, d.ios, v10)
	if r2.Status != 201 || r10.Status != 201 {
		t.Fatalf("uploads: %d %d", r2.Status, r10.Status)
	}
	var f2, f10 debugFile
	r2.JSON(t, &f2)
	r10.JSON(t, &f10)
	// The dSYM whose bundle id is the app's is main; versions come from it.
	for _, m := range f2.Metadata {
		wantMain := m.Data["identifier"] == "com.example.demo"
		if m.Data["main"] != wantMain {
			t.Errorf("main flag of %s: %v", m.Data["identifier"], m.Data["main"])
		}
	}
	if len(f2.Metadata) != 3 || f2.BuildVersion != "2" {
		t.Fatalf("metadata: %+v", f2)
	}
	// Same content again: 409, nothing kept.
	before := countObjects(t, d.Env)
	if r := d.uploadDebug(t, d.ios, v2); r.Status != 409 {
		t.Fatalf("duplicate: %d %s", r.Status, r.Body)
	}
	if after := countObjects(t, d.Env); after != before {
		t.Fatalf("objects after 409: %d, before %d", after, before)
	}

	download := func(query string) (int, []byte) {
		t.Helper()
		r := d.Get(t, "/api/debug_files/download?channel_key="+d.ios+query)
		if r.Status != 302 {
			return r.Status, r.Body
		}
		got := d.Follow(t, r.Header.Get("Location"))
		return got.Status, got.Body
	}
	// latest by version: build 10 > 2 numerically; by upload date: the last one uploaded.
	if s, b := download("&release_version=latest"); s != 200 || !bytes.Equal(b, v10) {
		t.Fatalf("latest by version: %d", s)
	}
	v3 := dsym("3", "000000000003")
	if r := d.uploadDebug(t, d.ios, v3); r.Status != 201 {
		t.Fatal(r.Status)
	}
	if s, b := download("&release_version=latest&order=upload_date"); s != 200 || !bytes.Equal(b, v3) {
		t.Fatalf("latest by upload date: %d", s)
	}
	if s, b := download("&release_version=latest&order=version"); s != 200 || !bytes.Equal(b, v10) {
		t.Fatalf("latest by version again: %d", s)
	}
	if s, b := download("&release_version=1.0&build_version=2"); s != 200 || !bytes.Equal(b, v2) {
		t.Fatalf("exact version: %d", s)
	}
	if s, b := download("&release_version=9.9"); s != 404 || !bytes.Contains(b, []byte(`"error"`)) {
		t.Fatalf("unknown version: %d %s", s, b)
	}
	if s, _ := download("&release_version=latest&order=sideways"); s != 422 {
		t.Fatalf("bad order: %d", s)
	}

	// Get needs a token and the channel key; a file of another app is 404 from this channel.
	get := fmt.Sprintf("/api/debug_files/%d?channel_key=%s", f2.ID, d.ios)
	if r := d.Get(t, get); r.Status != 401 {
		t.Fatalf("get without token: %d", r.Status)
	}
	tok := http.Header{"Authorization": {"Token " + d.UploadToken}}
	if r := d.Do(t, "GET", get, nil, tok); r.Status != 200 {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	if r := d.Do(t, "GET", fmt.Sprintf("/api/debug_files/%d?channel_key=%s", f2.ID, d.android), nil, tok); r.Status != 404 {
		t.Fatalf("get from another app's channel: %d", r.Status)
	}
	if r := d.Do(t, "GET", fmt.Sprintf("/api/debug_files/%d", f2.ID), nil, tok); r.Status != 422 {
		t.Fatalf("get without channel_key: %d", r.Status)
	}

	// Update replaces file and metadata; the old object is collected.
	v4 := dsym("4", "000000000004")
	body, ctype := apptest.Multipart(apptest.Field("channel_key", d.ios), apptest.File("new.zip", v4))
	r := d.Do(t, "PUT", fmt.Sprintf("/api/debug_files/%d", f2.ID), body, http.Header{"Content-Type": {ctype}, "Authorization": {"Token " + d.UploadToken}})
	var upd debugFile
	r.JSON(t, &upd)
	if r.Status != 200 || upd.ID != f2.ID || upd.BuildVersion != "4" || upd.Metadata[0].UUID != "11111111-2222-3333-4444-000000000004" {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	if s, _ := download("&release_version=1.0&build_version=2"); s != 404 {
		t.Fatalf("old version after update: %d", s)
	}
	if s, b := download("&release_version=1.0&build_version=4"); s != 200 || !bytes.Equal(b, v4) {
		t.Fatalf("new version after update: %d", s)
	}
	// Updating it to another file's content is 409 naming that file, read in the failed
	// update's own transaction; the file is as it was.
	body, ctype = apptest.Multipart(apptest.Field("channel_key", d.ios), apptest.File("same.zip", v10))
	r = d.Do(t, "PUT", fmt.Sprintf("/api/debug_files/%d", f2.ID), body, http.Header{"Content-Type": {ctype}, "Authorization": {"Token " + d.UploadToken}})
	if r.Status != 409 || !bytes.Contains(r.Body, []byte(fmt.Sprintf("debug file %d", f10.ID))) {
		t.Fatalf("update to another file's content: %d %s", r.Status, r.Body)
	}
	if s, b := download("&release_version=1.0&build_version=4"); s != 200 || !bytes.Equal(b, v4) {
		t.Fatalf("after the refused update: %d", s)
	}
	// Delete: admin only; then 404 and the object is gone.
	del := fmt.Sprintf("/api/debug_files/%d?channel_key=%s", f2.ID, d.ios)
	if r := d.Do(t, "DELETE", del, nil, tok); r.Status != 403 {
		t.Fatalf("delete with upload scope: %d", r.Status)
	}
	r = d.Do(t, "DELETE", del, nil, http.Header{"Authorization": {"Token " + d.AdminToken}})
	if r.Status != 200 || string(r.Body) != `{"mesage":"OK"}` {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if s, _ := download("&release_version=1.0&build_version=4"); s != 404 {
		t.Fatalf("download after delete: %d", s)
	}
	// List: newest first, paginated.
	var list []debugFile
	d.Get(t, "/api/debug_files?channel_key="+d.ios).JSON(t, &list)
	if len(list) != 2 || list[0].BuildVersion != "3" || list[1].BuildVersion != "10" {
		t.Fatalf("list: %+v", list)
	}
	d.Get(t, "/api/debug_files?per_page=1&page=2&channel_key="+d.ios).JSON(t, &list)
	if len(list) != 1 || list[0].BuildVersion != "10" {
		t.Fatalf("page 2: %+v", list)
	}
	// Storage holds exactly the two remaining archives plus the two packages and no icon.
	if _, err := d.Service.Collector.CollectGarbage(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, d.Env); n != 4 {
		t.Fatalf("objects left: %d, want 4", n)
	}
}

func TestDebugFileRejections(t *testing.T) {
	d := newDebugEnv(t)
	mapping := []byte("com.example.Foo -> a:\n    void bar() -> b\n")
	android := debuginfotest.BuildProguardZip(debuginfotest.Proguard{Mapping: mapping, Manifest: debuginfotest.Manifest("com.example.droid", "1.2", "3")})
	dsym := debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Demo.app.dSYM", Identifier: "com.example.demo", ReleaseVersion: "1", BuildVersion: "1",
		Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "12345678-1234-1234-1234-123456789ABC"}}})
	cases := []struct {
		name    string
		channel string
		data    []byte
		token   string
		status  int
	}{
		{"not a zip", d.ios, []byte("not a zip at all"), d.UploadToken, 422},
		{"mapping on an iOS channel", d.ios, android, d.UploadToken, 422},
		{"dSYM on an Android channel", d.android, dsym, d.UploadToken, 422},
		{"unknown channel", "nope", dsym, d.UploadToken, 404},
		{"no channel key", "", dsym, d.UploadToken, 422},
		{"wrong token", d.ios, dsym, "slw_wrong", 401},
		{"no token", d.ios, dsym, "", 401},
	}
	before := countObjects(t, d.Env)
	for _, c := range cases {
		r := d.Upload(t, "/api/debug_files/upload", c.token, apptest.Field("channel_key", c.channel), apptest.File("x.zip", c.data))
		if r.Status != c.status {
			t.Errorf("%s: %d, want %d: %s", c.name, r.Status, c.status, r.Body)
			continue
		}
		r.Error(t)
	}
	if after := countObjects(t, d.Env); after != before {
		t.Fatalf("rejected uploads left objects: %d, before %d", after, before)
	}
	r := d.uploadDebug(t, d.android, android)
	var df debugFile
	r.JSON(t, &df)
	if r.Status != 201 || df.ReleaseVersion != "1.2" || df.BuildVersion != "3" || df.Metadata[0].UUID != debuginfotest.ProguardUUID(mapping) {
		t.Fatalf("synthetic proguard: %d %s", r.Status, r.Body)
	}
}

// countObjects counts the objects in the environment's bucket.
func countObjects(t *testing.T, e *apptest.Env) int {
	t.Helper()
	keys, err := e.ListObjects(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}
