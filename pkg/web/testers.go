package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/testers"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The tester's side of the site (issue "Testers are people"): a tester is an email address and
// signs in with a link mailed to them, nothing else. The pages are phone first and run no script.
//
//   - Visitor (middleware) reads who the visitor of a public page, download or manifest is: a
//     tester session, else a console session (the tester that person is, by email).
//   - /t/signin asks for a link (the same answer for every address); /t/in/<secret> shows a
//     button that spends the link (a POST, so mail scanners that fetch links do not spend it).
//   - /t is the tester's home: the builds given to them and each app's mail choice.
//   - /t/unsubscribe/<token> turns an app's mail off (RFC 8058 one-click POST, or a button).
//
// CSRF: the tester's forms carry no token. The session cookie is SameSite=Lax, so a forged
// cross-site POST arrives without it and acts as nobody (the mail choice and sign-out need the
// session). The sign-in button is the exception that a cookie cannot guard (a forged POST of the
// forger's own link would sign the victim in as the forger), so every tester form is also
// refused when the browser says it came from another site (sameSite: Sec-Fetch-Site, else
// Origin). The one-click unsubscribe is checked by neither: mail clients send it from anywhere,
// and its token is the proof.

// TesterCookie holds a tester session's secret.
const TesterCookie = "slipway_tester"

// testerNextCookie keeps, for the sign-in link's lifetime, where a tester who asked for a link
// was going (the mailed link cannot carry it), when they open the link in the same browser.
const testerNextCookie = "slipway_tester_next"

// Gin context keys of the visitor Visitor found.
const (
	visitorTesterKey = "slipway.visitor.tester"
	visitorUserKey   = "slipway.visitor.user"
)

// Visitor is the middleware of the public pages (/channels/..., /t/...) and of httpapi's
// downloads, manifests and icons: it makes the request act as its visitor. A tester session
// (TesterCookie) acts as the tester (distribution.TesterActor); else a console session
// (SessionCookie) acts as the console user, with TesterID the tester they are by their email.
// An unknown, expired or revoked cookie is ignored: the request stays anonymous (an expired
// tester cookie is cleared). A request without either cookie costs no query.
func (h *Handler) Visitor() gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := reqCtx(c)
		if v, err := c.Cookie(TesterCookie); err == nil && v != "" {
			tr, err := h.svc.Testers.SessionTester(ctx, v)
			if err == nil {
				c.Set(visitorTesterKey, tr)
				c.Request = c.Request.WithContext(distribution.WithActor(ctx, distribution.TesterActor(tr)))
				c.Next()
				return
			}
			if errs.Is(err, errs.Unauthenticated) {
				h.setTesterCookie(c, "", -time.Second)
			}
		}
		if v, err := c.Cookie(SessionCookie); err == nil && v != "" {
			if u, err := h.svc.Logins.SessionUser(ctx, v); err == nil {
				a := distribution.UserActor(u)
				if tr := h.svc.Testers.TesterOf(ctx, u); tr != nil {
					a.TesterID = tr.ID
					c.Set(visitorTesterKey, tr)
				}
				c.Set(visitorUserKey, u)
				c.Request = c.Request.WithContext(distribution.WithActor(ctx, a))
			}
		}
		c.Next()
	}
}

// visitorTester is the tester Visitor found (a tester session, or the tester a console user
// is), or nil.
func visitorTester(c *gin.Context) *distribution.Tester {
	if v, ok := c.Get(visitorTesterKey); ok {
		tr, _ := v.(*distribution.Tester)
		return tr
	}
	return nil
}

// testerSession reports whether the visitor came with a tester session (not a console one).
func testerSession(c *gin.Context) bool {
	_, user := c.Get(visitorUserKey)
	return visitorTester(c) != nil && !user
}

