package blob_test

import (
	"errors"
	"mime"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/blobtest"
)

func TestCheckKey(t *testing.T) {
	for _, k := range append(blobtest.ValidKeys, "a", "packages/01J/app.ipa", strings.Repeat("k", 1024)) {
		if err := blob.CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v", k, err)
		}
	}
	for _, k := range blobtest.InvalidKeys {
		if err := blob.CheckKey(k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("CheckKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestContentDisposition(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"", "attachment"},
		{"App.ipa", `attachment; filename="App.ipa"`},
		{`a "q" \b.apk`, `attachment; filename="a \"q\" \\b.apk"`},
		{"Ünï 名.ipa", `attachment; filename="_n_ _.ipa"; filename*=UTF-8''%C3%9Cn%C3%AF%20%E5%90%8D.ipa`},
		{"evil\r\nSet-Cookie: x.ipa", `attachment; filename="evil__Set-Cookie: x.ipa"; filename*=UTF-8''evil%0D%0ASet-Cookie%3A%20x.ipa`},
	} {
		got := blob.ContentDisposition(c.name)
		if got != c.want {
			t.Errorf("ContentDisposition(%q) = %s, want %s", c.name, got, c.want)
		}
		if strings.ContainsAny(got, "\r\n") {
			t.Errorf("ContentDisposition(%q) contains a line break", c.name)
		}
		if _, params, err := mime.ParseMediaType(got); c.name != "" && !strings.ContainsAny(c.name, "\r\n") && (err != nil || params["filename"] != c.name) {
			t.Errorf("ContentDisposition(%q) parses back as %q, %v", c.name, params["filename"], err)
		}
	}
}
