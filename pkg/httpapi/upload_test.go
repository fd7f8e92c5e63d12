package httpapi_test

// Integration tests of POST /api/apps/upload (issue 3): every real fixture and synthetic packages
// of every kind upload with the metadata decisions.md asks for, come back byte-identical through
// their install URL, and bad files leave nothing behind; the upload rules (find-or-create,
// channel_key checks, passwords, changelog, custom fields, idempotency, size limit, token
// placement). The helpers here are shared by the other *_test.go files of issue 3.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"howett.net/plist"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// ---------------------------------------------------------------------------------------------
// Shared helpers.

// testEnv is an apptest.Env that, when the test ends, checks that the server logged none of the
// secrets the test handled (tokens, passwords, signed URL parts).
type testEnv struct {
	*apptest.Env
	mu      sync.Mutex
	secrets []string
}

func newEnv(t *testing.T, opts apptest.Options) *testEnv {
	t.Helper()
	e := &testEnv{Env: apptest.New(t, opts)}
	e.secret(e.AdminToken, e.UploadToken)
	t.Cleanup(func() { e.checkLogs(t) })
	return e
}

// secret records values the server must never log.
func (e *testEnv) secret(vals ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range vals {
		if len(v) >= 6 {
			e.secrets = append(e.secrets, v)
		}
	}
}

// secretURL records the signature-like query values of a URL handed out by the server.
func (e *testEnv) secretURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	for k, vs := range u.Query() {
		switch strings.ToLower(k) {
		case "t", "access", "x-amz-signature", "x-amz-credential", "password", "token":
			e.secret(vs...)
		}
	}
}

// checkLogs fails the test when the server log holds a token, a password or a signed URL.
func (e *testEnv) checkLogs(t *testing.T) {
	logs := e.LogText()
	if t.Failed() {
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, `"WARN"`) || strings.Contains(l, `"ERROR"`) {
				t.Log("server log:", l)
			}
		}
	}
	if logs == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the server log contains a secret (%.4s…)", s)
		}
	}
	for _, p := range []string{"X-Amz-Signature", "X-Amz-Credential", "?t=", "&t=", "access=", "password=", "token="} {
		if strings.Contains(logs, p) {
			t.Errorf("the server log contains %q", p)
		}
	}
}

// rows counts the rows of a table.
func (e *testEnv) rows(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// exec runs SQL against the test database.
func (e *testEnv) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := e.DB.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// upload posts parts (in order) to /api/apps/upload with no Authorization header.
func (e *testEnv) upload(t *testing.T, parts ...apptest.Part) *apptest.Response {
	t.Helper()
	for _, p := range parts {
		if p.Name == "password" || p.Name == "token" {
			e.secret(p.Value)
		}
	}
	return e.Upload(t, "/api/apps/upload", "", parts...)
}

// uploadOK uploads data as fastlane does (token first, fields, the file last) and returns the
// checked full Release.
func (e *testEnv) uploadOK(t *testing.T, filename string, data []byte, fields ...apptest.Part) release {
	t.Helper()
	parts := append([]apptest.Part{apptest.Field("token", e.UploadToken)}, fields...)
	r := e.upload(t, append(parts, apptest.File(filename, data))...)
	if r.Status != http.StatusCreated {
		t.Fatalf("upload %s: status %d: %s", filename, r.Status, r.Body)
	}
	return e.fullRelease(t, r)
}

// wantError checks a JSON error response with the given status.
func wantError(t *testing.T, r *apptest.Response, status int) string {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %.500s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("error Content-Type %q", ct)
	}
	return r.Error(t)
}

type changelogEntry struct {
	Message string `json:"message"`
	Author  string `json:"author,omitempty"`
	Email   string `json:"email,omitempty"`
	Date    string `json:"date,omitempty"`
}

type customField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Icon  string `json:"icon"`
}

type ref struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type channel struct {
	Slug        string  `json:"slug"`
	Name        string  `json:"name"`
	DeviceType  string  `json:"device_type"`
	BundleID    string  `json:"bundle_id"`
	GitURL      *string `json:"git_url"`
	HasPassword bool    `json:"has_password"`
}

// release is the full Release of api.md (the short form leaves ID and the fields after
// CreatedAt zero).
type release struct {
	ID             int64            `json:"id"`
	Version        int              `json:"version"`
	AppName        string           `json:"app_name"`
	BundleID       string           `json:"bundle_id"`
	ReleaseVersion string           `json:"release_version"`
	BuildVersion   string           `json:"build_version"`
	Source         string           `json:"source"`
	Branch         string           `json:"branch"`
	GitCommit      string           `json:"git_commit"`
	CIURL          string           `json:"ci_url"`
	Size           int64            `json:"size"`
	IconURL        string           `json:"icon_url"`
	InstallURL     string           `json:"install_url"`
	Changelog      []changelogEntry `json:"changelog"`
	CreatedAt      string           `json:"created_at"`
	ReleaseURL     string           `json:"release_url"`
	QRCodeURL      string           `json:"qrcode_url"`
	TextChangelog  string           `json:"text_changelog"`
	CustomFields   []customField    `json:"custom_fields"`
	App            ref              `json:"app"`
	Scheme         ref              `json:"scheme"`
	Channel        channel          `json:"channel"`
}

// Field types of api.md.
const (
	tInt       = "integer"
	tString    = "string"
	tBool      = "boolean"
	tArray     = "array"
	tObject    = "object"
	tStringNil = "string or null"
	// tOptObject is an object that may be left out.
	tOptObject = "object, optional"
	// tOptArray is an array that may be left out.
	tOptArray = "array, optional"
)

var shortReleaseFields = map[string]string{
	"version": tInt, "app_name": tString, "bundle_id": tString, "release_version": tString, "build_version": tString,
	"source": tString, "branch": tString, "git_commit": tString, "ci_url": tString, "size": tInt, "icon_url": tString,
	"install_url": tString, "changelog": tArray, "created_at": tString,
}

var fullReleaseFields = func() map[string]string {
	m := map[string]string{"id": tInt, "release_url": tString, "qrcode_url": tString, "text_changelog": tString,
		"custom_fields": tArray, "app": tObject, "scheme": tObject, "channel": tObject,
		// Slipway's own: retention's pin and the install count (decisions.md).
		"pinned": tBool, "download_count": tInt,
		// Slipway's own: what the package says (issue 22).
		"package": tObject,
		// Slipway's own: what changed since the channel's previous build (only in an upload's answer).
		"insights": tOptObject,
		// Slipway's own: who the build went to (an upload into a channel with tester groups).
		"testers": tOptObject,
		// Slipway's own: what the upload kept that its uploader should look at (issue 34; only in an upload's answer).
		"warnings": tOptArray,
		// Slipway's own: the checksums it computed and the update feeds' fields (issue 23).
		"checksum_state": tString, "checksum_error": tString, "sha256": tString, "sha512": tString, "sha1": tString,
		"ed_signature": tString, "tauri_signature": tString, "rollout_percent": tInt, "critical": tBool}
	for k, v := range shortReleaseFields {
		m[k] = v
	}
	return m
}()

// channelFields are api.md's Channel plus the id and download_filename_type Zealot 6 renders.
var channelFields = map[string]string{"id": tInt, "slug": tString, "name": tString, "device_type": tString, "bundle_id": tString,
	"git_url": tStringNil, "has_password": tBool, "download_filename_type": tString,
	// Slipway's own: the size budget (issue 24), null when not set.
	"max_size_bytes": "", "max_growth_percent": "", "enforce_budget": tBool,
	// Slipway's own: whether Slipway signs the channel's macOS builds (docs/feeds.md).
	"sparkle_signing": tBool,
	// Slipway's own: the channel is open to its tester groups' testers only.
	"tester_only": tBool,
	// Slipway's own: how often App Installer checks a Windows channel's file; which builds a
	// Linux channel's APT repository lists.
	"appinstaller_hours": tInt, "apt_newest_only": tBool}