// setTesterCookie sets (or, with a negative maxAge, clears) the tester session cookie: HttpOnly,
// SameSite=Lax, Secure on https, for the whole site (the channels' pages, downloads and
// manifests read it too).
func (h *Handler) setTesterCookie(c *gin.Context, value string, maxAge time.Duration) {
	http.SetCookie(c.Writer, &http.Cookie{Name: TesterCookie, Value: value, Path: "/", MaxAge: int(maxAge.Seconds()),
		HttpOnly: true, Secure: h.https(), SameSite: http.SameSiteLaxMode})
}

func (h *Handler) setNextCookie(c *gin.Context, value string, maxAge time.Duration) {
	http.SetCookie(c.Writer, &http.Cookie{Name: testerNextCookie, Value: value, Path: "/t", MaxAge: int(maxAge.Seconds()),
		HttpOnly: true, Secure: h.https(), SameSite: http.SameSiteLaxMode})
}

// safeNext returns where a sign-in may send the browser after it: a path on this service
// ("/channels/…", relative to the service's base) or an absolute URL under the base, as the
// absolute address to redirect to; "" for anything else (another host, "//host", "/\host", a
// scheme, control characters): an open redirect is refused, never followed.
func (h *Handler) safeNext(raw string) string {
	if raw == "" || len(raw) > 2048 {
		return ""
	}
	if rest, ok := strings.CutPrefix(raw, h.links.Base); ok && strings.HasPrefix(rest, "/") {
		raw = rest
	}
	if !strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "//") || strings.ContainsAny(raw, "\\") {
		return ""
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f {
			return ""
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return ""
	}
	return h.links.Base + raw
}

// relativeNext is a page's address as a sign-in's next parameter: its path under the base.
func (h *Handler) relativeNext(pageURL string) string {
	if rest, ok := strings.CutPrefix(pageURL, h.links.Base); ok && strings.HasPrefix(rest, "/") {
		return rest
	}
	return "/t"
}

// sameSite refuses a tester form that the browser says was sent from another site (see the
// CSRF note above). Sec-Fetch-Site is what modern browsers send; without it, the Origin header
// when it names an origin (the pages' no-referrer policy makes browsers send "null" for their
// own forms).
func (h *Handler) sameSite(c *gin.Context) error {
	refused := errs.New(errs.Forbidden, "this form was sent from another site; open the page on this site and send it again")
	switch c.GetHeader("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return refused
	}
	if o := c.GetHeader("Origin"); o != "" && o != "null" {
		base, err := url.Parse(h.links.Base)
		if err != nil || !strings.EqualFold(o, base.Scheme+"://"+base.Host) {
			return refused
		}
	}
	return nil
}

// readTesterForm bounds and reads a tester form's body (urlencoded, at most maxFormBytes).
func readTesterForm(c *gin.Context) error {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxFormBytes)
	if err := c.Request.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errs.New(errs.TooLarge, "the form is too large")
		}
		return errs.Wrap(errs.Invalid, err, "the form could not be read")
	}
	return nil
}

type testerSignInView struct {
	Action, Email, Next, Error string
	// Sent: the "check your mail" answer; SignedOut: the page after signing out.
	Sent, SignedOut bool
	// SignedInAs names the tester this browser is signed in as ("" for none), HomeURL their home.
	SignedInAs, HomeURL string
}

// testerSignIn: GET /t/signin?next=..., the form that asks for a sign-in link.
func (h *Handler) testerSignIn(c *gin.Context) error {
	v := testerSignInView{Action: h.links.TesterSignIn(), SignedOut: c.Query("signed_out") != "", Sent: c.Query("sent") != ""}
	if h.safeNext(c.Query("next")) != "" {
		v.Next = c.Query("next")
	}
	if tr := visitorTester(c); tr != nil {
		v.SignedInAs, v.HomeURL = tr.Email, h.links.TesterHome()
	}
	h.render(c, http.StatusOK, "tester-signin", page{Title: "Sign in · Slipway", Body: v}, true)
	return nil
}

