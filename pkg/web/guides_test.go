package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/test/apptest"
)

// The user guides are served by the instance (an air-gapped installation has no other copy): the
// list, a guide rendered with its headings' anchors, links between guides kept on the instance,
// and 404 for anything else.
func TestGuidesServed(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	list := get(t, e, "/docs")
	if list.Status != http.StatusOK {
		t.Fatalf("/docs: %d", list.Status)
	}
	mustContain(t, list.Body, `id="guide-webhooks"`, `href="`+e.URL+`/docs/feeds"`, "Webhooks")
	hooks := get(t, e, "/docs/webhooks")
	mustContain(t, hooks.Body, `<h2 id="verifying-a-delivery">`, "Slipway-Signature", `<table tabindex="0">`, `<pre tabindex="0"><code`)
	if cc := hooks.Header.Get("Content-Security-Policy"); !strings.Contains(cc, "default-src 'none'") {
		t.Errorf("a guide's CSP: %q", cc)
	}
	// A link to another guide ("testers.md") stays on the instance.
	if ci := get(t, e, "/docs/ci"); ci.Status != 200 || strings.Contains(string(ci.Body), `.md"`) && strings.Contains(string(ci.Body), `href="testers.md`) {
		t.Errorf("/docs/ci: %d, links to .md files left", ci.Status)
	}
	if md := get(t, e, "/docs/feeds.md"); md.Status != 200 {
		t.Errorf("/docs/feeds.md: %d", md.Status)
	}
	for _, p := range []string{"/docs/nope", "/docs/architecture", "/docs/FEEDS"} {
		if r := get(t, e, p); r.Status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, r.Status)
		}
	}
}
