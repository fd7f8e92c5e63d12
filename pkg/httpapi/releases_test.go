package httpapi_test

// Integration tests of the release queries (issue 3): GET /api/apps/versions, /api/apps/latest
// (with its Zealot SDK form) and /api/apps/version_exist.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/slipwayhq/slipway/test/apptest"
)

// listing is the channel release listing of versions and latest.
type listing struct {
	AppName  string          `json:"app_name"`
	BundleID string          `json:"bundle_id"`
	GitURL   *string         `json:"git_url"`
	App      ref             `json:"app"`
	Scheme   ref             `json:"scheme"`
	Releases json.RawMessage `json:"releases"`
}

// getListing fetches a listing, checks its shape (and that of each short release) and returns it
// with the releases' versions (a single object for latest gives one version).
func getListing(t *testing.T, e *testEnv, path string) (listing, []int) {
	t.Helper()
	r := e.Get(t, path)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	checkAPIHeaders(t, r)
	m := r.Map(t)
	checkShape(t, path, m, listingFields)
	for _, k := range []string{"app", "scheme"} {
		if o, ok := m[k].(map[string]any); ok {
			checkShape(t, path+" "+k, o, refFields)
		}
	}
	var versions []int
	switch rs := m["releases"].(type) {
	case []any:
		versions = []int{}
		for i, x := range rs {
			o, ok := x.(map[string]any)
			if !ok {
				t.Fatalf("%s: releases[%d] is %T", path, i, x)
			}
			checkShortShape(t, fmt.Sprintf("%s releases[%d]", path, i), o)
			versions = append(versions, int(o["version"].(float64)))
		}
	case map[string]any:
		checkShortShape(t, path+" releases", rs)
		versions = []int{int(rs["version"].(float64))}
	default:
		t.Fatalf("%s: releases is %T", path, m["releases"])
	}
	var l listing
	r.JSON(t, &l)
	return l, versions
}

func checkAPIHeaders(t *testing.T, r *apptest.Response) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
}