// testerRequestLink: POST /t/signin (email, next) mails a sign-in link and answers "check your
// mail", the same for every address (nobody learns who is a tester; the domain bounds how many
// links an address or a client gets). A malformed address is shown the form again (422).
func (h *Handler) testerRequestLink(c *gin.Context) error {
	ctx := reqCtx(c)
	if err := h.sameSite(c); err != nil {
		return err
	}
	if err := readTesterForm(c); err != nil {
		return err
	}
	email, next := strings.TrimSpace(c.PostForm("email")), c.PostForm("next")
	if h.safeNext(next) == "" {
		next = ""
	}
	if err := h.svc.Testers.RequestLink(ctx, email, c.ClientIP()); err != nil {
		if !errs.Is(err, errs.Invalid) {
			return err
		}
		v := testerSignInView{Action: h.links.TesterSignIn(), Email: email, Next: next, Error: "Enter your email address, like name@example.com."}
		h.render(c, http.StatusUnprocessableEntity, "tester-signin", page{Title: "Sign in · Slipway", Body: v}, true)
		return nil
	}
	if next != "" {
		h.setNextCookie(c, next, testers.LinkTTL)
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusSeeOther, h.links.TesterSignIn()+"?sent=1")
	return nil
}

// testerLink: GET /t/in/:secret, the mailed link: a page with one "Sign in" button. Opening it
// spends nothing (mail scanners fetch links); the POST signs in.
func (h *Handler) testerLink(c *gin.Context) error {
	v := buttonView{Heading: "Sign in to test", Text: "You opened your sign-in link. Press the button to sign in on this device.",
		Action: h.links.TesterLink(c.Param("secret")), Button: "Sign in"}
	if h.safeNext(c.Query("next")) != "" {
		v.Next = c.Query("next")
	}
	h.render(c, http.StatusOK, "button", page{Title: "Sign in · Slipway", Body: v}, true)
	return nil
}

// testerUseLink: POST /t/in/:secret spends the link, once, sets the tester session cookie and
// answers 303 to where the tester was going (or their home). A spent, expired or forged link is
// a page saying so, with a way to ask for a new one (401).
func (h *Handler) testerUseLink(c *gin.Context) error {
	ctx := reqCtx(c)
	if err := h.sameSite(c); err != nil {
		return err
	}
	if err := readTesterForm(c); err != nil {
		return err
	}
	secret, tr, err := h.svc.Testers.SignIn(ctx, c.Param("secret"))
	if err != nil {
		if errs.Is(err, errs.Unauthenticated) || errs.Is(err, errs.NotFound) {
			v := errorView{Heading: "This link does not work any more", BackURL: h.links.TesterSignIn(), BackText: "Ask for a new sign-in link",
				Message: "A sign-in link works once, for " + strconv.Itoa(int(testers.LinkTTL/time.Minute)) + " minutes. This one was used already, has expired, or is not a Slipway link."}
			h.render(c, http.StatusUnauthorized, "error", page{Title: "Sign-in link used · Slipway", Body: v}, true)
			return nil
		}
		return err
	}
	_ = tr
	h.setTesterCookie(c, secret, h.svc.Testers.SessionTTL())
	to := h.safeNext(c.PostForm("next"))
	if to == "" {
		if ck, err := c.Cookie(testerNextCookie); err == nil {
			to = h.safeNext(ck)
		}
	}
	if to == "" {
		to = h.links.TesterHome()
	}
	h.setNextCookie(c, "", -time.Second)
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusSeeOther, to)
	return nil
}

// testerSignOut: POST /t/signout ends the tester's session on every replica.
func (h *Handler) testerSignOut(c *gin.Context) error {
	ctx := reqCtx(c)
	if err := h.sameSite(c); err != nil {
		return err
	}
	if v, err := c.Cookie(TesterCookie); err == nil {
		if err := h.svc.Testers.SignOut(ctx, v); err != nil {
			return err
		}
	}
	h.setTesterCookie(c, "", -time.Second)
	c.Redirect(http.StatusSeeOther, h.links.TesterSignIn()+"?signed_out=1")
	return nil
}

