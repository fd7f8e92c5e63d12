package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/signing"
	"github.com/slipwayhq/slipway/test/apptest"
)

// A console page rendered before a SLIPWAY_SECRET rotation (or by a replica still on the old key)
// still posts: its CSRF token, made with the previous key, is accepted while that key is listed
// in SLIPWAY_SECRET_PREVIOUS, and refused once it is removed. New pages carry new-key tokens.
func TestConsoleCSRFAcrossKeyRotation(t *testing.T) {
	const oldKey, newKey = "old-console-key-old-console-key-0", "new-console-key-new-console-key-1"
	for _, c := range []struct {
		name     string
		previous [][]byte
		want     int
	}{
		{"old key listed", [][]byte{[]byte(oldKey)}, http.StatusOK},
		{"old key removed", nil, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := apptest.New(t, apptest.Options{Configure: func(cfg *config.Config) {
				cfg.Secret, cfg.SecretPrevious = []byte(newKey), c.previous
			}})
			admin, _ := signedIn(t, e, "alice")
			page := csrfOf(t, admin, e.URL+"/console/tokens")
			var session string
			for _, ck := range admin.Jar.Cookies(mustParse(t, e.URL+"/console")) {
				if ck.Name == "slipway_session" {
					session = ck.Value
				}
			}
			if page != signing.New([]byte(newKey)).Sign("console-csrf", session) {
				t.Fatal("the page's CSRF token is not made with the current key")
			}
			oldToken := signing.New([]byte(oldKey)).Sign("console-csrf", session)
			resp, body := fetch(t, admin, http.MethodPost, e.URL+"/console/tokens", url.Values{"name": {"ci-web"}, "scope": {"upload"}, "csrf": {oldToken}})
			if resp.StatusCode != c.want {
				t.Fatalf("a form with an old-key CSRF token: %d, want %d: %.300s", resp.StatusCode, c.want, body)
			}
		})
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
