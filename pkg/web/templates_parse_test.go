package web

import "testing"

// TestTemplatesParse parses every page's templates, which the handler parses only when a page is
// first rendered: a broken template fails here, not in front of a visitor.
func TestTemplatesParse(t *testing.T) {
	h := New(Deps{})
	for _, name := range pageNames {
		if h.parsePage(name) == nil {
			t.Fatalf("page %s: no templates", name)
		}
	}
}
