package feedback

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	htmltemplate "html/template"
	texttemplate "text/template"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/links"
)

// MailFeedback is the kind of the mail a report sends to the members who chose it.
const MailFeedback = "feedback"

// Composer writes the mail of a report (Mailer).
type Composer struct {
	Links links.Links
}

type mailView struct {
	App, Version, Channel, From, Device, Text, URL string
	Screenshots                                    int
	// Images are the screenshots' content ids: their thumbnails are in the mail.
	Images []string
}

var (
	feedbackText = texttemplate.Must(texttemplate.New("text").Parse(`{{.From}} sent feedback on {{.App}} {{.Version}} (channel {{.Channel}}){{if .Device}}, from {{.Device}}{{end}}:

{{.Text}}
{{if .Screenshots}}
{{.Screenshots}} screenshot(s) came with it.{{end}}

Open it in Slipway: {{.URL}}

You get this mail because you chose feedback mail for {{.App}} on its page in Slipway's console.
`))
	feedbackHTML = htmltemplate.Must(htmltemplate.New("html").Funcs(htmltemplate.FuncMap{"inc": func(i int) int { return i + 1 }}).Parse(`<!doctype html><html><body style="font-family: sans-serif">
<p><strong>{{.From}}</strong> sent feedback on <strong>{{.App}} {{.Version}}</strong> (channel {{.Channel}}){{if .Device}}, from {{.Device}}{{end}}:</p>
<blockquote style="white-space: pre-wrap; border-left: 3px solid #ccc; margin: 0; padding-left: 1em">{{.Text}}</blockquote>
{{range $i, $cid := .Images}}<p><img src="cid:{{$cid}}" alt="Screenshot {{inc $i}}" style="max-width: 320px; border: 1px solid #ddd"></p>
{{end}}{{if .Screenshots}}<p>{{.Screenshots}} screenshot(s) came with it; open the report for them at full size.</p>{{end}}
<p><a href="{{.URL}}">Open it in Slipway</a></p>
<p style="color: #666; font-size: 0.9em">You get this mail because you chose feedback mail for {{.App}} on its page in Slipway's console.</p>
</body></html>`))
)

// FeedbackMail is the mail of report f on release rc to one member. Its outbox id names the
// report and the address (hashed), so a retried transaction writes it once.
func (c Composer) FeedbackMail(f *distribution.Feedback, rc *distribution.ReleaseContext, to string) distribution.OutgoingMail {
	from := f.AuthorName
	if from == "" {
		from = f.AuthorEmail
	}
	if from == "" {
		from = "Someone without an account"
	}
	v := mailView{App: rc.App.Name, Version: fmt.Sprintf("%s (%s)", rc.ReleaseVersion, rc.BuildVersion), Channel: rc.Channel.Name,
		From: from, Device: oneLine(f.Device + " " + f.OSVersion), Text: f.Text, URL: c.Links.Feedback(f.AppID, f.ID),
		Screenshots: len(f.Screenshots)}
	var inline []distribution.MailImage
	for _, s := range f.Screenshots {
		cid := fmt.Sprintf("screenshot-%d-%d@slipway", f.ID, s.Position)
		v.Images = append(v.Images, cid)
		inline = append(inline, distribution.MailImage{CID: cid, ObjectKey: s.ThumbKey, ContentType: "image/jpeg"})
	}
	var text, html bytes.Buffer
	_ = feedbackText.Execute(&text, v)
	_ = feedbackHTML.Execute(&html, v)
	sum := sha256.Sum256([]byte(to))
	return distribution.OutgoingMail{ID: fmt.Sprintf("feedback.%d.%s", f.ID, hex.EncodeToString(sum[:8])), Kind: MailFeedback, To: to,
		Subject: fmt.Sprintf("Feedback on %s %s from %s", rc.App.Name, v.Version, from), Text: text.String(), HTML: html.String(),
		Inline: inline}
}
