package signing

import (
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	s := New([]byte("0123456789abcdef0123456789abcdef"))
	tok := s.Token("object", time.Minute, "packages/a")
	if !s.CheckToken(tok, "object", "packages/a") {
		t.Fatal("valid token refused")
	}
	for _, bad := range []struct{ tok, purpose, part string }{
		{tok, "object", "packages/b"}, {tok, "cookie", "packages/a"}, {tok + "x", "object", "packages/a"},
		{"", "object", "packages/a"}, {"123", "object", "packages/a"}, {"abc.def", "object", "packages/a"},
	} {
		if s.CheckToken(bad.tok, bad.purpose, bad.part) {
			t.Errorf("accepted %+v", bad)
		}
	}
	if s.CheckToken(s.Token("object", -time.Second, "k"), "object", "k") {
		t.Error("expired token accepted")
	}
	if New([]byte("another key another key another k")).CheckToken(tok, "object", "packages/a") {
		t.Error("token accepted under another key")
	}
}
