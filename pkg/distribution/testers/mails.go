package testers

import (
	"bytes"
	htmltemplate "html/template"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// The mails testers get. Every value that comes from a package or a client (the app's name, the
// version, the changelog, the tester's name) goes through html/template in the HTML part, as on
// the pages; no mail carries a tracking pixel or a link that identifies more than the page it
// opens. New-build mails carry List-Unsubscribe with one-click POST (RFC 8058).

// unsubscribeTTL is how long a mail's unsubscribe link works.
const unsubscribeTTL = 400 * 24 * time.Hour

// mailView is what the templates show.
type mailView struct {
	AppName, Version, Changelog, Name string
	Summary                           []string
	ReleaseURL, HomeURL, SignInURL    string
	UnsubscribeURL, LinkURL           string
	LinkMinutes                       int
	// Builds are a digest's builds, oldest first.
	Builds []digestBuild
}

func (m composer) releaseView(rc *distribution.ReleaseContext, p *distribution.PendingMail) mailView {
	l := m.links
	v := mailView{AppName: rc.App.Name, Version: versionLabel(&rc.Release), Name: p.Name, Summary: p.Summary,
		ReleaseURL: l.Release(rc.Channel.Slug, rc.ID), HomeURL: l.TesterHome(), SignInURL: l.TesterSignIn()}
	for _, c := range rc.Changelog {
		if c.Message != "" {
			v.Changelog += "- " + firstLine(c.Message) + "\n"
		}
	}
	v.Changelog = strings.TrimSpace(v.Changelog)
	v.UnsubscribeURL = l.Unsubscribe(m.unsubscribeToken(p.TesterID, rc.App.ID))
	return v
}

// UnsubscribeToken is the signed token of a one-click unsubscribe link: it names the tester and
// the app, and only turns that app's mail off.
func (t *Testers) UnsubscribeToken(testerID, appID int64) string {
	return t.mail().unsubscribeToken(testerID, appID)
}

func (m composer) unsubscribeToken(testerID, appID int64) string {
	tid, aid := strconv.FormatInt(testerID, 10), strconv.FormatInt(appID, 10)
	return tid + "." + aid + "." + m.signer.Token("tester-unsubscribe", unsubscribeTTL, tid, aid)
}

// releaseMail is a release's invitation or new-build mail to one tester.
func (m composer) releaseMail(rc *distribution.ReleaseContext, p *distribution.PendingMail) distribution.OutgoingMail {
	v := m.releaseView(rc, p)
	subject := rc.App.Name + " " + v.Version + " is ready to install"
	if p.Kind == distribution.MailInvitation {
		subject = "You are invited to test " + rc.App.Name
	}
	return m.compose(p.Kind, mailID(p.Kind, rc.ID, p.TesterID), p.Email, subject, v, unsubscribeHeaders(v.UnsubscribeURL))
}

func unsubscribeHeaders(u string) map[string]string {
	return map[string]string{"List-Unsubscribe": "<" + u + ">", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
}

// compose renders a mail of kind from its templates.
func (m composer) compose(kind, id, to, subject string, v mailView, headers map[string]string) distribution.OutgoingMail {
	var text, html bytes.Buffer
	// The templates are fixed and their values plain strings: executing them cannot fail.
	_ = textMails.ExecuteTemplate(&text, kind, v)
	_ = htmlMails.ExecuteTemplate(&html, kind, v)
	return distribution.OutgoingMail{ID: id, Kind: kind, To: to, Subject: oneLine(subject), Text: text.String(), HTML: html.String(),
		Headers: headers}
}

func versionLabel(r *distribution.Release) string {
	if r.BuildVersion != "" && r.BuildVersion != r.ReleaseVersion {
		return r.ReleaseVersion + " (" + r.BuildVersion + ")"
	}
	return r.ReleaseVersion
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// oneLine keeps a subject on one line (a package's name never breaks a header).
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' }), " ")
}

var textMails = texttemplate.Must(texttemplate.New("mails").Parse(`
{{define "invitation"}}Hello{{if .Name}} {{.Name}}{{end}},

You are invited to test {{.AppName}}. Build {{.Version}} is ready to install:

  {{.ReleaseURL}}

Open the link on the device you test on. If Slipway asks who you are, enter this address and
it mails you a sign-in link; no account is needed anywhere.
{{if .Changelog}}
What's new:
{{.Changelog}}
{{end}}
All the builds given to you: {{.HomeURL}}
No more mail about {{.AppName}}: {{.UnsubscribeURL}}
{{end}}
{{define "new_build"}}{{.AppName}} {{.Version}} is ready to install:

  {{.ReleaseURL}}
{{if .Changelog}}
What's new:
{{.Changelog}}
{{end}}{{if .Summary}}
What changed:
{{range .Summary}}- {{.}}
{{end}}{{end}}
All the builds given to you: {{.HomeURL}}
No more mail about {{.AppName}}: {{.UnsubscribeURL}}
{{end}}
{{define "digest"}}New builds of {{.AppName}} to install:
{{range .Builds}}
- {{.Version}} ({{.Channel}}): {{.URL}}{{end}}

All the builds given to you: {{.HomeURL}}
No more mail about {{.AppName}}: {{.UnsubscribeURL}}
{{end}}
{{define "sign_in"}}Sign in to Slipway with this link (it works once, for {{.LinkMinutes}} minutes):

  {{.LinkURL}}

If you did not ask for it, ignore this mail: nobody can sign in without the link.
{{end}}`))

var htmlMails = htmltemplate.Must(htmltemplate.New("mails").Parse(`
{{define "button"}}<p><a href="{{.}}" style="display:inline-block;padding:12px 20px;background:#1f6feb;color:#fff;border-radius:6px;text-decoration:none;font-weight:600">Install</a></p>{{end}}
{{define "footer"}}<p style="color:#666;font-size:13px"><a href="{{.HomeURL}}">All the builds given to you</a> · <a href="{{.UnsubscribeURL}}">No more mail about {{.AppName}}</a></p>{{end}}
{{define "invitation"}}<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5">
<p>Hello{{if .Name}} {{.Name}}{{end}},</p>
<p>You are invited to test <strong>{{.AppName}}</strong>. Build {{.Version}} is ready to install.</p>
{{template "button" .ReleaseURL}}
<p>Open it on the device you test on. If Slipway asks who you are, enter this address and it mails you a sign-in link; no account is needed anywhere.</p>
{{if .Changelog}}<h3>What's new</h3><pre style="white-space:pre-wrap;font-family:inherit">{{.Changelog}}</pre>{{end}}
{{template "footer" .}}</body></html>{{end}}
{{define "new_build"}}<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5">
<p><strong>{{.AppName}} {{.Version}}</strong> is ready to install.</p>
{{template "button" .ReleaseURL}}
{{if .Changelog}}<h3>What's new</h3><pre style="white-space:pre-wrap;font-family:inherit">{{.Changelog}}</pre>{{end}}
{{if .Summary}}<h3>What changed</h3><ul>{{range .Summary}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{template "footer" .}}</body></html>{{end}}
{{define "digest"}}<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5">
<p>New builds of <strong>{{.AppName}}</strong> to install:</p>
<ul>{{range .Builds}}<li><a href="{{.URL}}">{{.Version}}</a> ({{.Channel}})</li>{{end}}</ul>
{{template "footer" .}}</body></html>{{end}}
{{define "sign_in"}}<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5">
<p>Sign in to Slipway with this link. It works once, for {{.LinkMinutes}} minutes.</p>
<p><a href="{{.LinkURL}}" style="display:inline-block;padding:12px 20px;background:#1f6feb;color:#fff;border-radius:6px;text-decoration:none;font-weight:600">Sign in</a></p>
<p style="color:#666;font-size:13px">If you did not ask for it, ignore this mail: nobody can sign in without the link.</p>
</body></html>{{end}}`))
