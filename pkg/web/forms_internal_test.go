package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution/service"
	"github.com/slipwayhq/slipway/pkg/signing"
)

func flashHandler(key string, previous ...string) *Handler {
	var prev [][]byte
	for _, p := range previous {
		prev = append(prev, []byte(p))
	}
	return &Handler{cfg: &config.Config{PublicURL: "https://slipway.example"}, svc: &service.Service{Signer: signing.New([]byte(key), prev...)}}
}

// roundTrip seals a flash with one replica and opens it with another, as a browser carries it.
func roundTrip(t *testing.T, from, to *Handler, session, otherSession string) *flash {
	t.Helper()
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodPost, "/console/tokens", nil)
	from.setFlash(c, session, flash{Kind: "ok", Message: "made", Secret: "sw_secret_value", SecretID: "new-token-secret"})
	cookie := w.Header().Get("Set-Cookie")
	if strings.Contains(cookie, "sw_secret_value") || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "Secure") {
		t.Fatalf("the flash cookie: %s", cookie)
	}
	w2 := httptest.NewRecorder()
	c2, _ := gin.CreateTestContext(w2)
	c2.Request = httptest.NewRequest(http.MethodGet, "/console/tokens", nil)
	c2.Request.Header.Set("Cookie", strings.SplitN(cookie, ";", 2)[0])
	f := to.takeFlash(c2, otherSession)
	if !strings.Contains(w2.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Error("reading the flash does not clear it")
	}
	return f
}

// The flash is sealed to its session and opens on a replica with the same key, or one that lists
// the sealing key as previous (a SLIPWAY_SECRET rotation); nowhere else.
func TestFlashSealed(t *testing.T) {
	const oldKey, newKey = "old-console-key-old-console-key-0", "new-console-key-new-console-key-1"
	if f := roundTrip(t, flashHandler(newKey), flashHandler(newKey), "s1", "s1"); f == nil || f.Secret != "sw_secret_value" || f.Message != "made" {
		t.Errorf("same key: %+v", f)
	}
	if f := roundTrip(t, flashHandler(oldKey), flashHandler(newKey, oldKey), "s1", "s1"); f == nil || f.Secret != "sw_secret_value" {
		t.Errorf("sealed on the old key, opened during the rotation: %+v", f)
	}
	if f := roundTrip(t, flashHandler(newKey), flashHandler(newKey), "s1", "s2"); f != nil {
		t.Errorf("another session opened the flash: %+v", f)
	}
	if f := roundTrip(t, flashHandler(oldKey), flashHandler(newKey), "s1", "s1"); f != nil {
		t.Errorf("a key no longer listed opened the flash: %+v", f)
	}
}