// testerHomeView is tester-home.html's data.
type testerHomeView struct {
	Email, Name string
	// Console: the visitor is a console user (no tester sign-out here; they sign out there).
	Console bool
	Apps    []testerAppView
	Saved   string
	// Feedback are the tester's own reports; FeedbackDeleted says one was just deleted.
	Feedback        []testerFeedbackView
	FeedbackDeleted bool
	SignOutURL      string
	ConsoleURL      string
}

type testerAppView struct {
	ID         int64
	Name       string
	Mail       string
	MailAction string
	Choices    []mailChoice
	Channels   []testerChannelView
	// channels indexes Channels by channel id.
	channels map[int64]int
}

type mailChoice struct{ Value, Label, Hint string }

// mailChoices are the mail choices as the home page words them.
var mailChoices = []mailChoice{
	{distribution.MailEvery, "Every build", "a mail for each new build"},
	{distribution.MailDaily, "Daily digest", "one mail a day, when there were new builds"},
	{distribution.MailOff, "None", "no mail; new builds are still here"},
}

type testerChannelView struct {
	Label  string
	Latest testerBuildView
	Older  []testerBuildView
}

type testerBuildView struct {
	ID                                                         int64
	URL, Version, Uploaded, UploadedISO, State, Platform, Icon string
}

// stateWords are a tester's states as their home says them.
var stateWords = map[string]string{distribution.TesterInvited: "new", distribution.TesterOpened: "opened", distribution.TesterInstalled: "installed"}

// testerHome: GET /t, the builds given to the visitor (a tester session, or the tester a console
// user is): each app's channels, the newest build of each with its install button, older builds
// one tap away, and each app's mail choice. Anyone else is sent to sign in.
func (h *Handler) testerHome(c *gin.Context) error {
	ctx := reqCtx(c)
	tr := visitorTester(c)
	if tr == nil {
		c.Header("Cache-Control", "no-store")
		c.Redirect(http.StatusSeeOther, h.links.TesterSignIn()+"?next="+url.QueryEscape("/t"))
		return nil
	}
	home, err := h.svc.Testers.HomeOf(ctx, tr)
	if err != nil {
		return err
	}
	v := testerHomeView{Email: tr.Email, Name: tr.Name, Console: !testerSession(c), SignOutURL: h.links.Base + "/t/signout",
		ConsoleURL: h.links.Base + "/console"}
	apps := map[int64]*testerAppView{}
	var order []int64
	app := func(id int64, name string) *testerAppView {
		if a, ok := apps[id]; ok {
			return a
		}
		a := &testerAppView{ID: id, Name: name, Mail: distribution.MailEvery, Choices: mailChoices,
			MailAction: h.links.Base + "/t/apps/" + strconv.FormatInt(id, 10) + "/mail", channels: map[int64]int{}}
		apps[id] = a
		order = append(order, id)
		return a
	}
	for _, r := range home.Releases {
		a := app(r.AppID, r.AppName)
		b := testerBuildView{ID: r.ReleaseID, URL: h.links.Release(r.ChannelSlug, r.ReleaseID), Version: r.ReleaseVersion + " (" + r.BuildVersion + ")",
			Uploaded: h.when(r.CreatedAt), UploadedISO: r.CreatedAt.UTC().Format(time.RFC3339), State: stateWords[r.State],
			Platform: name(platformNames, r.Platform), Icon: h.links.Icon(r.ReleaseID, true)}
		if i, ok := a.channels[r.ChannelID]; ok {
			a.Channels[i].Older = append(a.Channels[i].Older, b)
			continue
		}
		a.channels[r.ChannelID] = len(a.Channels)
		a.Channels = append(a.Channels, testerChannelView{Label: name(platformNames, r.ChannelName), Latest: b})
	}
	for _, ta := range home.Apps {
		app(ta.AppID, ta.AppName).Mail = ta.Mail
	}
	if id, err := strconv.ParseInt(c.Query("saved"), 10, 64); err == nil {
		if a, ok := apps[id]; ok {
			v.Saved = a.Name
		}
	}
	for _, id := range order {
		v.Apps = append(v.Apps, *apps[id])
	}
	v.Feedback, v.FeedbackDeleted = h.myFeedback(c), c.Query("feedback") == "deleted"
	h.render(c, http.StatusOK, "tester-home", page{Title: "Your builds · Slipway", Body: v, MainClass: "tester"}, true)
	return nil
}

