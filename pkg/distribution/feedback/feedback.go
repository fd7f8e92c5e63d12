// Package feedback is what testers report about a build: text and screenshots from its release
// page or from inside the app, tied to the exact build, read by the app's members in the console
// and the API, sent on as webhooks and mail.
package feedback

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Store keeps feedback.
type Store interface {
	GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
	// ReserveFeedbackAttempt counts one report of a client without credentials on a channel,
	// unless the client already made perClient since since, or the channel took perChannel
	// (then false, nothing counted); the check and the count are one atomic step.
	ReserveFeedbackAttempt(ctx context.Context, channelID int64, client string, since time.Time, perClient, perChannel int) (bool, error)
	// InFeedbackTx runs fn in one transaction, committed when fn returns nil.
	InFeedbackTx(ctx context.Context, fn func(tx Tx) error) error
	GetFeedback(ctx context.Context, id int64) (*distribution.Feedback, error)
	// ListFeedback returns a page of q's feedback, newest first, and how many there are in all.
	ListFeedback(ctx context.Context, q distribution.FeedbackQuery) ([]distribution.Feedback, int, error)
	// TesterFeedback returns a tester's own reports, newest first.
	TesterFeedback(ctx context.Context, testerID int64, limit int) ([]distribution.Feedback, error)
	// FeedbackMailRecipients are the addresses of the app's members who chose to get its
	// feedback by mail.
	FeedbackMailRecipients(ctx context.Context, appID int64) ([]string, error)
	SetFeedbackMail(ctx context.Context, appID, userID int64, on bool) error
	FeedbackMail(ctx context.Context, appID, userID int64) (bool, error)
}

// Tx is the transaction of one change to feedback: each method a statement or two of SQL.
type Tx interface {
	// InsertFeedback records f with its screenshots and returns its id; the screenshots'
	// objects are claimed (no longer pending) in the same step.
	InsertFeedback(ctx context.Context, f *distribution.Feedback) (int64, error)
	SetFeedbackState(ctx context.Context, id int64, state, by string) error
	// DeleteFeedback deletes a report; its screenshots' objects go to the collector.
	DeleteFeedback(ctx context.Context, id int64) error
	WriteEvents(ctx context.Context, evs []distribution.Event) error
	WriteMail(ctx context.Context, mails []distribution.OutgoingMail) error
	Audit(ctx context.Context, r distribution.AuditRecord) error
}

// Objects stores screenshots and says where they are fetched from (uploads.Objects).
type Objects interface {
	StoreBytes(ctx context.Context, prefix string, data []byte, contentType string) (string, error)
	Discard(ctx context.Context, keys ...string)
	ObjectURL(ctx context.Context, key, filename, contentType string, public bool) (string, error)
}

// Image is a screenshot cleaned of everything but its pixels (pkg/screenshot).
type Image struct {
	Data        []byte
	ContentType string
	Width       int
	Height      int
	Thumb       []byte // JPEG
}

// Cleaner decodes an untrusted image within bounds and re-encodes it without metadata.
type Cleaner func(ctx context.Context, r io.Reader) (*Image, error)

// EventMaker makes the feedback.created event of a report (events.Maker).
type EventMaker interface {
	FeedbackEvents(f *distribution.Feedback, rc *distribution.ReleaseContext) ([]distribution.Event, error)
}

// Mailer composes the mail a report sends to the members who chose it.
type Mailer interface {
	FeedbackMail(f *distribution.Feedback, rc *distribution.ReleaseContext, to string) distribution.OutgoingMail
}

// Reports runs feedback's use cases.
type Reports struct {
	Store   Store
	Objects Objects
	Clean   Cleaner
	Policy  *policy.Policy
	Events  EventMaker
	Mail    Mailer
	// Effects wake the webhook and mail senders after a commit.
	Effects distribution.Effects
}

// Limits on reports from clients without credentials (a channel open to anyone), per quarter
// hour, as for channel passwords: a client sends at most anonPerClient, a channel takes at most
// anonPerChannel from all of them.
const (
	anonWindow     = 15 * time.Minute
	anonPerClient  = 10
	anonPerChannel = 200
	// A tester is known, not anonymous, but their reports take storage too: at most
	// testerPerWindow a quarter hour on a channel.
	testerPerWindow = 30
)

