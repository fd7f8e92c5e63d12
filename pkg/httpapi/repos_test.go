package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/repokey"
)

// testRepoKey is a repository signing keyring made for one test.
func testRepoKey(t testing.TB) *repokey.Keyring {
	t.Helper()
	armored, err := repokey.Generate("Slipway test", "repo@example.com")
	if err != nil {
		t.Fatal(err)
	}
	k, err := repokey.Parse(armored)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Without SLIPWAY_REPO_KEY_FILE the key routes answer 404 saying which variable to set.
func TestRepoKeyUnset(t *testing.T) {
	srv := newServer(t)
	for _, path := range []string{"/keys/slipway.asc", "/channels/any/apt/key.asc", "/channels/any/apt/dists/stable/InRelease"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		if rec.Code != 404 || !strings.Contains(string(body), "SLIPWAY_REPO_KEY_FILE") {
			t.Errorf("%s: %d %s", path, rec.Code, body)
		}
	}
}