func TestReleaseQueries(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	f := apptest.Field
	// One channel, uploaded in order: versions 1..5.
	type up struct{ bundle, rel, build, commit string }
	var rels []release
	for _, u := range []up{
		{"com.example.q", "1.0", "1", "c1"},
		{"com.example.q", "1.9", "5", "c2"},
		{"com.example.q", "1.10", "6", "c3"},
		{"com.example.q", "1.10", "7", "c3"},
		{"com.example.other", "0.1", "1", ""},
	} {
		rels = append(rels, e.uploadOK(t, "q.ipa", ipa(u.bundle, u.rel, u.build), f("name", "Query"), f("git_commit", u.commit),
			f("changelog", "build "+u.build)))
	}
	slug := rels[0].Channel.Slug
	for i, r := range rels {
		if r.Channel.Slug != slug || r.Version != i+1 {
			t.Fatalf("setup: release %d in %s v%d", i, r.Channel.Slug, r.Version)
		}
	}
	q := func(path string, kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		return path + "?" + v.Encode()
	}

	t.Run("versions", func(t *testing.T) {
		t.Parallel()
		l, vs := getListing(t, e, q("/api/apps/versions", "channel_key", slug))
		if !slices.Equal(vs, []int{5, 4, 3, 2, 1}) {
			t.Fatalf("versions %v", vs)
		}
		if l.AppName != "Query Debug ios" || l.BundleID != "*" || l.GitURL != nil || l.App.Name != "Query" || l.Scheme.Name != "Debug" ||
			l.App.ID != rels[0].App.ID || l.Scheme.ID != rels[0].Scheme.ID {
			t.Fatalf("listing %+v", l)
		}
		var short []release
		if err := json.Unmarshal(l.Releases, &short); err != nil {
			t.Fatal(err)
		}
		// The short form agrees with the upload's full form.
		full := rels[2]
		s := short[2]
		if s.AppName != full.AppName || s.BundleID != full.BundleID || s.ReleaseVersion != full.ReleaseVersion || s.BuildVersion != full.BuildVersion ||
			s.Size != full.Size || s.IconURL != full.IconURL || s.InstallURL != full.InstallURL || s.CreatedAt != full.CreatedAt ||
			s.GitCommit != "c3" || s.Source != "api" || len(s.Changelog) != 1 || s.Changelog[0].Message != "build 6" {
			t.Fatalf("short %+v\nfull %+v", s, full)
		}
		for _, c := range []struct {
			page, perPage string
			want          []int
		}{
			{"1", "2", []int{5, 4}},
			{"2", "2", []int{3, 2}},
			{"3", "2", []int{1}},
			{"4", "2", []int{}},
			{"99", "", []int{}},
			{"", "1", []int{5}}, // the Flutter client's "latest" query
			{"2", "1", []int{4}},
			{"", "100", []int{5, 4, 3, 2, 1}},
			{"", "1000", []int{5, 4, 3, 2, 1}},
		} {
			_, vs := getListing(t, e, q("/api/apps/versions", "channel_key", slug, "page", c.page, "per_page", c.perPage))
			if !slices.Equal(vs, c.want) {
				t.Errorf("page %q per_page %q: %v, want %v", c.page, c.perPage, vs, c.want)
			}
		}
		r := e.Get(t, q("/api/apps/versions", "channel_key", slug, "page", "4", "per_page", "2"))
		var raw map[string]json.RawMessage
		r.JSON(t, &raw)
		if string(raw["releases"]) != "[]" {
			t.Errorf("past the end: releases %s", raw["releases"])
		}
		wantError(t, e.Get(t, q("/api/apps/versions", "channel_key", "0123456789abcdef0123456789abcdef")), http.StatusNotFound)
		wantError(t, e.Get(t, "/api/apps/versions"), http.StatusUnprocessableEntity)
		wantError(t, e.Get(t, q("/api/apps/versions", "channel_key", "")), http.StatusUnprocessableEntity)
		for _, bad := range [][]string{{"page", "0"}, {"page", "-1"}, {"page", "x"}, {"per_page", "0"}, {"per_page", "1.5"}} {
			wantError(t, e.Get(t, q("/api/apps/versions", "channel_key", slug, bad[0], bad[1])), http.StatusUnprocessableEntity)
		}
	})

	t.Run("versions pagination limits", func(t *testing.T) {
		t.Parallel()
		bulk := e.uploadOK(t, "b.apk", apk("com.example.bulk", "1.0", 1), f("name", "Bulk"))
		e.exec(t, `INSERT INTO releases (channel_id, version, bundle_id, release_version, build_version, platform, format, size, sha256, object_key, filename)
			SELECT c.id, g, 'com.example.bulk', '1.0.' || g, g::text, 'android', 'apk', 1, 'x', 'fake/bulk/' || g, 'b.apk'
			FROM channels c, generate_series(2, 121) g WHERE c.slug = $1`, bulk.Channel.Slug)
		e.exec(t, `UPDATE channels SET last_version = 121 WHERE slug = $1`, bulk.Channel.Slug)
		desc := func(from, to int) []int {
			var out []int
			for v := from; v >= to; v-- {
				out = append(out, v)
			}
			return out
		}
		for _, c := range []struct {
			page, perPage string
			want          []int
		}{
			{"", "", desc(121, 97)},     // default per_page 25
			{"5", "", desc(21, 1)},      // the last default page
			{"6", "", nil},              // past it
			{"", "100", desc(121, 22)},  // the maximum
			{"", "101", desc(121, 22)},  // over it: clamped to 100
			{"", "1000", desc(121, 22)}, // far over it
			{"2", "1000", desc(21, 1)},  // pages of the clamped size
			{"3", "1000", nil},          // past the end
			{"2", "50", desc(71, 22)},   // an ordinary page
			{"61", "2", []int{1}},       // a deep page
			{"1000000", "100", nil},     // far past the end
		} {
			_, vs := getListing(t, e, q("/api/apps/versions", "channel_key", bulk.Channel.Slug, "page", c.page, "per_page", c.perPage))
			if !slices.Equal(vs, c.want) && !(len(vs) == 0 && len(c.want) == 0) {
				t.Errorf("page %q per_page %q: %v, want %v", c.page, c.perPage, vs, c.want)
			}
		}
	})

	t.Run("latest", func(t *testing.T) {
		t.Parallel()
		l, vs := getListing(t, e, q("/api/apps/latest", "channel_key", slug, "release_version", "1.0", "build_version", "1"))
		if !slices.Equal(vs, []int{5}) {
			t.Fatalf("latest %v", vs)
		}
		var one release
		if err := json.Unmarshal(l.Releases, &one); err != nil {
			t.Fatalf("latest releases is not one object: %s", l.Releases)
		}
		if one.BundleID != "com.example.other" || l.AppName != "Query Debug ios" {
			t.Fatalf("latest %+v", one)
		}
		if _, vs = getListing(t, e, q("/api/apps/latest", "channel_key", slug, "bundle_id", "com.example.q", "release_version", "1.0", "build_version", "1")); !slices.Equal(vs, []int{4}) {
			t.Fatalf("latest of com.example.q %v", vs)
		}
		wantError(t, e.Get(t, q("/api/apps/latest", "channel_key", slug, "bundle_id", "com.example.none", "release_version", "1.0", "build_version", "1")), http.StatusNotFound)
		wantError(t, e.Get(t, q("/api/apps/latest", "channel_key", "0123456789abcdef0123456789abcdef", "release_version", "1.0", "build_version", "1")), http.StatusNotFound)
		// The specification marks both versions required, and the SDKs always send them.
		wantError(t, e.Get(t, q("/api/apps/latest", "channel_key", slug)), http.StatusUnprocessableEntity)
		wantError(t, e.Get(t, q("/api/apps/latest", "channel_key", slug, "release_version", "1.0")), http.StatusUnprocessableEntity)
		wantError(t, e.Get(t, q("/api/apps/latest", "channel_key", slug, "build_version", "1")), http.StatusUnprocessableEntity)
		wantError(t, e.Get(t, "/api/apps/latest?release_version=1.0&build_version=1"), http.StatusUnprocessableEntity)
		// A channel without releases.
		e.exec(t, `INSERT INTO channels (scheme_id, name, slug, device_type) VALUES ($1, 'empty', 'e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0', 'ios')`, rels[0].Scheme.ID)
		wantError(t, e.Get(t, q("/api/apps/latest", "channel_key", "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0", "release_version", "1.0", "build_version", "1")), http.StatusNotFound)
		if _, vs = getListing(t, e, q("/api/apps/versions", "channel_key", "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0")); len(vs) != 0 {
			t.Fatalf("versions of an empty channel %v", vs)
		}
	})

	t.Run("latest, SDK form", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			sdk, rel, build, bundle string
			want                    []int
		}{
			{"ios-0.2.1", "1.9", "5", "", []int{4, 3}},
			{"ios-0.2.1", "1.10", "7", "", []int{}},       // up to date
			{"ios-0.2.1", "1.9", "99", "", []int{4, 3}},   // 1.10 > 1.9 whatever the build
			{"ios-0.2.1", "1.10", "6", "", []int{4}},      // same version, higher build
			{"ios-0.2.1", "v1.10", "6", "", []int{4}},     // v1.10 = 1.10
			{"ios-0.2.1", "1.10.0", "7", "", []int{}},     // 1.10.0 = 1.10
			{"ios-0.2.1", "1.2", "1", "", []int{4, 3, 2}}, // 1.9 > 1.2
			{"ios-0.2.1", "0.0.1", "1", "com.example.other", []int{5}},
			{"ios-0.2.1", "0.1", "1", "com.example.other", []int{}},
			{"ios-0.2.1", "0.9", "1", "com.example.q", []int{4, 3, 2, 1}},
			{"android-1.0.0", "1.9", "5", "com.example.q", []int{4, 3}},
		} {
			l, vs := getListing(t, e, q("/api/apps/latest", "channel_key", slug, "sdk", c.sdk, "release_version", c.rel, "build_version", c.build, "bundle_id", c.bundle))
			if l.Releases[0] != '[' {
				t.Fatalf("sdk form: releases is not an array: %s", l.Releases)
			}
			if !slices.Equal(vs, c.want) {
				t.Errorf("sdk %s, %s (%s) %s: %v, want %v", c.sdk, c.rel, c.build, c.bundle, vs, c.want)
			}
		}
	})

	t.Run("version_exist", func(t *testing.T) {
		t.Parallel()
		get := func(kv ...string) *apptest.Response {
			return e.Get(t, q("/api/apps/version_exist", append([]string{"channel_key", slug}, kv...)...))
		}
		ok := func(want int, kv ...string) {
			t.Helper()
			r := get(kv...)
			if r.Status != http.StatusOK {
				t.Fatalf("version_exist %v: %d %s", kv, r.Status, r.Body)
			}
			checkAPIHeaders(t, r)
			m := r.Map(t)
			checkShortShape(t, "version_exist", m)
			if v := int(m["version"].(float64)); v != want {
				t.Fatalf("version_exist %v: version %d, want %d", kv, v, want)
			}
		}
		ok(3, "bundle_id", "com.example.q", "release_version", "1.10", "build_version", "6")
		ok(1, "bundle_id", "com.example.q", "release_version", "1.0", "build_version", "1")
		ok(4, "bundle_id", "com.example.q", "git_commit", "c3") // the newest of two
		ok(1, "bundle_id", "com.example.q", "git_commit", "c1")
		ok(5, "bundle_id", "com.example.other", "release_version", "0.1", "build_version", "1")
		for _, kv := range [][]string{
			{"bundle_id", "com.example.q", "release_version", "9.9", "build_version", "1"},
			{"bundle_id", "com.example.q", "release_version", "1.10", "build_version", "8"},
			{"bundle_id", "com.example.other", "release_version", "1.10", "build_version", "6"},
			{"bundle_id", "com.example.q", "git_commit", "nope"},
			{"bundle_id", "com.example.none", "git_commit", "c1"},
		} {
			wantError(t, get(kv...), http.StatusNotFound)
		}
		for _, kv := range [][]string{
			{"bundle_id", "com.example.q"},
			{"bundle_id", "com.example.q", "release_version", "1.0"},
			{"bundle_id", "com.example.q", "build_version", "1"},
			{"release_version", "1.0", "build_version", "1"},
			{"git_commit", "c1"},
			{},
		} {
			wantError(t, get(kv...), http.StatusUnprocessableEntity)
		}
		wantError(t, e.Get(t, "/api/apps/version_exist?bundle_id=com.example.q&git_commit=c1"), http.StatusUnprocessableEntity)
		wantError(t, e.Get(t, "/api/apps/version_exist?channel_key=0123456789abcdef0123456789abcdef&bundle_id=com.example.q&git_commit=c1"), http.StatusNotFound)
	})
}