// Draft is a report being received: its screenshots are stored (pending) as they arrive, so a
// report holds one image in memory at a time; Submit records it, Abandon discards what it stored.
type Draft struct {
	r     *Reports
	rc    *distribution.ReleaseContext
	actor distribution.Actor
	shots []distribution.Screenshot
	keys  []string
	done  bool
}

// BeginInput names the build a report is about and who sends it.
type BeginInput struct {
	ReleaseID int64
	// Client is the sender's address, for the limits on clients without credentials.
	Client string
	// PasswordPassed is set by a release page whose password gate let the request in: a channel
	// with a password is then open to the request as one without.
	PasswordPassed bool
}

// Begin starts a report on a build, once the context's actor may send it: anyone on a channel
// open to anyone (within the limits on clients without credentials), whoever may install the
// build on a tester-only one. Nothing of the body is read before.
func (r *Reports) Begin(ctx context.Context, in BeginInput) (*Draft, error) {
	rc, err := r.Store.GetRelease(ctx, in.ReleaseID)
	if err != nil {
		return nil, err
	}
	open := !rc.Channel.TesterOnly && (!rc.Channel.HasPassword() || in.PasswordPassed)
	if err := r.Policy.Authorize(ctx, policy.SendFeedback, policy.OnFeedback(rc.App.ID, rc.Channel.ID, rc.ID, open)); err != nil {
		return nil, err
	}
	a, ok := distribution.ActorIn(ctx)
	if !ok {
		a = distribution.AnonymousActor()
	}
	switch a.Kind {
	case distribution.ActorAnonymous:
		if !open {
			return nil, errs.New(errs.Unauthenticated, "this channel takes feedback from its testers: sign in with the link Slipway mails you")
		}
		if err := r.reserve(ctx, rc.Channel.ID, in.Client, anonPerClient, anonPerChannel); err != nil {
			return nil, err
		}
	case distribution.ActorTester:
		// Keyed by the tester (the channel's limit counts anonymous senders only).
		if err := r.reserve(ctx, rc.Channel.ID, fmt.Sprintf("%s%d", distribution.TesterClientPrefix, a.TesterID), testerPerWindow, 1<<30); err != nil {
			return nil, err
		}
	}
	return &Draft{r: r, rc: rc, actor: a}, nil
}

// reserve counts a report on a channel against its sender's limit and the channel's.
func (r *Reports) reserve(ctx context.Context, channelID int64, client string, perClient, perChannel int) error {
	ok, err := r.Store.ReserveFeedbackAttempt(ctx, channelID, client, time.Now().Add(-anonWindow), perClient, perChannel)
	if err != nil {
		return err
	}
	if !ok {
		return &errs.Error{Kind: errs.TooManyRequests, Msg: "too much feedback from here in a short time; try again in a quarter of an hour",
			RetryAfter: anonWindow}
	}
	return nil
}

// Release is the build the report is about.
func (d *Draft) Release() *distribution.ReleaseContext { return d.rc }

// AddScreenshot cleans and stores one screenshot: at most distribution.MaxScreenshots.
func (d *Draft) AddScreenshot(ctx context.Context, img io.Reader) error {
	if len(d.shots) >= distribution.MaxScreenshots {
		return errs.Field("screenshot", "at most %d per report", distribution.MaxScreenshots)
	}
	clean, err := d.r.Clean(ctx, img)
	if err != nil {
		return err
	}
	prefix := fmt.Sprintf("feedback/%d", d.rc.ID)
	key, err := d.r.Objects.StoreBytes(ctx, prefix, clean.Data, clean.ContentType)
	if err != nil {
		return err
	}
	d.keys = append(d.keys, key)
	thumb, err := d.r.Objects.StoreBytes(ctx, prefix, clean.Thumb, "image/jpeg")
	if err != nil {
		return err
	}
	d.keys = append(d.keys, thumb)
	d.shots = append(d.shots, distribution.Screenshot{Position: len(d.shots) + 1, ObjectKey: key, ThumbKey: thumb,
		ContentType: clean.ContentType, Size: int64(len(clean.Data)), Width: clean.Width, Height: clean.Height})
	return nil
}

// Abandon discards what the draft stored, unless it was submitted.
func (d *Draft) Abandon(ctx context.Context) {
	if !d.done && len(d.keys) > 0 {
		d.r.Objects.Discard(ctx, d.keys...)
	}
}

