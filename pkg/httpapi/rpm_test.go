package httpapi_test

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// Without a repository key the DNF repository answers 404 saying which variable to set.
func TestRPMRepoKeyUnset(t *testing.T) {
	srv := newServer(t)
	for _, path := range []string{"/channels/any/rpm/repodata/repomd.xml", "/channels/any/rpm/packages/1/a.rpm"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		if rec.Code != 404 || !strings.Contains(string(body), "SLIPWAY_REPO_KEY_FILE") {
			t.Errorf("%s: %d %s", path, rec.Code, body)
		}
	}
}

// exerciseRPMRepository drives the DNF repository's operations for TestOpenAPIEveryOperation:
// a Linux channel's repodata (GET, HEAD, 304), a package's redirect, and the 404s.
func exerciseRPMRepository(t *testing.T, e *apptest.Env, admin http.Header) {
	expect := func(r *apptest.Response, status int, what string) *apptest.Response {
		t.Helper()
		if r.Status != status {
			t.Fatalf("%s: status %d, want %d: %.300s", what, r.Status, status, r.Body)
		}
		return r
	}
	rel := e.UploadApp(t, "demo-1.2.3-1.x86_64.rpm", linuxtest.BuildRPM(linuxtest.RPMOptions{}))
	slug := rel["channel"].(map[string]any)["slug"].(string)
	relID := int64(rel["id"].(float64))
	testkit.Eventually(t, time.Minute, "the .rpm's checksums to be verified", func() bool {
		return expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d", relID), nil, admin), 200, "get").Map(t)["checksum_state"] == "verified"
	})
	base := "/channels/" + slug + "/rpm/"
	// Its package carries no signature: the channel page's .repo file says gpgcheck=0, and why.
	if page := expect(e.Get(t, "/channels/"+slug), 200, "channel page"); !strings.Contains(string(page.Body), "\ngpgcheck=0\n") ||
		!strings.Contains(string(page.Body), `id="repo-rpm-unsigned"`) || !strings.Contains(string(page.Body), "/etc/yum.repos.d/"+slug+".repo") {
		t.Errorf("the channel page's DNF setup:\n%s", page.Body)
	}
	md := expect(e.Get(t, base+"repodata/repomd.xml"), 200, "repomd.xml")
	etag := expect(e.Do(t, "HEAD", base+"repodata/repomd.xml", nil, nil), 200, "HEAD repomd.xml").Header.Get("ETag")
	expect(e.Do(t, "GET", base+"repodata/repomd.xml", nil, http.Header{"If-None-Match": {etag}}), 304, "repomd.xml If-None-Match")
	expect(e.Get(t, base+"repodata/repomd.xml.asc"), 200, "repomd.xml.asc")
	var doc struct {
		Data []struct {
			Location struct {
				Href string `xml:"href,attr"`
			} `xml:"location"`
		} `xml:"data"`
	}
	if err := xml.Unmarshal(md.Body, &doc); err != nil || len(doc.Data) != 3 {
		t.Fatalf("repomd.xml: %v %s", err, md.Body)
	}
	for _, d := range doc.Data {
		expect(e.Get(t, "/channels/"+slug+"/rpm/"+d.Location.Href), 200, d.Location.Href)
	}
	expect(e.Get(t, base+"repodata/"+strings.Repeat("0", 64)+"-primary.xml.gz"), 404, "an unknown data file")
	pkg := fmt.Sprintf("%spackages/%d/demo-1.2.3-1.x86_64.rpm", base, relID)
	expect(e.Get(t, pkg), 302, "package")
	expect(e.Do(t, "HEAD", pkg, nil, nil), 302, "HEAD package")
	expect(e.Get(t, fmt.Sprintf("%spackages/%d/other.rpm", base, relID)), 404, "package by another name")
	expect(e.Get(t, "/channels/nope/rpm/repodata/repomd.xml"), 404, "unknown channel")
}