// testerSetMail: POST /t/apps/:id/mail (mail: every, daily, none) sets the tester's mail choice
// for an app given to them, and answers 303 to their home, which says it was saved.
func (h *Handler) testerSetMail(c *gin.Context) error {
	ctx := reqCtx(c)
	if err := h.sameSite(c); err != nil {
		return err
	}
	if err := readTesterForm(c); err != nil {
		return err
	}
	tr := visitorTester(c)
	if tr == nil {
		return errs.New(errs.Unauthenticated, "sign in with the link Slipway mails you")
	}
	id, err := idParam(c, "id", "app")
	if err != nil {
		return err
	}
	// Only an app the tester's home shows: a tester cannot make themselves known to other apps.
	home, err := h.svc.Testers.HomeOf(ctx, tr)
	if err != nil {
		return err
	}
	known := false
	for _, a := range home.Apps {
		known = known || a.AppID == id
	}
	for _, r := range home.Releases {
		known = known || r.AppID == id
	}
	if !known {
		return errs.New(errs.NotFound, "there is no such app among your builds")
	}
	if err := h.svc.Testers.SetMail(ctx, tr, id, c.PostForm("mail")); err != nil {
		return err
	}
	c.Redirect(http.StatusSeeOther, h.links.TesterHome()+"?saved="+strconv.FormatInt(id, 10)+"#app-"+strconv.FormatInt(id, 10))
	return nil
}

type unsubscribeView struct {
	Action string
	Done   bool
}

// unsubscribePage: GET /t/unsubscribe/:token, a mail's unsubscribe link opened in a browser: a
// page with one button (the POST below), so that fetching the link changes nothing.
func (h *Handler) unsubscribePage(c *gin.Context) error {
	v := unsubscribeView{Action: h.links.Unsubscribe(c.Param("token"))}
	h.render(c, http.StatusOK, "unsubscribe", page{Title: "Unsubscribe · Slipway", Body: v}, true)
	return nil
}

// unsubscribe: POST /t/unsubscribe/:token turns the token's app's mail off for its tester:
// RFC 8058's one-click unsubscribe (a mail client POSTs "List-Unsubscribe=One-Click" with no
// cookies), or the page's button. No session and no CSRF check: the signed token is the proof,
// and all a forged POST could do is what the link's owner asked for. 200 with a plain page; an
// invalid token 404.
func (h *Handler) unsubscribe(c *gin.Context) error {
	ctx := reqCtx(c)
	if err := readTesterForm(c); err != nil {
		return err
	}
	if _, err := h.svc.Testers.Unsubscribe(ctx, c.Param("token")); err != nil {
		return err
	}
	h.render(c, http.StatusOK, "unsubscribe", page{Title: "Unsubscribed · Slipway", Body: unsubscribeView{Done: true}}, true)
	return nil
}

// root: GET / sends a tester to their home, a console user to the console, anyone else to the
// tester sign-in (the page most visitors of a bare address are looking for).
func (h *Handler) root(c *gin.Context) error {
	c.Header("Cache-Control", "no-store")
	switch _, user := c.Get(visitorUserKey); {
	case testerSession(c):
		c.Redirect(http.StatusFound, h.links.TesterHome())
	case user:
		c.Redirect(http.StatusFound, h.links.Base+"/console")
	default:
		c.Redirect(http.StatusFound, h.links.TesterSignIn())
	}
	return nil
}