// Report is what a sender says.
type Report struct {
	Text      string
	Device    string
	OSVersion string
	Locale    string
	// AppState is a JSON object from the app (empty: none).
	AppState string
	// Email is an anonymous sender's address, so the team can answer (optional).
	Email  string
	Source string // distribution.FeedbackFromPage or FeedbackFromAPI
}

// Submit records the report with its screenshots, its feedback.created event, its audit row and
// the mail to the members who chose it, in one transaction. On an error the draft keeps its
// screenshots for Abandon.
func (d *Draft) Submit(ctx context.Context, rep Report) (*distribution.Feedback, error) {
	f, err := d.feedback(rep)
	if err != nil {
		return nil, err
	}
	var to []string
	if d.r.Mail != nil {
		if to, err = d.r.Store.FeedbackMailRecipients(ctx, d.rc.App.ID); err != nil {
			return nil, err
		}
	}
	err = d.r.Store.InFeedbackTx(ctx, func(tx Tx) error {
		id, err := tx.InsertFeedback(ctx, f)
		if err != nil {
			return err
		}
		f.ID = id
		if d.r.Events != nil {
			evs, err := d.r.Events.FeedbackEvents(f, d.rc)
			if err != nil {
				return err
			}
			if err := tx.WriteEvents(ctx, evs); err != nil {
				return err
			}
		}
		if len(to) > 0 {
			mails := make([]distribution.OutgoingMail, 0, len(to))
			for _, addr := range to {
				mails = append(mails, d.r.Mail.FeedbackMail(f, d.rc, addr))
			}
			if err := tx.WriteMail(ctx, mails); err != nil {
				return err
			}
		}
		return tx.Audit(ctx, distribution.AuditRecord{Actor: d.actor, Action: "feedback.create", Target: distribution.FeedbackTarget(f),
			Detail: map[string]any{"release_id": f.ReleaseID, "screenshots": len(f.Screenshots), "source": f.Source}})
	})
	if err != nil {
		return nil, err
	}
	d.done = true
	d.r.Effects.Wake()
	if len(to) > 0 {
		d.r.Effects.WakeMail()
	}
	return d.r.Store.GetFeedback(ctx, f.ID)
}

// feedback checks a report and makes its row.
func (d *Draft) feedback(rep Report) (*distribution.Feedback, error) {
	text := strings.TrimSpace(strings.ToValidUTF8(rep.Text, "\uFFFD"))
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		return nil, errs.Field("text", "is required: say what you saw")
	case n > distribution.MaxFeedbackText:
		return nil, errs.Field("text", "is %d characters long; at most %d", n, distribution.MaxFeedbackText)
	}
	f := &distribution.Feedback{ReleaseID: d.rc.ID, AppID: d.rc.App.ID, ChannelID: d.rc.Channel.ID, Text: text,
		Source: rep.Source, State: distribution.FeedbackOpen, Screenshots: d.shots,
		ReleaseVersion: d.rc.ReleaseVersion, BuildVersion: d.rc.BuildVersion, ReleaseNumber: d.rc.Version,
		ChannelSlug: d.rc.Channel.Slug, ChannelName: d.rc.Channel.Name, AppName: d.rc.App.Name}
	if f.Source != distribution.FeedbackFromPage {
		f.Source = distribution.FeedbackFromAPI
	}
	for _, field := range []struct {
		name string
		in   string
		out  *string
		max  int
	}{{"device", rep.Device, &f.Device, distribution.MaxFeedbackDevice}, {"os_version", rep.OSVersion, &f.OSVersion, distribution.MaxFeedbackDevice},
		{"locale", rep.Locale, &f.Locale, distribution.MaxFeedbackLocale}} {
		v := oneLine(field.in)
		if utf8.RuneCountInString(v) > field.max {
			return nil, errs.Field(field.name, "at most %d characters", field.max)
		}
		*field.out = v
	}
	if s := strings.TrimSpace(rep.AppState); s != "" {
		if len(s) > distribution.MaxAppState {
			return nil, errs.Field("app_state", "at most %d bytes of JSON", distribution.MaxAppState)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(s), &obj); err != nil || obj == nil {
			return nil, errs.Field("app_state", "must be a JSON object")
		}
		f.AppState = json.RawMessage(s)
	}
	a := d.actor
	f.AuthorKind = a.Kind
	switch a.Kind {
	case distribution.ActorTester:
		f.TesterID, f.AuthorName = a.TesterID, a.Name
	case distribution.ActorUser:
		f.UserID, f.AuthorName = a.UserID, a.Name
	case distribution.ActorToken:
		f.AuthorName = "token " + a.Name
	case distribution.ActorAnonymous:
		if e := strings.TrimSpace(rep.Email); e != "" {
			norm, err := distribution.NormaliseEmail(e)
			if err != nil {
				return nil, errs.Field("email", "is not an email address; leave it empty to stay anonymous")
			}
			f.AuthorEmail = norm
		}
	default:
		return nil, errs.New(errs.Forbidden, "feedback comes from testers, the team and its tokens")
	}
	return f, nil
}