var refFields = map[string]string{"id": tInt, "name": tString}

var listingFields = map[string]string{"app_name": tString, "bundle_id": tString, "git_url": tStringNil, "app": tObject,
	"scheme": tObject, "releases": ""}

// timestampRe is decisions.md's timestamp: RFC 3339 with milliseconds and a numeric offset.
var timestampRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$`)

// checkShape fails unless m has exactly the fields of spec with their types ("" is any type).
func checkShape(t *testing.T, where string, m map[string]any, spec map[string]string) {
	t.Helper()
	for k := range m {
		if _, ok := spec[k]; !ok {
			t.Errorf("%s: unexpected field %q", where, k)
		}
	}
	for k, typ := range spec {
		v, ok := m[k]
		if !ok && (typ == tOptObject || typ == tOptArray) {
			continue
		}
		if !ok {
			t.Errorf("%s: field %q missing", where, k)
			continue
		}
		good := true
		switch typ {
		case tInt:
			f, isNum := v.(float64)
			good = isNum && f == math.Trunc(f)
		case tString:
			_, good = v.(string)
		case tBool:
			_, good = v.(bool)
		case tArray, tOptArray:
			_, good = v.([]any)
		case tObject, tOptObject:
			_, good = v.(map[string]any)
		case tStringNil:
			_, isStr := v.(string)
			good = isStr || v == nil
		}
		if !good {
			t.Errorf("%s: field %q is %T (%v), want %s", where, k, v, v, typ)
		}
	}
}

// checkShortShape checks one short Release object (versions, latest, version_exist).
func checkShortShape(t *testing.T, where string, m map[string]any) {
	t.Helper()
	checkShape(t, where, m, shortReleaseFields)
	checkChangelogShape(t, where, m["changelog"])
	if s, _ := m["created_at"].(string); !timestampRe.MatchString(s) {
		t.Errorf("%s: created_at %q is not RFC 3339 with milliseconds and an offset", where, s)
	}
}

func checkChangelogShape(t *testing.T, where string, v any) {
	t.Helper()
	entries, _ := v.([]any)
	for i, x := range entries {
		e, ok := x.(map[string]any)
		if !ok {
			t.Errorf("%s: changelog[%d] is %T", where, i, x)
			continue
		}
		if _, ok := e["message"].(string); !ok {
			t.Errorf("%s: changelog[%d] has no string message: %v", where, i, e)
		}
		for k, f := range e {
			if _, ok := f.(string); !ok || !slices.Contains([]string{"message", "author", "email", "date"}, k) {
				t.Errorf("%s: changelog[%d] field %q = %v", where, i, k, f)
			}
		}
	}
}

// fullRelease checks a 201 upload response (headers, every field of the full Release with its
// type, the URLs built from the public URL, app_name and text_changelog) and decodes it.
func (e *testEnv) fullRelease(t *testing.T, r *apptest.Response) release {
	t.Helper()
	if r.Status != http.StatusCreated {
		t.Fatalf("upload: status %d: %.500s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("upload Content-Type %q", ct)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("upload Cache-Control %q", cc)
	}
	m := r.Map(t)
	checkShape(t, "release", m, fullReleaseFields)
	checkChangelogShape(t, "release", m["changelog"])
	for _, k := range []string{"app", "scheme"} {
		if o, ok := m[k].(map[string]any); ok {
			checkShape(t, "release."+k, o, refFields)
		}
	}
	if o, ok := m["channel"].(map[string]any); ok {
		checkShape(t, "release.channel", o, channelFields)
	}
	for i, x := range m["custom_fields"].([]any) {
		if o, ok := x.(map[string]any); !ok {
			t.Errorf("custom_fields[%d] is %T", i, x)
		} else {
			checkShape(t, fmt.Sprintf("custom_fields[%d]", i), o, map[string]string{"name": tString, "value": tString, "icon": tString})
		}
	}
	var rel release
	r.JSON(t, &rel)

	base := e.Config.PublicURL
	releaseURL := fmt.Sprintf("%s/channels/%s/releases/%d", base, rel.Channel.Slug, rel.ID)
	if rel.ReleaseURL != releaseURL {
		t.Errorf("release_url %q, want %q", rel.ReleaseURL, releaseURL)
	}
	if want := releaseURL + "/qrcode?size=thumb"; rel.QRCodeURL != want {
		t.Errorf("qrcode_url %q, want %q", rel.QRCodeURL, want)
	}
	wantInstall := fmt.Sprintf("%s/download/releases/%d", base, rel.ID)
	if rel.Channel.DeviceType == "ios" {
		wantInstall = "itms-services://?action=download-manifest&url=" + releaseURL + "/install"
	}
	if rel.InstallURL != wantInstall {
		t.Errorf("install_url %q, want %q", rel.InstallURL, wantInstall)
	}
	if icon := fmt.Sprintf("%s/releases/%d/icon", base, rel.ID); rel.IconURL != icon && rel.IconURL != base+"/static/default-icon.png" {
		t.Errorf("icon_url %q", rel.IconURL)
	}
	if want := rel.App.Name + " " + rel.Scheme.Name + " " + rel.Channel.Name; rel.AppName != want {
		t.Errorf("app_name %q, want %q", rel.AppName, want)
	}
	var lines []string
	for _, c := range rel.Changelog {
		lines = append(lines, "- "+c.Message)
	}
	if want := strings.Join(lines, "\n"); rel.TextChangelog != want {
		t.Errorf("text_changelog %q, want %q", rel.TextChangelog, want)
	}
	if !timestampRe.MatchString(rel.CreatedAt) {
		t.Errorf("created_at %q", rel.CreatedAt)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(rel.Channel.Slug) {
		t.Errorf("channel slug %q is not 32 lowercase hex characters", rel.Channel.Slug)
	}
	if rel.ID <= 0 || rel.Version <= 0 || rel.App.ID <= 0 || rel.Scheme.ID <= 0 {
		t.Errorf("ids: %+v", rel)
	}
	return rel
}

// follow expects a 302 from path (relative or absolute), records the Location's secrets and
// fetches it with a plain client; it returns the final response.
func (e *testEnv) follow(t *testing.T, path string, header http.Header) (*apptest.Response, string) {
	t.Helper()
	r := e.Do(t, http.MethodGet, path, nil, header)
	if r.Status != http.StatusFound {
		t.Fatalf("GET %s: status %d, want 302: %.300s", path, r.Status, r.Body)
	}
	loc := r.Header.Get("Location")
	if loc == "" {
		t.Fatalf("GET %s: 302 without Location", path)
	}
	e.secretURL(loc)
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("GET %s: redirect Cache-Control %q", path, r.Header.Get("Cache-Control"))
	}
	return e.Follow(t, loc), loc
}

// installManifest is Apple's install manifest.
type installManifest struct {
	Items []struct {
		Assets []struct {
			Kind string `plist:"kind"`
			URL  string `plist:"url"`
		} `plist:"assets"`
		Metadata map[string]string `plist:"metadata"`
	} `plist:"items"`
}

// manifest fetches and decodes an install manifest.
func (e *testEnv) manifest(t *testing.T, manifestURL string) (installManifest, string) {
	t.Helper()
	r := e.Get(t, manifestURL)
	if r.Status != http.StatusOK {
		t.Fatalf("manifest %s: status %d: %.300s", manifestURL, r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "xml") {
		t.Errorf("manifest Content-Type %q", ct)
	}
	var m installManifest
	if _, err := plist.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("manifest does not parse: %v\n%s", err, r.Body)
	}
	if len(m.Items) != 1 {
		t.Fatalf("manifest items: %d", len(m.Items))
	}
	pkg := ""
	for _, a := range m.Items[0].Assets {
		if a.Kind == "software-package" {
			pkg = a.URL
		}
	}
	if pkg == "" {
		t.Fatalf("manifest has no software-package asset:\n%s", r.Body)
	}
	e.secretURL(pkg)
	return m, pkg
}

// install downloads a release the way a device does from install_url: for iOS the manifest of
// the itms-services link, then its software-package URL; otherwise the download URL. query is
// added to the first URL (e.g. a channel password). It checks the manifest's metadata.
func (e *testEnv) install(t *testing.T, rel release, query url.Values) []byte {
	t.Helper()
	first := rel.InstallURL
	if strings.HasPrefix(first, "itms-services://") {
		u, err := url.Parse(first)
		if err != nil {
			t.Fatal(err)
		}
		if u.Query().Get("action") != "download-manifest" {
			t.Fatalf("install_url %q", first)
		}
		first = u.Query().Get("url")
	}
	if !strings.HasPrefix(first, e.Config.PublicURL+"/") {
		t.Fatalf("install URL %q is not under the public URL %s", first, e.Config.PublicURL)
	}
	if len(query) > 0 {
		first += "?" + query.Encode()
	}
	pkgURL := first
	if strings.HasPrefix(rel.InstallURL, "itms-services://") {
		m, pkg := e.manifest(t, first)
		md := m.Items[0].Metadata
		if md["bundle-identifier"] != rel.BundleID || md["bundle-version"] != rel.ReleaseVersion || md["kind"] != "software" || md["title"] != rel.App.Name {
			t.Errorf("manifest metadata %v, release %s %s %s", md, rel.BundleID, rel.ReleaseVersion, rel.App.Name)
		}
		pkgURL = pkg
	}
	r, _ := e.follow(t, pkgURL, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("package download: status %d: %.300s", r.Status, r.Body)
	}
	return r.Body
}

// checkIcon fetches a release's icon: the default icon when size is 0, otherwise a 302 to an
// image of that square size (any size when size < 0). WebP icons of Android packages may be kept
// as WebP (decisions.md), every other one must be a standard PNG.
func (e *testEnv) checkIcon(t *testing.T, rel release, size int, query url.Values) {
	t.Helper()
	base := e.Config.PublicURL
	if size == 0 {
		if rel.IconURL != base+"/static/default-icon.png" {
			t.Fatalf("icon_url %q, want the default icon", rel.IconURL)
		}
		r := e.Get(t, rel.IconURL)
		if r.Status != http.StatusOK {
			t.Fatalf("default icon: %d", r.Status)
		}
		if _, err := png.DecodeConfig(bytes.NewReader(r.Body)); err != nil {
			t.Fatalf("default icon is not a PNG: %v", err)
		}
		return
	}
	if want := fmt.Sprintf("%s/releases/%d/icon", base, rel.ID); rel.IconURL != want {
		t.Fatalf("icon_url %q, want %q", rel.IconURL, want)
	}
	u := rel.IconURL
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	r, _ := e.follow(t, u, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("icon: status %d: %.300s", r.Status, r.Body)
	}
	ct := r.Header.Get("Content-Type")
	var w, h int
	switch {
	case ct == "image/webp" && rel.Channel.DeviceType == "android":
		var ok bool
		if w, h, ok = webpSize(r.Body); !ok {
			t.Fatalf("icon served as image/webp is not a WebP image")
		}
	case ct == "image/png":
		cfg, err := png.DecodeConfig(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatalf("icon is not a standard PNG: %v", err)
		}
		if _, err := png.Decode(bytes.NewReader(r.Body)); err != nil {
			t.Fatalf("icon does not decode as PNG: %v", err)
		}
		w, h = cfg.Width, cfg.Height
	default:
		t.Fatalf("icon Content-Type %q", ct)
	}
	if size > 0 && (w != size || h != size) {
		t.Errorf("icon is %d×%d, want %d×%d", w, h, size, size)
	}
}

// webpSize reads a WebP image's size from its header.
func webpSize(b []byte) (w, h int, ok bool) {
	if len(b) < 30 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, false
	}
	switch string(b[12:16]) {
	case "VP8 ":
		return int(uint16(b[26])|uint16(b[27])<<8) & 0x3fff, int(uint16(b[28])|uint16(b[29])<<8) & 0x3fff, true
	case "VP8L":
		v := uint32(b[21]) | uint32(b[22])<<8 | uint32(b[23])<<16 | uint32(b[24])<<24
		return int(v&0x3fff) + 1, int(v>>14&0x3fff) + 1, true
	case "VP8X":
		return (int(b[24]) | int(b[25])<<8 | int(b[26])<<16) + 1, (int(b[27]) | int(b[28])<<8 | int(b[29])<<16) + 1, true
	}
	return 0, 0, false
}

// expect is what an uploaded package must show.
type expect struct {
	name, bundleID, rel, build string
	platform                   string // ios, android, macos: the channel's name and device_type
	scheme                     string
	icon                       int // 0: the default icon; -1: an icon of any size; n: an n×n icon
}

// checkUpload checks rel against want, downloads it back byte-identical through install_url and
// checks its icon.
func (e *testEnv) checkUpload(t *testing.T, rel release, data []byte, want expect) {
	t.Helper()
	got := []string{rel.App.Name, rel.BundleID, rel.ReleaseVersion, rel.BuildVersion, rel.Channel.Name, rel.Channel.DeviceType, rel.Scheme.Name}
	exp := []string{want.name, want.bundleID, want.rel, want.build, want.platform, want.platform, want.scheme}
	if !slices.Equal(got, exp) {
		t.Errorf("app, bundle id, versions, channel, device_type, scheme:\n got %q\nwant %q", got, exp)
	}
	if wantName := want.name + " " + want.scheme + " " + want.platform; rel.AppName != wantName {
		t.Errorf("app_name %q, want %q", rel.AppName, wantName)
	}
	if rel.Size != int64(len(data)) {
		t.Errorf("size %d, want %d", rel.Size, len(data))
	}
	if rel.Source != "api" || rel.Channel.BundleID != "*" || rel.Channel.HasPassword {
		t.Errorf("source %q, channel %+v", rel.Source, rel.Channel)
	}
	if got := e.install(t, rel, nil); !bytes.Equal(got, data) {
		t.Errorf("downloaded %d bytes through install_url, not the %d uploaded", len(got), len(data))
	}
	e.checkIcon(t, rel, want.icon, nil)
}

// storages runs f as parallel subtests on filesystem storage and on MinIO.
func storages(t *testing.T, f func(t *testing.T, storage string)) {
	for _, st := range []string{apptest.FS, apptest.S3} {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			f(t, st)
		})
	}
}

// ---------------------------------------------------------------------------------------------
// Real packages.

var goodFixtures = []struct {
	file string
	want expect
}{
	// iOS: the scheme follows Slipway's release-type rule (a development profile is debug).
	{"ios/appinfodemo-iphone-1.2.3-5.ipa", expect{"AppInfoDemo", "com.icyleaf.AppInfoDemo", "1.2.3", "5", "ios", "Debug", 0}},
	{"ios/bundle-ipad-1.0-1.ipa", expect{"bundle", "com.icyleaf.bundle", "1.0", "1", "ios", "AppStore", 167}},
	{"ios/demo-universal-enterprise-1.0-1.ipa", expect{"Demo", "com.icyleaf.test.Demo", "1.0", "1", "ios", "Enterprise", 0}},
	{"ios/ios-simple-objc-1.0-1.ipa", expect{"ios-simple-objc", "Bitrise.ios-simple-objc", "1.0", "1", "ios", "Debug", 0}},
	{"ios/test-assetscar-icon-1.0-1.ipa", expect{"Test", "com.ineva.test-rtmp.Test", "1.0", "1", "ios", "Debug", 0}},
	{"ios/very-capable-app-1.0-1.ipa", expect{"very-capable-app", "org.fastlane.very-capable-app", "1.0", "1", "ios", "Debug", 0}},
	{"ios/helloworld-legacy-ios5-1.0-1.0.ipa", expect{"helloworld", "com.kthcorp.helloworld", "1.0", "1.0", "ios", "Enterprise", 0}},
	// Android has no release type of its own: the default scheme.
	{"android/appinfodemo-2.1.0-10.apk", expect{"AppInfoDemo", "com.icyleaf.appinfodemo", "2.1.0", "10", "android", "Adhoc", 192}},
	{"android/appinfodemo-2.1.0-10.aab", expect{"AppInfoDemo", "com.icyleaf.appinfodemo", "2.1.0", "10", "android", "Adhoc", -1}},
	{"android/appinfoweardemo-wear-1.0-1.apk", expect{"AppInfoWearDemo", "com.icyleaf.appinfoweardemo", "1.0", "1", "android", "Adhoc", -1}},
	{"android/politedroid-1.3-4.apk", expect{"Polite Droid", "com.politedroid", "1.3", "4", "android", "Adhoc", -1}},
	// macOS, unsigned: no profile is debug.
	{"macos/guiapp-unsigned-1.0-1.zip", expect{"GuiApp", "com.icyleaf.macos.GUIApp", "1.0", "1", "macos", "Debug", -1}},
}

// badFixtures are files that are not installable packages. (other/, windows/ and linux/ hold
// packages of the platforms of issue 22: TestUploadPlatformFixtures.)
var badFixtures = []string{
	"ios/invalid/*", "ios/provisioning/*", "android/axml/*", "debug/*.zip", "debug/invalid/*",
}

func TestUploadFixtures(t *testing.T) {
	if d, ok := fixtures.Dir(); !ok {
		t.Skipf("fixtures not present at %s; TestUploadSynthetic covers every package kind", d)
	}
	storages(t, func(t *testing.T, storage string) {
		e := newEnv(t, apptest.Options{Storage: storage})
		var mu sync.Mutex
		var rels []release
		t.Run("packages", func(t *testing.T) {
			for _, f := range goodFixtures {
				t.Run(path.Base(f.file), func(t *testing.T) {
					t.Parallel()
					data := fixtures.Read(t, f.file)
					rel := e.uploadOK(t, path.Base(f.file), data)
					e.checkUpload(t, rel, data, f.want)
					mu.Lock()
					rels = append(rels, rel)
					mu.Unlock()
				})
			}
		})
		if t.Failed() {
			return
		}
		// The two appinfodemo Android builds share a channel (same app, scheme and platform):
		// versions 1 and 2 there, 1 everywhere else.
		versions := map[string][]int{}
		for _, r := range rels {
			versions[r.Channel.Slug] = append(versions[r.Channel.Slug], r.Version)
		}
		for slug, vs := range versions {
			sort.Ints(vs)
			for i, v := range vs {
				if v != i+1 {
					t.Errorf("channel %s versions %v", slug, vs)
				}
			}
		}
		if n := e.rows(t, "releases"); n != len(goodFixtures) {
			t.Errorf("%d releases, want %d", n, len(goodFixtures))
		}
		if n := e.rows(t, "storage_objects"); n != 0 {
			t.Errorf("%d storage_objects rows (pending or deleted) after successful uploads", n)
		}
		// Every object in storage is a package or an icon of a release.
		var keys []string
		rows, err := e.DB.Pool.Query(context.Background(), `SELECT object_key FROM releases UNION ALL SELECT icon_key FROM releases WHERE icon_key IS NOT NULL`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		rows.Close()
		objs := e.Objects(t)
		slices.Sort(keys)
		slices.Sort(objs)
		if !slices.Equal(keys, objs) {
			t.Errorf("storage holds %q, releases reference %q", objs, keys)
		}
	})
}

func TestUploadBadFixtures(t *testing.T) {
	var files []string
	for _, g := range badFixtures {
		files = append(files, fixtures.Glob(g)...)
	}
	if len(files) == 0 {
		t.Skip("fixtures not present; TestUploadRejectsNonPackages covers synthetic bad files")
	}
	storages(t, func(t *testing.T, storage string) {
		e := newEnv(t, apptest.Options{Storage: storage})
		dir, _ := fixtures.Dir()
		t.Run("files", func(t *testing.T) {
			for _, f := range files {
				rel, _ := filepath.Rel(dir, f)
				t.Run(filepath.ToSlash(rel), func(t *testing.T) {
					t.Parallel()
					data, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.File(filepath.Base(f), data))
					msg := wantError(t, r, http.StatusUnprocessableEntity)
					if strings.Contains(msg, "packages/") {
						t.Errorf("error message reveals a storage key: %q", msg)
					}
				})
			}
		})
		assertNothingKept(t, e)
	})
}

// assertNothingKept fails unless storage is empty and no app, release or bookkeeping row exists.
func assertNothingKept(t *testing.T, e *testEnv) {
	t.Helper()
	if objs := e.Objects(t); len(objs) != 0 {
		t.Errorf("storage still holds %q", objs)
	}
	for _, table := range []string{"apps", "schemes", "channels", "releases", "storage_objects"} {
		if n := e.rows(t, table); n != 0 {
			t.Errorf("%d rows in %s", n, table)
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Synthetic packages: the same checks without ../shared.

// dmg returns a fake UDIF disk image: n bytes with the "koly" trailer at n-512.
func dmg(n int) []byte {
	b := bytes.Repeat([]byte{0xAB}, n)
	copy(b[n-512:], "koly")
	return b
}

func TestUploadSynthetic(t *testing.T) {
	profile := func(o appletest.ProfileOptions) *appletest.ProfileOptions { return &o }
	cases := []struct {
		name   string
		file   string
		data   []byte
		fields []apptest.Part
		want   expect
	}{
		{"ipa with a CgBI icon, development profile", "synth.ipa", appletest.BuildIPA(appletest.IPAOptions{
			AppName: "SynthIOS", DisplayName: "Synth iOS", BundleID: "com.example.synth", Version: "2.3.4", Build: "77",
			Icons:   []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120, CgBI: true}, {Name: "AppIcon60x60@3x.png", Size: 180, CgBI: true}},
			Profile: profile(appletest.ProfileOptions{Devices: []string{"00008030-000000000000001E"}, GetTaskAllow: true}),
		}), nil, expect{"Synth iOS", "com.example.synth", "2.3.4", "77", "ios", "Debug", 180}},
		{"ipa, ad-hoc profile, binary plist, standard PNG icon", "adhoc.ipa", appletest.BuildIPA(appletest.IPAOptions{
			AppName: "AdhocApp", BundleID: "com.example.adhoc", Version: "1.0", Build: "3", BinaryPlist: true,
			Icons:   []appletest.IconFile{{Name: "AppIcon76x76@2x~ipad.png", Size: 152}},
			Profile: profile(appletest.ProfileOptions{Devices: []string{"a", "b"}}),
		}), nil, expect{"AdhocApp", "com.example.adhoc", "1.0", "3", "ios", "Adhoc", 152}},
		{"ipa, enterprise profile", "ent.ipa", appletest.BuildIPA(appletest.IPAOptions{
			AppName: "EntApp", BundleID: "com.example.ent", Profile: profile(appletest.ProfileOptions{AllDevices: true}),
		}), nil, expect{"EntApp", "com.example.ent", "1.0", "1", "ios", "Enterprise", 0}},
		{"ipa, distribution profile", "store.ipa", appletest.BuildIPA(appletest.IPAOptions{
			AppName: "StoreApp", BundleID: "com.example.store", Profile: profile(appletest.ProfileOptions{BetaReportsActive: true}),
		}), nil, expect{"StoreApp", "com.example.store", "1.0", "1", "ios", "AppStore", 0}},
		{"ipa from the App Store", "itunes.ipa", appletest.BuildIPA(appletest.IPAOptions{
			AppName: "ITunesApp", BundleID: "com.example.itunes", AppStore: true, Profile: profile(appletest.ProfileOptions{Devices: []string{"a"}}),
		}), nil, expect{"ITunesApp", "com.example.itunes", "1.0", "1", "ios", "AppStore", 0}},
		{"ipa without a profile", "noprofile.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "NoProfile", BundleID: "com.example.noprofile"}),
			nil, expect{"NoProfile", "com.example.noprofile", "1.0", "1", "ios", "Debug", 0}},
		{"release_type field wins", "typed.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Typed", BundleID: "com.example.typed"}),
			[]apptest.Part{apptest.Field("release_type", "Beta")}, expect{"Typed", "com.example.typed", "1.0", "1", "ios", "Beta", 0}},
		{"name field wins", "named.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Parsed", BundleID: "com.example.named"}),
			[]apptest.Part{apptest.Field("name", "  Given Name ")}, expect{"Given Name", "com.example.named", "1.0", "1", "ios", "Debug", 0}},
		{"apk with PNG icons", "droid.apk", androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
			Package: "com.example.droid", VersionCode: 42, VersionName: "3.1.0", MinSDK: 21, TargetSDK: 34,
			LabelStrings: map[string]string{"": "Droid", "zh-CN": "机器人"},
			Icons: []androidtest.AndroidIcon{
				{Density: 160, Path: "res/mipmap-mdpi-v4/ic_launcher.png", Data: androidtest.AndroidPNG(48, 48)},
				{Density: 640, Path: "res/mipmap-xxxhdpi-v4/ic_launcher.png", Data: androidtest.AndroidPNG(192, 192)},
			}}}), nil, expect{"Droid", "com.example.droid", "3.1.0", "42", "android", "Adhoc", 192}},
		{"apk, release_type given", "typed.apk", androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
			Package: "com.example.typed.droid", VersionCode: 1, VersionName: "1.0", Label: "TypedDroid"}}),
			[]apptest.Part{apptest.Field("release_type", "release")}, expect{"TypedDroid", "com.example.typed.droid", "1.0", "1", "android", "Release", 0}},
		{"aab", "bundle.aab", androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: androidtest.AndroidManifest{
			Package: "com.example.bundle", VersionCode: 7, VersionName: "0.7", MinSDK: 24,
			LabelStrings: map[string]string{"": "Bundle"},
			Icons: []androidtest.AndroidIcon{
				{Density: 480, Path: "res/mipmap-xxhdpi-v4/ic_launcher.png", Data: androidtest.AndroidPNG(144, 144)},
			}}}), nil, expect{"Bundle", "com.example.bundle", "0.7", "7", "android", "Adhoc", 144}},
		{"zipped macOS app with an icns icon", "mac.zip", appletest.BuildMacZip(appletest.MacZipOptions{
			AppName: "MacSynth", BundleID: "com.example.mac", Version: "4.5", Build: "45", IconSizes: []int{128, 256}, MacOSXJunk: true,
		}), nil, expect{"MacSynth", "com.example.mac", "4.5", "45", "macos", "Debug", 256}},
		{"zipped macOS app, distribution profile", "macrel.zip", appletest.BuildMacZip(appletest.MacZipOptions{
			AppName: "MacRelease", BundleID: "com.example.macrel", Folder: "build/", Profile: profile(appletest.ProfileOptions{Platform: "OSX"}),
		}), nil, expect{"MacRelease", "com.example.macrel", "1.0", "1", "macos", "Release", 0}},
		{"pkg", "installer.pkg", appletest.BuildPKG(appletest.PKGOptions{
			Distribution: true, Title: "Pkg Synth", AppName: "PkgApp", BundleID: "com.example.pkg", Version: "1.2", Build: "12",
		}), nil, expect{"", "com.example.pkg", "1.2", "12", "macos", "", 0}},
		{"dmg with its metadata as fields", "disk.dmg", dmg(8192), []apptest.Part{
			apptest.Field("name", "DiskApp"), apptest.Field("bundle_id", "com.example.dmg"),
			apptest.Field("release_version", "5.0"), apptest.Field("build_version", "500"),
		}, expect{"DiskApp", "com.example.dmg", "5.0", "500", "macos", "Adhoc", 0}},
	}
	storages(t, func(t *testing.T, storage string) {
		e := newEnv(t, apptest.Options{Storage: storage})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				rel := e.uploadOK(t, c.file, c.data, c.fields...)
				want := c.want
				if want.name == "" { // a pkg is named after its title or app: either is fine
					if rel.App.Name != "Pkg Synth" && rel.App.Name != "PkgApp" {
						t.Errorf("pkg app name %q", rel.App.Name)
					}
					want.name, want.scheme = rel.App.Name, rel.Scheme.Name
				}
				e.checkUpload(t, rel, c.data, want)
				if rel.Version != 1 {
					t.Errorf("version %d in a new channel", rel.Version)
				}
			})
		}
	})
}

// TestUploadDMGNeedsFields: a disk image carries no readable metadata, so the versions and bundle
// id must come as form fields; without them the upload is a 422 naming the missing ones.
func TestUploadDMGNeedsFields(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	all := map[string]string{"bundle_id": "com.example.dmg", "release_version": "1.0", "build_version": "1"}
	for _, missing := range [][]string{{"bundle_id", "release_version", "build_version"}, {"bundle_id"}, {"build_version"}, {"release_version", "build_version"}} {
		t.Run(strings.Join(missing, "+"), func(t *testing.T) {
			parts := []apptest.Part{apptest.Field("token", e.UploadToken)}
			for k, v := range all {
				if !slices.Contains(missing, k) {
					parts = append(parts, apptest.Field(k, v))
				}
			}
			r := e.upload(t, append(parts, apptest.File("disk.dmg", dmg(4096)))...)
			msg := wantError(t, r, http.StatusUnprocessableEntity)
			var body struct {
				Entry map[string][]string `json:"entry"`
			}
			r.JSON(t, &body)
			for _, m := range missing {
				if _, ok := body.Entry[m]; !ok && !strings.Contains(msg, m) {
					t.Errorf("the error does not name %s: %s", m, r.Body)
				}
			}
			for k := range body.Entry {
				if !slices.Contains(missing, k) {
					t.Errorf("the error names %s, which was given: %s", k, r.Body)
				}
			}
		})
	}
	// A file without the trailer is not a disk image, whatever its name.
	r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.Field("bundle_id", "a.b"), apptest.Field("release_version", "1"),
		apptest.Field("build_version", "1"), apptest.File("disk.dmg", bytes.Repeat([]byte{1}, 4096)))
	wantError(t, r, http.StatusUnprocessableEntity)
	assertNothingKept(t, e)
}

// TestUploadRejectsNonPackages: synthetic files that are not packages are 422 and leave nothing.
func TestUploadRejectsNonPackages(t *testing.T) {
	storages(t, func(t *testing.T, storage string) {
		e := newEnv(t, apptest.Options{Storage: storage})
		bad := map[string][]byte{
			"text.ipa":        []byte("not-a-zip-file"),
			"empty.ipa":       {},
			"png.apk":         appletest.StandardPNG(8, 8),
			"empty-payload":   appletest.BuildZip(appletest.Entry{Name: "Payload/"}),
			"dsym.zip":        appletest.BuildZip(appletest.Entry{Name: "App.dSYM/Contents/Resources/DWARF/App", Data: []byte("x")}),
			"broken-plist":    appletest.BuildIPA(appletest.IPAOptions{RawInfoPlist: []byte("<plist><dict><key>")}),
			"manifest-text":   androidtest.AndroidZip(androidtest.AndroidEntry{Name: "AndroidManifest.xml", Data: []byte("<manifest package='a'/>")}),
			"truncated.ipa":   appletest.BuildIPA(appletest.IPAOptions{})[:300],
			"windows.exe":     append([]byte("MZ"), make([]byte, 1000)...),
			"no-bundle-id.ip": appletest.BuildIPA(appletest.IPAOptions{InfoPlist: map[string]any{"CFBundleIdentifier": nil}}),
		}
		t.Run("files", func(t *testing.T) {
			for name, data := range bad {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					wantError(t, e.upload(t, apptest.Field("token", e.UploadToken), apptest.File(name, data)), http.StatusUnprocessableEntity)
				})
			}
		})
		assertNothingKept(t, e)
	})
}

// ---------------------------------------------------------------------------------------------
// Upload rules of decisions.md.

func ipa(bundleID, version, build string) []byte {
	return appletest.BuildIPA(appletest.IPAOptions{AppName: "Rules", BundleID: bundleID, Version: version, Build: build})
}

func apk(pkg, version string, code int) []byte {
	return androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
		Package: pkg, VersionCode: code, VersionName: version, Label: "RulesDroid"}})
}

func TestUploadRules(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	f := apptest.Field

	t.Run("find or create without channel_key", func(t *testing.T) {
		t.Parallel()
		r1 := e.uploadOK(t, "a.ipa", ipa("com.example.foc", "1.0", "1"), f("name", "FindOrCreate"))
		r2 := e.uploadOK(t, "a.ipa", ipa("com.example.foc", "1.0", "2"), f("name", "FindOrCreate"), f("channel_key", ""))
		if r1.App.ID != r2.App.ID || r1.Scheme.ID != r2.Scheme.ID || r1.Channel.Slug != r2.Channel.Slug {
			t.Fatalf("second upload landed elsewhere: %+v / %+v", r1, r2)
		}
		if r1.Version != 1 || r2.Version != 2 || r2.ID == r1.ID {
			t.Fatalf("versions %d, %d", r1.Version, r2.Version)
		}
		// Another platform: same app, scheme Adhoc (no release type), channel android.
		r3 := e.uploadOK(t, "a.apk", apk("com.example.foc", "1.0", 1), f("name", "FindOrCreate"))
		if r3.App.ID != r1.App.ID || r3.Scheme.Name != "Adhoc" || r3.Channel.Name != "android" || r3.Version != 1 {
			t.Fatalf("apk: %+v", r3)
		}
		// Another release type: same app, new scheme, new channel.
		r4 := e.uploadOK(t, "a.ipa", ipa("com.example.foc", "1.0", "3"), f("name", "FindOrCreate"), f("release_type", "adhoc"))
		if r4.App.ID != r1.App.ID || r4.Scheme.Name != "Adhoc" || r4.Scheme.ID != r3.Scheme.ID || r4.Channel.Slug == r1.Channel.Slug || r4.Channel.Name != "ios" {
			t.Fatalf("adhoc ipa: %+v", r4)
		}
		var app struct {
			Name    string `json:"name"`
			Schemes []struct {
				Name     string           `json:"name"`
				Channels []map[string]any `json:"channels"`
			} `json:"schemes"`
		}
		e.GetWith(t, fmt.Sprintf("/api/apps/%d", r1.App.ID), e.AdminToken).JSON(t, &app)
		var got []string
		for _, s := range app.Schemes {
			for _, c := range s.Channels {
				got = append(got, s.Name+"/"+c["name"].(string))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"Adhoc/android", "Adhoc/ios", "Debug/ios"}) {
			t.Fatalf("app tree %v", got)
		}
	})

	t.Run("channel_key", func(t *testing.T) {
		t.Parallel()
		base := e.uploadOK(t, "k.ipa", ipa("com.example.keyed", "1.0", "1"), f("name", "Keyed"))
		slug := base.Channel.Slug
		r := e.uploadOK(t, "k.ipa", ipa("com.example.keyed", "1.1", "2"), f("channel_key", slug))
		if r.Channel.Slug != slug || r.Version != 2 || r.App.ID != base.App.ID {
			t.Fatalf("keyed upload: %+v", r)
		}
		// The channel's app and scheme win over a name or release type in the form.
		r = e.uploadOK(t, "k.ipa", ipa("com.example.keyed", "1.2", "3"), f("channel_key", slug), f("name", "Other"), f("release_type", "enterprise"))
		if r.Channel.Slug != slug || r.App.ID != base.App.ID || r.Scheme.ID != base.Scheme.ID {
			t.Fatalf("keyed upload with name: %+v", r)
		}
		wantError(t, e.upload(t, f("token", e.UploadToken), f("channel_key", "0123456789abcdef0123456789abcdef"),
			apptest.File("k.ipa", ipa("com.example.keyed", "1.0", "1"))), http.StatusNotFound)
		msg := wantError(t, e.upload(t, f("token", e.UploadToken), f("channel_key", slug),
			apptest.File("k.apk", apk("com.example.keyed", "1.0", 1))), http.StatusUnprocessableEntity)
		if !strings.Contains(msg, "android") || !strings.Contains(msg, "ios") {
			t.Errorf("platform mismatch message %q", msg)
		}
		// A bundle id pattern.
		e.exec(t, `UPDATE channels SET bundle_id = 'com.other.*' WHERE slug = $1`, slug)
		wantError(t, e.upload(t, f("token", e.UploadToken), f("channel_key", slug),
			apptest.File("k.ipa", ipa("com.example.keyed", "1.0", "4"))), http.StatusUnprocessableEntity)
		r = e.uploadOK(t, "o.ipa", ipa("com.other.app", "1.0", "5"), f("channel_key", slug))
		if r.Channel.BundleID != "com.other.*" || r.BundleID != "com.other.app" {
			t.Fatalf("pattern upload: %+v", r)
		}
		// An exact bundle id.
		e.exec(t, `UPDATE channels SET bundle_id = 'com.other.app' WHERE slug = $1`, slug)
		wantError(t, e.upload(t, f("token", e.UploadToken), f("channel_key", slug),
			apptest.File("k.ipa", ipa("com.other.app2", "1.0", "4"))), http.StatusUnprocessableEntity)
		e.uploadOK(t, "o.ipa", ipa("com.other.app", "1.0", "6"), f("channel_key", slug))
		// The rejected uploads took no version.
		var versions []int
		var listing struct {
			Releases []release `json:"releases"`
		}
		e.Get(t, "/api/apps/versions?channel_key="+slug).JSON(t, &listing)
		for _, x := range listing.Releases {
			versions = append(versions, x.Version)
		}
		if !slices.Equal(versions, []int{5, 4, 3, 2, 1}) {
			t.Fatalf("versions after rejections %v", versions)
		}
	})

	t.Run("password", func(t *testing.T) {
		t.Parallel()
		rel := e.uploadOK(t, "p.apk", apk("com.example.pw", "1.0", 1), f("name", "Protected"), f("password", "open sesame"))
		if !rel.Channel.HasPassword {
			t.Fatalf("has_password false after a password upload")
		}
		// An empty password changes nothing; a later upload needs no password.
		rel2 := e.uploadOK(t, "p.apk", apk("com.example.pw", "1.0", 2), f("channel_key", rel.Channel.Slug), f("password", ""))
		if !rel2.Channel.HasPassword {
			t.Fatalf("an empty password cleared the channel's password")
		}
		dl := fmt.Sprintf("/download/releases/%d", rel2.ID)
		wantError(t, e.Get(t, dl), http.StatusUnauthorized)
		wantError(t, e.Get(t, dl+"?password=wrong"), http.StatusForbidden)
		if got := e.install(t, rel2, url.Values{"password": {"open sesame"}}); !bytes.Equal(got, apk("com.example.pw", "1.0", 2)) {
			t.Fatalf("download with the password: %d bytes", len(got))
		}
		wantError(t, e.Get(t, fmt.Sprintf("/releases/%d/icon", rel2.ID)), http.StatusUnauthorized)
		// Its versions stay public metadata (api.md: not marked as requiring authentication).
		if r := e.Get(t, "/api/apps/versions?channel_key="+rel.Channel.Slug); r.Status != http.StatusOK {
			t.Fatalf("versions of a protected channel: %d", r.Status)
		}
		// A new non-empty password replaces the old one.
		e.uploadOK(t, "p.apk", apk("com.example.pw", "1.0", 3), f("channel_key", rel.Channel.Slug), f("password", "new one"))
		wantError(t, e.Get(t, dl+"?password="+url.QueryEscape("open sesame")), http.StatusForbidden)
		if r := e.Get(t, dl+"?password="+url.QueryEscape("new one")); r.Status != http.StatusFound {
			t.Fatalf("download with the new password: %d %s", r.Status, r.Body)
		}
	})

	t.Run("password guessing is slowed down", func(t *testing.T) {
		t.Parallel()
		rel := e.uploadOK(t, "g.apk", apk("com.example.guess", "1.0", 1), f("name", "Guarded"), f("password", "right horse"))
		dl := fmt.Sprintf("/download/releases/%d?password=", rel.ID)
		// The five free wrong attempts, at once (each costs a bcrypt comparison): all 403.
		statuses := make([]int, 5)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if resp, err := e.Client.Get(e.URL + dl + "wrong" + strconv.Itoa(i)); err == nil {
					statuses[i] = resp.StatusCode
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		for i, s := range statuses {
			if s != http.StatusForbidden {
				t.Fatalf("wrong password %d: %d", i, s)
			}
		}
		// Past the free attempts, an attempt that comes too soon is refused. The first wait is
		// short, so a slow machine may see a few more 403s first; a 429 must come.
		limited := false
		for i := 0; i < 20 && !limited; i++ {
			r := e.Get(t, dl+"again"+strconv.Itoa(i))
			switch r.Status {
			case http.StatusTooManyRequests:
				r.Error(t)
				if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s <= 0 {
					t.Errorf("429 Retry-After %q", r.Header.Get("Retry-After"))
				}
				limited = true
			case http.StatusForbidden:
			default:
				t.Fatalf("wrong password: %d %s", r.Status, r.Body)
			}
		}
		if !limited {
			t.Fatal("25 wrong passwords in a row were never refused with 429")
		}
	})

	t.Run("changelog", func(t *testing.T) {
		t.Parallel()
		up := func(changelog string) *apptest.Response {
			return e.upload(t, f("token", e.UploadToken), f("name", "Changelog"), f("changelog", changelog),
				apptest.File("c.apk", apk("com.example.changelog", "1.0", 1)))
		}
		cases := []struct {
			text string
			want []changelogEntry
		}{
			{"- first fix\n\n* second fix\r\nthird fix\n   \n", []changelogEntry{{Message: "first fix"}, {Message: "second fix"}, {Message: "third fix"}}},
			{"[FIX] crash", []changelogEntry{{Message: "[FIX] crash"}}},
			{"[FIX] crash\n[NEW] feature", []changelogEntry{{Message: "[FIX] crash"}, {Message: "[NEW] feature"}}},
			{"", []changelogEntry{}},
			{`[{"message":"Fix login","author":"Ann","email":"ann@example.com","date":"2026-11-20 10:11:12"},{"message":"Add dark mode"}]`,
				[]changelogEntry{{Message: "Fix login", Author: "Ann", Email: "ann@example.com", Date: "2026-11-20 10:11:12"}, {Message: "Add dark mode"}}},
			{"[]", []changelogEntry{}},
		}
		for _, c := range cases {
			rel := e.fullRelease(t, up(c.text))
			if len(rel.Changelog) != len(c.want) || (len(c.want) > 0 && !slices.Equal(rel.Changelog, c.want)) {
				t.Errorf("changelog %q → %+v, want %+v", c.text, rel.Changelog, c.want)
			}
		}
		for _, bad := range []string{`[1]`, `[{"message": 1}]`, `[{"author": "x"}]`, `["text"]`, `[{"message":"ok","date":5}]`} {
			r := up(bad)
			wantError(t, r, http.StatusUnprocessableEntity)
			if !strings.Contains(string(r.Body), "changelog") {
				t.Errorf("changelog %s: the error does not name the field: %s", bad, r.Body)
			}
		}
	})

	t.Run("custom_fields", func(t *testing.T) {
		t.Parallel()
		up := func(v string) *apptest.Response {
			return e.upload(t, f("token", e.UploadToken), f("name", "Custom"), f("custom_fields", v),
				apptest.File("c.apk", apk("com.example.custom", "1.0", 1)))
		}
		for _, none := range []string{`["[]"]`, `[]`, ``} {
			if rel := e.fullRelease(t, up(none)); len(rel.CustomFields) != 0 {
				t.Errorf("custom_fields %s → %+v", none, rel.CustomFields)
			}
		}
		want := []customField{{Name: "Environment", Value: "staging", Icon: "fa fa-server"}, {Name: "Tester", Value: "QA", Icon: ""}}
		raw, _ := json.Marshal(want)
		if rel := e.fullRelease(t, up(string(raw))); !slices.Equal(rel.CustomFields, want) {
			t.Errorf("custom_fields → %+v", rel.CustomFields)
		}
		for _, bad := range []string{`not json`, `{"name":"x"}`, `[1]`, `["x"]`, `[{"name": 5, "value": "x", "icon": "y"}]`} {
			wantError(t, up(bad), http.StatusUnprocessableEntity)
		}
	})

	t.Run("source, branch, git_commit, ci_url", func(t *testing.T) {
		t.Parallel()
		rel := e.uploadOK(t, "s.apk", apk("com.example.src", "1.0", 1), f("name", "Sourced"))
		if rel.Source != "api" || rel.Branch != "" || rel.GitCommit != "" || rel.CIURL != "" {
			t.Errorf("defaults: %+v", rel)
		}
		rel = e.uploadOK(t, "s.apk", apk("com.example.src", "1.0", 2), f("name", "Sourced"), f("source", "jenkins"),
			f("branch", "origin/feature/login"), f("git_commit", "0123abcd"), f("ci_url", "https://ci.example.com/job/1"))
		if rel.Source != "jenkins" || rel.Branch != "feature/login" || rel.GitCommit != "0123abcd" || rel.CIURL != "https://ci.example.com/job/1" {
			t.Errorf("given: %+v", rel)
		}
		if rel = e.uploadOK(t, "s.apk", apk("com.example.src", "1.0", 3), f("name", "Sourced"), f("branch", "develop")); rel.Branch != "develop" {
			t.Errorf("branch %q", rel.Branch)
		}
		wantError(t, e.upload(t, f("token", e.UploadToken), f("ci_url", "javascript:alert(1)"), apptest.File("s.apk", apk("com.example.src", "1.0", 4))),
			http.StatusUnprocessableEntity)
	})

	t.Run("no token", func(t *testing.T) {
		t.Parallel()
		r := e.upload(t, apptest.File("n.apk", apk("com.example.notoken", "1.0", 1)))
		wantError(t, r, http.StatusUnauthorized)
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Token") {
			t.Errorf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
		}
	})
}

// TestUploadIdempotency: a retried upload with the same Idempotency-Key returns the first
// release (201, same id), records no second release and keeps no extra object.
func TestUploadIdempotency(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	data := apk("com.example.idem", "1.0", 1)
	send := func(key string) *apptest.Response {
		body, ctype := apptest.Multipart(apptest.Field("name", "Idem"), apptest.File("i.apk", data))
		return e.Do(t, http.MethodPost, "/api/apps/upload", body, http.Header{
			"Content-Type": {ctype}, "Authorization": {"Token " + e.UploadToken}, "Idempotency-Key": {key}})
	}
	first := e.fullRelease(t, send("build-42"))
	objects := e.Objects(t)
	for range 2 {
		again := e.fullRelease(t, send("build-42"))
		if again.ID != first.ID || again.Version != first.Version {
			t.Fatalf("retry returned release %d v%d, first was %d v%d", again.ID, again.Version, first.ID, first.Version)
		}
	}
	if n := e.rows(t, "releases"); n != 1 {
		t.Fatalf("%d releases after retries", n)
	}
	if got := e.Objects(t); !slices.Equal(got, objects) {
		t.Fatalf("objects after retries %q, before %q", got, objects)
	}
	if n := e.rows(t, "storage_objects"); n != 0 {
		t.Fatalf("%d bookkeeping rows after retries", n)
	}
	// Another key is another upload.
	if other := e.fullRelease(t, send("build-43")); other.ID == first.ID || other.Version != 2 {
		t.Fatalf("new key: %+v", other)
	}
	// The key belongs to the token: another token with the same key uploads anew.
	body, ctype := apptest.Multipart(apptest.Field("name", "Idem"), apptest.File("i.apk", data))
	r := e.Do(t, http.MethodPost, "/api/apps/upload", body, http.Header{
		"Content-Type": {ctype}, "Authorization": {"Token " + e.AdminToken}, "Idempotency-Key": {"build-42"}})
	if rel := e.fullRelease(t, r); rel.ID == first.ID {
		t.Fatalf("another token's key replayed the first token's release")
	}
}

// TestUploadSizeLimit: over the configured limit is a 413 and nothing is kept, on both backends.
func TestUploadSizeLimit(t *testing.T) {
	storages(t, func(t *testing.T, storage string) {
		e := newEnv(t, apptest.Options{Storage: storage, Configure: func(c *config.Config) { c.MaxUploadBytes = 64 << 10 }})
		big := appletest.BuildIPA(appletest.IPAOptions{AppName: "Big", FillerBytes: 256 << 10})
		wantError(t, e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("big.ipa", big)), http.StatusRequestEntityTooLarge)
		// With the file before the token, the upload is refused before a byte of it is stored.
		wantError(t, e.upload(t, apptest.File("big.ipa", big), apptest.Field("token", e.UploadToken)), http.StatusUnauthorized)
		assertNothingKept(t, e)
		// A body declared over the limit is refused before it is read.
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /api/apps/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Token %s\r\n"+
			"Content-Type: multipart/form-data; boundary=B\r\nContent-Length: %d\r\n\r\n--B\r\n", e.UploadToken, int64(1)<<40)
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a bound, not an assertion
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("declared 1 TiB: %d", resp.StatusCode)
		}
		// Under the limit is fine.
		small := ipa("com.example.small", "1.0", "1")
		if len(small) > 64<<10 {
			t.Fatalf("synthetic ipa of %d bytes", len(small))
		}
		e.uploadOK(t, "small.ipa", small)
	})
}

// TestUploadForm covers where the token and the file may be in the form, and malformed forms.
func TestUploadForm(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	f := apptest.Field
	data := apk("com.example.form", "1.0", 1)

	// The token after the file is refused before the file is stored (issue 20: it took a slot and
	// storage first), with a message saying where the token goes.
	r := e.upload(t, f("name", "Form"), apptest.File("f.apk", data), f("token", e.UploadToken))
	if msg := wantError(t, r, http.StatusUnauthorized); !strings.Contains(msg, "before the file") {
		t.Fatalf("token after the file: %q", msg)
	}
	if got := e.Objects(t); len(got) != 0 {
		t.Fatalf("a file sent before its token was stored: %q", got)
	}
	// Fields before the token, the token, the file, then more fields: the fields after the file
	// are read too.
	rel := e.fullRelease(t, e.upload(t, f("name", "Form"), f("token", e.UploadToken), apptest.File("f.apk", data), f("changelog", "late field")))
	if rel.App.Name != "Form" || len(rel.Changelog) != 1 || rel.Changelog[0].Message != "late field" {
		t.Fatalf("fields after the file: %+v", rel)
	}
	objects := e.Objects(t)
	check := func(what string) {
		t.Helper()
		if got := e.Objects(t); !slices.Equal(got, objects) {
			t.Fatalf("%s: objects %q, want %q", what, got, objects)
		}
		if n := e.rows(t, "storage_objects"); n != 0 {
			t.Fatalf("%s: %d bookkeeping rows", what, n)
		}
		if n := e.rows(t, "releases"); n != 1 {
			t.Fatalf("%s: %d releases", what, n)
		}
	}
	// A wrong token after the file: 401, nothing stored.
	wantError(t, e.upload(t, apptest.File("f.apk", data), f("token", "slw_not_a_token")), http.StatusUnauthorized)
	check("wrong token after the file")
	wantError(t, e.upload(t, f("token", "slw_not_a_token"), apptest.File("f.apk", data)), http.StatusUnauthorized)
	check("wrong token before the file")
	// A wrong token in the header is refused before the body is read.
	r = e.Upload(t, "/api/apps/upload", "slw_wrong", f("token", e.UploadToken), apptest.File("f.apk", data))
	wantError(t, r, http.StatusUnauthorized)
	check("wrong header token")
	// No file.
	msg := wantError(t, e.upload(t, f("token", e.UploadToken), f("name", "NoFile")), http.StatusUnprocessableEntity)
	if !strings.Contains(msg, "file") {
		t.Errorf("missing file message %q", msg)
	}
	// Two files.
	wantError(t, e.upload(t, f("token", e.UploadToken), apptest.File("a.apk", data), apptest.File("b.apk", data)), http.StatusUnprocessableEntity)
	check("two files")
	// A truncated body.
	body, ctype := apptest.Multipart(f("token", e.UploadToken), apptest.File("f.apk", data))
	cut := bytes.NewReader(body.Bytes()[:body.Len()-200])
	wantError(t, e.Do(t, http.MethodPost, "/api/apps/upload", cut, http.Header{"Content-Type": {ctype}}), http.StatusUnprocessableEntity)
	check("truncated body")
	// Not multipart.
	wantError(t, e.Do(t, http.MethodPost, "/api/apps/upload", bytes.NewReader(data), http.Header{
		"Content-Type": {"application/octet-stream"}, "Authorization": {"Token " + e.UploadToken}}), http.StatusUnprocessableEntity)
	check("raw body")
	// Invalid fields are 422s naming the field, and keep nothing.
	for field, value := range map[string]string{
		"name": strings.Repeat("n", 256), "release_type": "not a type!", "source": "bad\xffutf8", "branch": strings.Repeat("b", 300),
		"ci_url": "ftp://ci.example.com/1", "password": strings.Repeat("p", 129),
	} {
		r := e.upload(t, f("token", e.UploadToken), f(field, value), apptest.File("f.apk", data))
		wantError(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), field) {
			t.Errorf("invalid %s: the error does not name it: %s", field, r.Body)
		}
		check("invalid " + field)
	}
	body, ctype = apptest.Multipart(f("token", e.UploadToken), apptest.File("f.apk", data))
	wantError(t, e.Do(t, http.MethodPost, "/api/apps/upload", body, http.Header{"Content-Type": {ctype}, "Idempotency-Key": {strings.Repeat("k", 256)}}),
		http.StatusUnprocessableEntity)
	check("long Idempotency-Key")

	// The URLs come from the configured public URL, never from the request's Host or forwarding
	// headers (fullRelease checks them).
	body, ctype = apptest.Multipart(f("token", e.UploadToken), f("name", "Form"), apptest.File("h.apk", data))
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/api/apps/upload", body)
	req.Host = "evil.example"
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("X-Forwarded-Host", "evil.example")
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	spoofed := e.fullRelease(t, &apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: raw})
	if strings.Contains(string(raw), "evil.example") {
		t.Fatalf("the response uses the request's host: %s", raw)
	}
	if spoofed.Version != 2 {
		t.Fatalf("spoofed-host upload %+v", spoofed)
	}
	// An admin token may upload too.
	r = e.Upload(t, "/api/apps/upload", e.AdminToken, apptest.File("f.apk", data))
	if r.Status != http.StatusCreated {
		t.Fatalf("admin token upload: %d %s", r.Status, r.Body)
	}
}
