package httpapi_test

// Integration tests of downloads (issue 3): /download/releases/:id, /releases/:id/icon and the
// iOS install manifest, on filesystem storage (signed /objects/ URLs with Range support) and on
// MinIO (presigned URLs), with and without a channel password.

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

func iconIPA(name, bundleID, version string) []byte {
	return appletest.BuildIPA(appletest.IPAOptions{AppName: name, BundleID: bundleID, Version: version, Build: "1",
		Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120, CgBI: true}}})
}

func TestDownloadsFS(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	base := e.Config.PublicURL
	droid := apk("com.example.dl", "1.0", 1)
	rel := e.uploadOK(t, "My App.apk", droid, apptest.Field("name", "Downloads"))

	t.Run("signed object URL with Range support", func(t *testing.T) {
		t.Parallel()
		r := e.Get(t, fmt.Sprintf("/download/releases/%d", rel.ID))
		if r.Status != http.StatusFound {
			t.Fatalf("download: %d %s", r.Status, r.Body)
		}
		loc := r.Header.Get("Location")
		e.secretURL(loc)
		if !strings.HasPrefix(loc, base+"/objects/") {
			t.Fatalf("Location %q is not a signed /objects/ URL of the service", loc)
		}
		full := e.Get(t, loc)
		if full.Status != http.StatusOK || !bytes.Equal(full.Body, droid) {
			t.Fatalf("object: %d, %d bytes", full.Status, len(full.Body))
		}
		if cd := full.Header.Get("Content-Disposition"); cd != `attachment; filename="My App.apk"` {
			t.Errorf("Content-Disposition %q", cd)
		}
		if ct := full.Header.Get("Content-Type"); ct != "application/vnd.android.package-archive" {
			t.Errorf("Content-Type %q", ct)
		}
		if full.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("an object served without nosniff: %v", full.Header)
		}
		if full.Header.Get("Accept-Ranges") != "bytes" {
			t.Errorf("Accept-Ranges %q", full.Header.Get("Accept-Ranges"))
		}
		part := e.Do(t, http.MethodGet, loc, nil, http.Header{"Range": {"bytes=10-19"}})
		if part.Status != http.StatusPartialContent || !bytes.Equal(part.Body, droid[10:20]) {
			t.Fatalf("range: %d %q", part.Status, part.Body)
		}
		if cr := part.Header.Get("Content-Range"); cr != fmt.Sprintf("bytes 10-19/%d", len(droid)) {
			t.Errorf("Content-Range %q", cr)
		}
		tail := e.Do(t, http.MethodGet, loc, nil, http.Header{"Range": {"bytes=-7"}})
		if tail.Status != http.StatusPartialContent || !bytes.Equal(tail.Body, droid[len(droid)-7:]) {
			t.Fatalf("suffix range: %d", tail.Status)
		}
		if r := e.Do(t, http.MethodGet, loc, nil, http.Header{"Range": {fmt.Sprintf("bytes=%d-", len(droid)+10)}}); r.Status != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("range past the end: %d", r.Status)
		}

		// File names are cleaned of folders and quotes, and non-ASCII ones survive (RFC 6266).
		for _, c := range []struct{ quoted, want string }{
			{`..\\..\\x\"y.apk`, `attachment; filename="xy.apk"`},
			{"Démo 应用.apk", `attachment; filename="D_mo __.apk"; filename*=UTF-8''D%C3%A9mo%20%E5%BA%94%E7%94%A8.apk`},
		} {
			boundary := "x" + testkit.RandomHex(8)
			body := rawMultipart(boundary, []rawPart{
				{headers: []string{`Content-Disposition: form-data; name="name"`}, body: []byte("Downloads")},
				{headers: []string{`Content-Disposition: form-data; name="file"; filename="` + c.quoted + `"`, "Content-Type: application/octet-stream"}, body: droid},
			})
			named := e.fullRelease(t, e.Do(t, http.MethodPost, "/api/apps/upload", bytes.NewReader(body), http.Header{
				"Content-Type": {"multipart/form-data; boundary=" + boundary}, "Authorization": {"Token " + e.UploadToken}}))
			obj, _ := e.follow(t, fmt.Sprintf("/download/releases/%d", named.ID), nil)
			if cd := obj.Header.Get("Content-Disposition"); obj.Status != http.StatusOK || cd != c.want {
				t.Errorf("file name %s: %d, Content-Disposition %q, want %q", c.quoted, obj.Status, cd, c.want)
			}
		}

		// Tampered or expired links are refused with a JSON 403.
		u, _ := url.Parse(loc)
		key := strings.TrimPrefix(u.Path, "/objects/")
		qv := u.Query()
		tampered := func(mod func(p *string, q url.Values)) string {
			p := u.Path
			q := url.Values{}
			for k, v := range qv {
				q[k] = append([]string(nil), v...)
			}
			mod(&p, q)
			return base + p + "?" + q.Encode()
		}
		tok := qv.Get("t")
		flipped := tok[:len(tok)-1] + "A"
		if strings.HasSuffix(tok, "A") {
			flipped = tok[:len(tok)-1] + "B"
		}
		for name, link := range map[string]string{
			"signature": tampered(func(_ *string, q url.Values) { q.Set("t", flipped) }),
			"expiry":    tampered(func(_ *string, q url.Values) { q.Set("t", "9999999999"+tok[strings.Index(tok, "."):]) }),
			"no token":  tampered(func(_ *string, q url.Values) { q.Del("t") }),
			"file name": tampered(func(_ *string, q url.Values) { q.Set("name", "evil.html") }),
			"type":      tampered(func(_ *string, q url.Values) { q.Set("type", "text/html") }),
			"other key": tampered(func(p *string, _ url.Values) { *p = strings.Replace(*p, "packages/", "icons/", 1) }),
			"traversal": tampered(func(p *string, _ url.Values) { *p = "/objects/../" + key }),
			"expired": base + "/objects/" + key + "?" + url.Values{"name": {qv.Get("name")}, "type": {qv.Get("type")},
				"t": {e.Service.Signer.Token("object", -time.Minute, key, qv.Get("name"), qv.Get("type"))}}.Encode(),
		} {
			r := e.Get(t, link)
			if r.Status == http.StatusOK {
				t.Errorf("%s: a tampered link was served", name)
				continue
			}
			if name == "traversal" {
				continue // cleaned by the router: any refusal will do
			}
			wantError(t, r, http.StatusForbidden)
		}
	})

	t.Run("icon", func(t *testing.T) {
		t.Parallel()
		withIcon := e.uploadOK(t, "icon.ipa", iconIPA("IconApp", "com.example.icon", "1.0"))
		r, loc := e.follow(t, withIcon.IconURL, nil)
		if !strings.HasPrefix(loc, base+"/objects/") || r.Status != http.StatusOK || r.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("icon: %s → %d %s", loc, r.Status, r.Header.Get("Content-Type"))
		}
		if cfg, err := png.DecodeConfig(bytes.NewReader(r.Body)); err != nil || cfg.Width != 120 {
			t.Fatalf("icon: %v %+v", err, cfg)
		}
		// A release without an icon redirects its icon path to the default icon.
		r2 := e.Get(t, fmt.Sprintf("/releases/%d/icon", rel.ID))
		if r2.Status != http.StatusFound || r2.Header.Get("Location") != base+"/static/default-icon.png" {
			t.Fatalf("default icon: %d %s", r2.Status, r2.Header.Get("Location"))
		}
	})

	t.Run("install manifest", func(t *testing.T) {
		t.Parallel()
		data := iconIPA("Installer", "com.example.install", "3.2.1")
		ios := e.uploadOK(t, "inst.ipa", data)
		manifestURL := fmt.Sprintf("%s/channels/%s/releases/%d/install", base, ios.Channel.Slug, ios.ID)
		if ios.InstallURL != "itms-services://?action=download-manifest&url="+manifestURL {
			t.Fatalf("install_url %q", ios.InstallURL)
		}
		m, pkg := e.manifest(t, manifestURL)
		md := m.Items[0].Metadata
		if md["bundle-identifier"] != "com.example.install" || md["bundle-version"] != "3.2.1" || md["title"] != "Installer" || md["kind"] != "software" {
			t.Fatalf("manifest metadata %v", md)
		}
		if pkg != fmt.Sprintf("%s/download/releases/%d?via=install", base, ios.ID) {
			t.Fatalf("software-package URL %q", pkg)
		}
		for _, a := range m.Items[0].Assets {
			if a.Kind != "software-package" && a.URL != ios.IconURL {
				t.Errorf("manifest %s URL %q, icon_url %q", a.Kind, a.URL, ios.IconURL)
			}
		}
		if got := e.install(t, ios, nil); !bytes.Equal(got, data) {
			t.Fatal("the package behind the manifest differs from the upload")
		}
		// The manifest lives under its own channel only.
		wantError(t, e.Get(t, fmt.Sprintf("/channels/%s/releases/%d/install", rel.Channel.Slug, ios.ID)), http.StatusNotFound)
		// A non-iOS release has no manifest.
		wantError(t, e.Get(t, fmt.Sprintf("/channels/%s/releases/%d/install", rel.Channel.Slug, rel.ID)), http.StatusNotFound)
	})

	t.Run("unknown and malformed ids", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{"/download/releases/999999", "/releases/999999/icon", "/channels/" + rel.Channel.Slug + "/releases/999999/install"} {
			wantError(t, e.Get(t, p), http.StatusNotFound)
		}
		for _, p := range []string{"/download/releases/abc", "/releases/-1/icon", "/download/releases/0"} {
			wantError(t, e.Get(t, p), http.StatusUnprocessableEntity)
		}
	})

	t.Run("password channel", func(t *testing.T) {
		t.Parallel()
		data := iconIPA("Secret", "com.example.secret", "1.0")
		a := e.uploadOK(t, "s.ipa", data, apptest.Field("password", "hunter2 hunter2"))
		b := e.uploadOK(t, "s.ipa", iconIPA("Secret", "com.example.secret", "1.1"), apptest.Field("channel_key", a.Channel.Slug))
		manifestURL := fmt.Sprintf("%s/channels/%s/releases/%d/install", base, a.Channel.Slug, a.ID)
		wantError(t, e.Get(t, manifestURL), http.StatusUnauthorized)
		wantError(t, e.Get(t, manifestURL+"?password=nope"), http.StatusForbidden)
		wantError(t, e.Get(t, a.IconURL), http.StatusUnauthorized)
		wantError(t, e.Get(t, fmt.Sprintf("/download/releases/%d", a.ID)), http.StatusUnauthorized)

		// With the password, the manifest's package URL carries an access token that opens the
		// package without the password (iOS fetches it without cookies).
		_, pkg := e.manifest(t, manifestURL+"?password="+url.QueryEscape("hunter2 hunter2"))
		pu, err := url.Parse(pkg)
		if err != nil || pu.Query().Get("access") == "" || pu.Query().Get("password") != "" {
			t.Fatalf("package URL of a protected release %q", pkg)
		}
		if !strings.HasPrefix(pkg, fmt.Sprintf("%s/download/releases/%d?", base, a.ID)) {
			t.Fatalf("package URL %q", pkg)
		}
		got, _ := e.follow(t, pkg, nil)
		if got.Status != http.StatusOK || !bytes.Equal(got.Body, data) {
			t.Fatalf("package through the access token: %d, %d bytes", got.Status, len(got.Body))
		}
		if got := e.install(t, a, url.Values{"password": {"hunter2 hunter2"}}); !bytes.Equal(got, data) {
			t.Fatal("install with the password")
		}
		access := pu.Query().Get("access")
		// The token opens that release only, and only as issued.
		wantError(t, e.Get(t, fmt.Sprintf("/download/releases/%d?access=%s", b.ID, url.QueryEscape(access))), http.StatusUnauthorized)
		wantError(t, e.Get(t, fmt.Sprintf("/download/releases/%d?access=%s", a.ID, url.QueryEscape(access+"x"))), http.StatusUnauthorized)
		// A new password revokes it.
		e.uploadOK(t, "s.ipa", iconIPA("Secret", "com.example.secret", "1.2"), apptest.Field("channel_key", a.Channel.Slug), apptest.Field("password", "another one"))
		wantError(t, e.Get(t, pkg), http.StatusUnauthorized)
		// The icon opens with the password too.
		if r, _ := e.follow(t, a.IconURL+"?password="+url.QueryEscape("another one"), nil); r.Status != http.StatusOK {
			t.Fatalf("icon with the password: %d", r.Status)
		}
	})
}