// oneLine trims s and turns its control characters into spaces.
func oneLine(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "")))
}

// OnRelease returns a build's feedback, newest first, for those who may read its app's.
func (r *Reports) OnRelease(ctx context.Context, releaseID int64, p distribution.Page) ([]distribution.Feedback, int, error) {
	rc, err := r.Store.GetRelease(ctx, releaseID)
	if err != nil {
		return nil, 0, err
	}
	if err := r.Policy.Authorize(ctx, policy.ReadFeedback, policy.OnApp(rc.App.ID)); err != nil {
		return nil, 0, err
	}
	return r.Store.ListFeedback(ctx, distribution.FeedbackQuery{AppID: rc.App.ID, ReleaseID: releaseID, Page: p})
}

// Inbox returns a page of an app's feedback, newest first, filtered by q.
func (r *Reports) Inbox(ctx context.Context, q distribution.FeedbackQuery) ([]distribution.Feedback, int, error) {
	if err := r.Policy.Authorize(ctx, policy.ReadFeedback, policy.OnApp(q.AppID)); err != nil {
		return nil, 0, err
	}
	switch q.State {
	case "", distribution.FeedbackOpen, distribution.FeedbackResolved:
	default:
		return nil, 0, errs.Field("state", "must be open or resolved")
	}
	q.Search = strings.TrimSpace(q.Search)
	if len(q.Search) > 200 {
		return nil, 0, errs.Field("q", "at most 200 characters")
	}
	return r.Store.ListFeedback(ctx, q)
}

