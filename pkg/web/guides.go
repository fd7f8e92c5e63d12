package web

import (
	"bytes"
	"html/template"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"

	"github.com/slipwayhq/slipway/docs"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The user guides (docs/*.md, embedded) served by the instance at /docs/<name>, so that the
// console's "how to" links work on an installation without access to the internet. goldmark
// renders them; its default renderer drops raw HTML, and the guides are the project's own text.

type guideView struct {
	Name  string
	HTML  template.HTML
	Index []guideLink
}

type guideLink struct{ Name, Title, URL string }

var guideName = regexp.MustCompile(`^[a-z]+$`)

// guideLinkRe finds links between guides ("feeds.md#x"), which point at the served page instead.
var guideLinkRe = regexp.MustCompile(`href="([a-z]+)\.md(#[^"]*)?"`)

var (
	guidesOnce     sync.Once
	guidesRendered map[string]guideView
	guidesIndex    []guideLink
)

// renderGuides renders every guide once (they are part of the binary).
func (h *Handler) renderGuides() {
	guidesOnce.Do(func() {
		md := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(parser.WithAutoHeadingID()))
		guidesRendered = map[string]guideView{}
		names, _ := fs.Glob(docs.Guides, "*.md")
		for _, file := range names {
			src, err := fs.ReadFile(docs.Guides, file)
			if err != nil {
				continue
			}
			var out bytes.Buffer
			if md.Convert(src, &out) != nil {
				continue
			}
			name := strings.TrimSuffix(file, ".md")
			body := guideLinkRe.ReplaceAllString(out.String(), `href="$1$2"`)
			// Code blocks and tables scroll sideways inside the card on a phone: a keyboard can
			// reach (and so scroll) them too.
			body = strings.NewReplacer("<pre>", `<pre tabindex="0">`, "<table>", `<table tabindex="0">`).Replace(body)
			// The guides are the project's own markdown, rendered without raw HTML.
			guidesRendered[name] = guideView{Name: name, HTML: template.HTML(body)} //nolint:gosec
			title, _, _ := strings.Cut(strings.TrimPrefix(string(src), "# "), "\n")
			guidesIndex = append(guidesIndex, guideLink{Name: name, Title: title})
		}
	})
}

// guidePage: GET /docs/:name, one guide; GET /docs, their list.
func (h *Handler) guidePage(c *gin.Context) error {
	h.renderGuides()
	name := strings.TrimSuffix(c.Param("name"), ".md")
	if name == "" {
		v := guideView{Name: "Guides"}
		for _, g := range guidesIndex {
			v.Index = append(v.Index, guideLink{Name: g.Name, Title: g.Title, URL: h.links.Base + "/docs/" + g.Name})
		}
		h.render(c, http.StatusOK, "guide", page{Title: "Guides · Slipway", Body: v}, false)
		return nil
	}
	g, ok := guidesRendered[name]
	if !guideName.MatchString(name) || !ok {
		return errs.New(errs.NotFound, "there is no guide %q; the guides are listed at /docs", name)
	}
	h.render(c, http.StatusOK, "guide", page{Title: g.Name + " · Guides · Slipway", Body: g}, false)
	return nil
}
