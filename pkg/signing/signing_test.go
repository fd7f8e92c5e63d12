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

// TestRotation: during a rotation window the signer signs with the new key and accepts what the
// old key signed; once the old key is removed, those signatures are refused.
func TestRotation(t *testing.T) {
	oldKey := []byte("old-key old-key old-key old-key-0")
	newKey := []byte("new-key new-key new-key new-key-1")
	before := New(oldKey)
	oldTok := before.Token("channel-cookie", time.Hour, "slug", "hash")
	oldSig := before.Sign("console-csrf", "session")

	window := New(newKey, []byte("unrelated unrelated unrelated 012"), oldKey)
	if !window.CheckToken(oldTok, "channel-cookie", "slug", "hash") || !window.Verify(oldSig, "console-csrf", "session") {
		t.Fatal("the old key's signatures are refused while it is listed as previous")
	}
	if window.CheckToken(oldTok, "channel-cookie", "slug", "other") || window.Verify(oldSig, "console-csrf", "other") {
		t.Fatal("an old-key signature verifies for other parts")
	}
	newTok := window.Token("channel-cookie", time.Hour, "slug", "hash")
	if before.CheckToken(newTok, "channel-cookie", "slug", "hash") {
		t.Fatal("new signatures are made with the old key")
	}
	if !New(newKey).CheckToken(newTok, "channel-cookie", "slug", "hash") || window.Sign("p", "x") != New(newKey).Sign("p", "x") {
		t.Fatal("new signatures are not made with the new key")
	}
	// Phase one of a rolling rotation: old pods still sign with the old key but already accept the
	// new one, so what new pods sign is accepted everywhere.
	phaseOne := New(oldKey, newKey)
	if !phaseOne.CheckToken(newTok, "channel-cookie", "slug", "hash") || phaseOne.Sign("p", "x") != before.Sign("p", "x") {
		t.Fatal("phase one: the new key is not accepted, or the signing key changed")
	}

	after := New(newKey)
	if after.CheckToken(oldTok, "channel-cookie", "slug", "hash") || after.Verify(oldSig, "console-csrf", "session") {
		t.Fatal("the old key's signatures are accepted after it was removed")
	}
	if window.CheckToken(window.Token("object", -time.Second, "k"), "object", "k") {
		t.Fatal("an expired token is accepted")
	}
}