// Get returns one report, for those who may read its app's feedback and for its author.
func (r *Reports) Get(ctx context.Context, id int64) (*distribution.Feedback, error) {
	f, err := r.Store.GetFeedback(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := r.Policy.Authorize(ctx, policy.ReadFeedback, policy.OnReport(f.AppID, f.TesterID)); err != nil {
		if a, _ := distribution.ActorIn(ctx); a.Kind == distribution.ActorTester && errs.KindOf(err) == errs.Forbidden {
			// A tester learns nothing of others' reports, not even that they exist.
			return nil, errs.New(errs.NotFound, "feedback %d not found", id)
		}
		return nil, err
	}
	return f, nil
}

// Mine returns the signed-in tester's own reports, newest first.
func (r *Reports) Mine(ctx context.Context) ([]distribution.Feedback, error) {
	a := distribution.ActorOf(ctx)
	if a.TesterID == 0 {
		return []distribution.Feedback{}, nil
	}
	return r.Store.TesterFeedback(ctx, a.TesterID, 100)
}

// SetState marks a report open or resolved.
func (r *Reports) SetState(ctx context.Context, id int64, state string) (*distribution.Feedback, error) {
	if state != distribution.FeedbackOpen && state != distribution.FeedbackResolved {
		return nil, errs.Field("state", "must be open or resolved")
	}
	f, err := r.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := r.Policy.Authorize(ctx, policy.ManageFeedback, policy.OnReport(f.AppID, 0)); err != nil {
		return nil, err
	}
	a := distribution.ActorOf(ctx)
	err = r.Store.InFeedbackTx(ctx, func(tx Tx) error {
		if err := tx.SetFeedbackState(ctx, id, state, a.Label()); err != nil {
			return err
		}
		return tx.Audit(ctx, distribution.AuditRecord{Actor: a, Action: "feedback." + state, Target: distribution.FeedbackTarget(f)})
	})
	if err != nil {
		return nil, err
	}
	return r.Store.GetFeedback(ctx, id)
}

// Delete deletes a report and its screenshots: its author may, and those who manage the app's
// feedback.
func (r *Reports) Delete(ctx context.Context, id int64) error {
	f, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := r.Policy.Authorize(ctx, policy.DeleteFeedback, policy.OnReport(f.AppID, f.TesterID)); err != nil {
		return err
	}
	a := distribution.ActorOf(ctx)
	return r.Store.InFeedbackTx(ctx, func(tx Tx) error {
		if err := tx.DeleteFeedback(ctx, id); err != nil {
			return err
		}
		return tx.Audit(ctx, distribution.AuditRecord{Actor: a, Action: "feedback.delete", Target: distribution.FeedbackTarget(f)})
	})
}

// ScreenshotURL returns where a report's screenshot (or its thumbnail) is fetched from: a
// presigned URL, or the service's own signed one; never the CDN.
func (r *Reports) ScreenshotURL(ctx context.Context, id int64, position int, thumb bool) (string, error) {
	f, err := r.Get(ctx, id)
	if err != nil {
		return "", err
	}
	for _, s := range f.Screenshots {
		if s.Position != position {
			continue
		}
		if thumb {
			return r.Objects.ObjectURL(ctx, s.ThumbKey, fmt.Sprintf("feedback-%d-%d-thumb.jpg", id, position), "image/jpeg", false)
		}
		ext := ".png"
		if s.ContentType == "image/jpeg" {
			ext = ".jpg"
		}
		return r.Objects.ObjectURL(ctx, s.ObjectKey, fmt.Sprintf("feedback-%d-%d%s", id, position, ext), s.ContentType, false)
	}
	return "", errs.New(errs.NotFound, "feedback %d has no screenshot %d", id, position)
}

// MailChoice reports whether the context's user gets an app's feedback by mail.
func (r *Reports) MailChoice(ctx context.Context, appID int64) (bool, error) {
	a := distribution.ActorOf(ctx)
	if a.Kind != distribution.ActorUser {
		return false, nil
	}
	return r.Store.FeedbackMail(ctx, appID, a.UserID)
}

// ChooseMail sets whether the context's user, a member of the app, gets its feedback by mail.
func (r *Reports) ChooseMail(ctx context.Context, appID int64, on bool) error {
	if err := r.Policy.Authorize(ctx, policy.ReadFeedback, policy.OnApp(appID)); err != nil {
		return err
	}
	a := distribution.ActorOf(ctx)
	if a.Kind != distribution.ActorUser {
		return errs.New(errs.Forbidden, "feedback mail goes to people in the console; a token gets webhooks")
	}
	return r.Store.SetFeedbackMail(ctx, appID, a.UserID, on)
}

// maxField bounds one text field of a report's form (the text is the longest: 10,000 characters
// of up to 4 bytes each).
const maxField = 4*distribution.MaxFeedbackText + 1024

// Receive reads a report's form as it streams (multipart/form-data, as the release page's form
// and the apps' snippets send it): text fields into the report, each file part named screenshot
// (or screenshot[], screenshots, screenshots[]) cleaned and stored as it arrives, so one image at
// a time is held. Unknown fields are ignored; a field over its bound is an error.
func (d *Draft) Receive(ctx context.Context, mr *multipart.Reader, source string) (Report, error) {
	rep := Report{Source: source}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return rep, nil
		}
		if err != nil {
			return rep, errs.Wrap(errs.Invalid, err, "the form could not be read")
		}
		name := part.FormName()
		switch name {
		case "screenshot", "screenshot[]", "screenshots", "screenshots[]":
			// An empty file input of a page's form sends an empty part: no screenshot.
			br := bufio.NewReader(part)
			if _, err := br.Peek(1); err == io.EOF {
				continue
			}
			if err := d.AddScreenshot(ctx, br); err != nil {
				return rep, err
			}
			continue
		}
		var dst *string
		switch name {
		case "text":
			dst = &rep.Text
		case "device":
			dst = &rep.Device
		case "os_version":
			dst = &rep.OSVersion
		case "locale":
			dst = &rep.Locale
		case "app_state":
			dst = &rep.AppState
		case "email":
			dst = &rep.Email
		default:
			if _, err := io.Copy(io.Discard, io.LimitReader(part, maxField)); err != nil {
				return rep, errs.Wrap(errs.Invalid, err, "the form could not be read")
			}
			continue
		}
		b, err := io.ReadAll(io.LimitReader(part, maxField+1))
		if err != nil {
			return rep, errs.Wrap(errs.Invalid, err, "the form could not be read")
		}
		if len(b) > maxField {
			return rep, errs.Field(name, "is too long")
		}
		*dst = string(b)
	}
}
