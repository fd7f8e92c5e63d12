package web

import (
	"testing"

	"github.com/slipwayhq/slipway/pkg/links"
)

// safeNext keeps a sign-in's next on the site: paths under the base (relative, or absolute with
// the base), nothing else.
func TestSafeNext(t *testing.T) {
	h := &Handler{links: links.Links{Base: "https://slipway.example"}}
	for _, tc := range []struct{ next, want string }{
		{"/t", "https://slipway.example/t"},
		{"/channels/abc/releases/7?x=1#y", "https://slipway.example/channels/abc/releases/7?x=1#y"},
		{"https://slipway.example/channels/abc", "https://slipway.example/channels/abc"},
		{"", ""},
		{"//evil.example", ""},
		{"///evil.example", ""},
		{"/\\evil.example", ""},
		{"\\\\evil.example", ""},
		{"https://evil.example/", ""},
		{"https://slipway.example.evil.example/", ""},
		{"https://slipway.example@evil.example/", ""},
		{"http:evil.example", ""},
		{"javascript:alert(1)", ""},
		{"evil.example", ""},
		{"/t\r\nSet-Cookie: x=y", ""},
		{"/t\x00", ""},
		{"/%2F/evil.example", ""},
		{"/" + string(make([]byte, 3000)), ""},
	} {
		if got := h.safeNext(tc.next); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}
