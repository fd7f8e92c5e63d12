package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// maxFormBytes bounds the password form's body.
const maxFormBytes = 64 << 10

type passwordView struct {
	AppName, ChannelLabel, IconURL, Action, Error string
}

// gate lets a request through to the pages of a channel: always for a channel without a
// password, and for a protected one when the browser holds the channel's password cookie.
// Otherwise it answers with the password form and returns false. The form POSTs to the page's
// own URL: a right password sets the cookie and redirects (303) to the page; a wrong one shows
// the form again (403); too many wrong ones are slowed down (429 with Retry-After) by
// distribution.CheckChannelPassword, which counts failures in the database for all replicas.
//
// The form needs no CSRF token: all a forged cross-site POST can do is give a password the forger
// already knows, letting the victim's browser into that one channel, and the cookie it sets is
// SameSite=Lax and HttpOnly, so other sites can neither send it in their own POSTs nor read it.
func (h *Handler) gate(c *gin.Context, cc *distribution.ChannelContext, pageURL string) bool {
	ctx := reqCtx(c)
	ch := &cc.Channel
	if c.Request.Method == http.MethodPost {
		if !ch.HasPassword() {
			c.Redirect(http.StatusSeeOther, pageURL)
			return false
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxFormBytes)
		err := h.svc.Passwords.CheckChannelPassword(ctx, ch, c.PostForm("password"), c.ClientIP())
		if err == nil {
			h.setChannelCookie(c, ch)
			c.Redirect(http.StatusSeeOther, pageURL)
			return false
		}
		h.passwordForm(c, cc, pageURL, err)
		return false
	}
	if ch.TesterOnly {
		return h.testerGate(c, cc, pageURL)
	}
	if !ch.HasPassword() {
		return true
	}
	req := access.AccessRequest{Client: c.ClientIP(), AppID: cc.App.ID}
	if ck, err := c.Cookie(access.PasswordCookieName(ch.Slug)); err == nil {
		req.Cookie = ck
	}
	err := h.svc.Passwords.Authorize(ctx, ch, req)
	if err == nil {
		return true
	}
	h.passwordForm(c, cc, pageURL, err)
	return false
}

// testerGate lets a request through to the pages of a channel open to its testers only when the
// policy lets its actor (a tester session, a console user) open it. Anyone else is sent to the
// tester sign-in page, which comes back here; a signed-in tester the channel was not given to is
// told so (403), never shown a build.
func (h *Handler) testerGate(c *gin.Context, cc *distribution.ChannelContext, pageURL string) bool {
	ctx := reqCtx(c)
	err := h.svc.Passwords.Authorize(ctx, &cc.Channel, access.AccessRequest{Client: c.ClientIP(), AppID: cc.App.ID})
	switch {
	case err == nil:
		return true
	case errs.Is(err, errs.Unauthenticated):
		c.Header("Cache-Control", "no-store")
		c.Redirect(http.StatusSeeOther, h.links.TesterSignIn()+"?next="+url.QueryEscape(h.relativeNext(pageURL)))
	case errs.Is(err, errs.Forbidden):
		// Signed in, but not one of the channel's testers: say so, never show a build.
		p := h.describe(c, err)
		v := errorView{Heading: "This build is not yours to install", Message: p.Message, BackURL: h.links.TesterHome(), BackText: "Your builds"}
		if tr := visitorTester(c); tr != nil {
			v.Message = "You are signed in as " + tr.Email + ". " + v.Message
		}
		h.render(c, http.StatusForbidden, "error", page{Title: "Not given to you · Slipway", Body: v}, true)
	default:
		h.failPage(c, err, "")
	}
	c.Abort()
	return false
}

// passwordForm answers with the password form, saying what was wrong with the last attempt.
func (h *Handler) passwordForm(c *gin.Context, cc *distribution.ChannelContext, action string, err error) {
	v := passwordView{AppName: cc.App.Name, ChannelLabel: channelLabel(cc), IconURL: h.links.Icon(0, false), Action: action}
	status := http.StatusOK
	switch kind := errs.KindOf(err); {
	case kind == errs.Unauthenticated && c.Request.Method != http.MethodPost:
		// A first visit: the form, no complaint.
	case kind == errs.Unauthenticated:
		status, v.Error = http.StatusForbidden, "Enter the channel's password."
	case kind == errs.Forbidden:
		status, v.Error = http.StatusForbidden, "Wrong password. Try again."
	case kind == errs.TooManyRequests:
		p := h.describe(c, err)
		status, v.Error = p.Status, "Too many wrong passwords: "+strings.TrimPrefix(p.Message, "too many wrong passwords; ")+"."
	default:
		h.failPage(c, err, "")
		return
	}
	h.render(c, status, "password", page{Title: cc.App.Name + " · password required · Slipway", Body: v}, true)
	c.Abort()
}

// setChannelCookie remembers in the browser that it gave the channel's password. The cookie is
// signed and bound to the password hash (access.Passwords.ChannelCookie), HttpOnly,
// SameSite=Lax, Secure when the service is on https, and covers the whole site (Path=/) so the
// channel's icons and downloads see it too.
func (h *Handler) setChannelCookie(c *gin.Context, ch *distribution.Channel) {
	v, ttl := h.svc.Passwords.ChannelCookie(ch)
	http.SetCookie(c.Writer, &http.Cookie{
		Name: access.PasswordCookieName(ch.Slug), Value: v, Path: "/", MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: h.https(), SameSite: http.SameSiteLaxMode,
	})
	c.Header("Cache-Control", "no-store")
}