func TestDownloadsS3(t *testing.T) {
	e := newEnv(t, apptest.Options{Storage: apptest.S3})
	data := iconIPA("Presigned", "com.example.presigned", "2.0")
	rel := e.uploadOK(t, "Demo App.ipa", data)

	r := e.Get(t, fmt.Sprintf("/download/releases/%d", rel.ID))
	if r.Status != http.StatusFound {
		t.Fatalf("download: %d %s", r.Status, r.Body)
	}
	loc := r.Header.Get("Location")
	e.secretURL(loc)
	if strings.HasPrefix(loc, e.Config.PublicURL) || !strings.Contains(loc, "X-Amz-Signature=") {
		t.Fatalf("Location is not a presigned S3 URL: %.60s…", loc)
	}
	// A plain client, no credentials, as a device downloads.
	resp, err := http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body.Bytes(), data) {
		t.Fatalf("presigned download: %d, %d bytes", resp.StatusCode, body.Len())
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename="Demo App.ipa"` {
		t.Errorf("Content-Disposition %q", cd)
	}
	// Range requests go to S3 directly.
	req, _ := http.NewRequest(http.MethodGet, loc, nil)
	req.Header.Set("Range", "bytes=0-3")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusPartialContent {
		t.Fatalf("presigned range: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}

	// The icon and the package behind the manifest.
	icon, iconLoc := e.follow(t, rel.IconURL, nil)
	if strings.HasPrefix(iconLoc, e.Config.PublicURL) || icon.Status != http.StatusOK || icon.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("icon: %d %s", icon.Status, icon.Header.Get("Content-Type"))
	}
	if _, err := png.Decode(bytes.NewReader(icon.Body)); err != nil {
		t.Fatal(err)
	}
	if got := e.install(t, rel, nil); !bytes.Equal(got, data) {
		t.Fatal("install through the manifest")
	}

	// Without a client file name, the download is named after the app and version.
	nameless := e.fullRelease(t, e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("", ipa("com.example.nameless", "4.1", "1"))))
	r = e.Get(t, fmt.Sprintf("/download/releases/%d", nameless.ID))
	e.secretURL(r.Header.Get("Location"))
	resp, err = http.Get(r.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename="Rules-4.1.ipa"` {
		t.Errorf("Content-Disposition without a client file name %q", cd)
	}

	// A non-ASCII file name reaches the browser exactly (RFC 6266 filename*), through the
	// presigned URL's signed response-content-disposition.
	utf := e.uploadOK(t, "Démo 应用.ipa", data, apptest.Field("name", "Unicode"))
	r = e.Get(t, fmt.Sprintf("/download/releases/%d", utf.ID))
	e.secretURL(r.Header.Get("Location"))
	resp, err = http.Get(r.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cd := resp.Header.Get("Content-Disposition"); resp.StatusCode != http.StatusOK ||
		cd != `attachment; filename="D_mo __.ipa"; filename*=UTF-8''D%C3%A9mo%20%E5%BA%94%E7%94%A8.ipa` {
		t.Errorf("non-ASCII file name: %d, Content-Disposition %q", resp.StatusCode, cd)
	}

	// Password-protected release on S3: the access token leads to a presigned URL.
	secret := e.uploadOK(t, "p.ipa", data, apptest.Field("name", "S3Secret"), apptest.Field("password", "s3 password"))
	wantError(t, e.Get(t, fmt.Sprintf("/download/releases/%d", secret.ID)), http.StatusUnauthorized)
	if got := e.install(t, secret, url.Values{"password": {"s3 password"}}); !bytes.Equal(got, data) {
		t.Fatal("protected install on S3")
	}
}
