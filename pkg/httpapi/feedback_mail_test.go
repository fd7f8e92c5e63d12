package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image/jpeg"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/background"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/imagetest"
	"github.com/slipwayhq/slipway/test/mailpit"
)

// TestFeedbackMailShowsTheScreenshots: a member who chose feedback mail gets each report through a
// real SMTP server, with its screenshots' thumbnails inline (multipart/related, cid: images) and
// no metadata in them.
func TestFeedbackMailShowsTheScreenshots(t *testing.T) {
	relay := mailpit.Start(t, mailpit.Options{})
	env := map[string]string{"SLIPWAY_STORAGE_URL": "file://" + t.TempDir(), "SLIPWAY_SECRET": "test-secret-test-secret-test-secret-0123"}
	for _, kv := range relay.Env(t) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	mc, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	m := newMgmt(t, apptest.Options{Storage: apptest.S3, Configure: func(c *config.Config) { c.Mail = mc.Mail }})
	bg := background.Start(context.Background(), slog.New(slog.DiscardHandler), background.Stage{{Name: "mail", Component: m.e.Service.Mailer}})
	t.Cleanup(bg.Stop)
	ctx := context.Background()
	app, _, _, first := m.fixture()
	var userID int64
	if err := m.e.DB.Pool.QueryRow(ctx, `INSERT INTO users (subject, email, name, role) VALUES ('email|dev@example.com', 'dev@example.com', 'Dev', 'developer')
		RETURNING id`).Scan(&userID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.e.DB.Pool.Exec(ctx, `INSERT INTO app_members (app_id, user_id, feedback_mail) VALUES ($1, $2, true)`, id(app), userID); err != nil {
		t.Fatal(err)
	}
	f := m.want(m.sendFeedback(fmt.Sprintf("/api/releases/%d/feedback", id(first)), "", nil, apptest.Field("text", "The <b>map</b> is blank"),
		apptest.Field("device", "Pixel 8"), shot("a.png", imagetest.PNG(t, 300, 600)), shot("b.jpg", imagetest.GPSJPEG(t, 640, 480))), 201, "feedback")

	got := relay.WaitFor(t, "dev@example.com", 1)
	msg := relay.Message(t, got[0].ID)
	if !strings.Contains(msg.Subject, "Harbor 1.0 (1)") || !strings.Contains(msg.Text, "The <b>map</b> is blank") ||
		!strings.Contains(msg.Text, fmt.Sprintf("/console/apps/%d/feedback#feedback-%d", id(app), id(f))) {
		t.Errorf("the mail: %q\n%s", msg.Subject, msg.Text)
	}
	if strings.Contains(msg.HTML, "<b>map</b>") || !strings.Contains(msg.HTML, "&lt;b&gt;map&lt;/b&gt;") {
		t.Errorf("the report's text is not escaped in the HTML: %s", msg.HTML)
	}
	// The raw message: the images the HTML names by cid are parts of it, JPEGs without metadata.
	raw, err := netmail.ReadMessage(bytes.NewReader(msg.Raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, _ := mime.ParseMediaType(raw.Header.Get("Content-Type"))
	if mt != "multipart/related" {
		t.Fatalf("the mail is %s, want multipart/related", mt)
	}
	mr := multipart.NewReader(raw.Body, params["boundary"])
	images := 0
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.Header.Get("Content-Type") != "image/jpeg" {
			continue
		}
		cid := strings.Trim(p.Header.Get("Content-Id"), "<>")
		if !strings.Contains(msg.HTML, "cid:"+cid) {
			t.Errorf("image %s is not shown by the HTML", cid)
		}
		b, _ := io.ReadAll(p)
		data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(b)), ""))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("Exif")) || bytes.Contains(data, []byte("GPSMarker")) {
			t.Errorf("image %s keeps metadata", cid)
		}
		if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
			t.Errorf("image %s: %v", cid, err)
		}
		images++
	}
	if images != 2 {
		t.Errorf("%d inline images, want 2", images)
	}
}
