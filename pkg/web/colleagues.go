package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Colleagues' pages: invitations (the Users page and an app's members), the mailed invitation
// and login links (each a page with one button: a mail scanner that fetches links spends
// nothing), and the page where a colleague who came by invitation asks for a login link.

// invited says what an invitation did, in the flash of the page the form returns to. With mail
// off the link is shown once, to be passed on by the inviter.
func (f *formCall) invited(out *access.Invited) {
	switch {
	case out.Member != nil:
		f.ok("%s is now a developer of this app.", out.Member.Email)
	case out.Link != "":
		f.flash = flash{Kind: "ok", Message: "Invitation made for " + out.Invitation.Email + ". Mail is off here: send them this link yourself " +
			"(it works once, for " + strconv.Itoa(int(access.InvitationTTL/(24*time.Hour))) + " days).", Secret: out.Link, SecretID: "invitation-link"}
	default:
		f.ok("Invitation mailed to %s.", out.Invitation.Email)
	}
}

// consoleInvite: POST /console/users/invitations (email, role; admins) invites a colleague to the
// console.
func (h *Handler) consoleInvite(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	f.inPlace("invite-form", map[string]fieldLabel{"email": {"email", "Email"}, "role": {"role", "Role"}}, func(s formState) error {
		return h.renderUsers(c, f.session, f.user, s, http.StatusUnprocessableEntity)
	})
	out, err := h.svc.Colleagues.Invite(ctx, access.InviteInput{Email: c.PostForm("email"), Role: c.PostForm("role")})
	if err != nil {
		return "", err
	}
	f.invited(out)
	return h.links.Base + "/console/users#invitations", nil
}

// consoleWithdrawInvitation: POST /console/users/invitations/:id/withdraw; back=app returns to
// the invitation's app.
func (h *Handler) consoleWithdrawInvitation(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "invitation")
	if err != nil {
		return "", err
	}
	inv, err := h.svc.Colleagues.Withdraw(ctx, id)
	if err != nil {
		return "", err
	}
	f.ok("The invitation of %s is withdrawn: its link works no more.", inv.Email)
	if c.PostForm("back") == "app" && inv.AppID != 0 {
		return h.appURL(inv.AppID) + "#members", nil
	}
	return h.links.Base + "/console/users#invitations", nil
}

type colleagueSignInView struct {
	Action, Email, Error string
	Sent                 bool
}

// colleagueSignIn: GET /console/login/email, where a colleague who came by invitation asks for a
// login link.
func (h *Handler) colleagueSignIn(c *gin.Context) error {
	v := colleagueSignInView{Action: h.links.ConsoleSignIn(), Sent: c.Query("sent") != ""}
	h.render(c, http.StatusOK, "colleague-signin", page{Title: "Sign in · Slipway", Body: v}, true)
	return nil
}

// colleagueRequestLink: POST /console/login/email mails a login link and answers "check your
// mail", the same for every address; a malformed one is shown the form again (422).
func (h *Handler) colleagueRequestLink(c *gin.Context) error {
	if err := h.sameSite(c); err != nil {
		return err
	}
	email := strings.TrimSpace(c.PostForm("email"))
	if err := h.svc.Colleagues.RequestLink(reqCtx(c), email, c.ClientIP()); err != nil {
		if !errs.Is(err, errs.Invalid) {
			return err
		}
		v := colleagueSignInView{Action: h.links.ConsoleSignIn(), Email: email, Error: "Enter your email address, like name@example.com."}
		h.render(c, http.StatusUnprocessableEntity, "colleague-signin", page{Title: "Sign in · Slipway", Body: v}, true)
		return nil
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusSeeOther, h.links.ConsoleSignIn()+"?sent=1")
	return nil
}

// buttonView is a mailed link's page (a tester's or a colleague's): what it does, and the one
// button that does it; Next is where a tester goes after signing in.
type buttonView struct {
	Heading, Text, Action, Button, Next string
}

// colleagueLink: GET /console/signin/:secret, a mailed login link's page.
func (h *Handler) colleagueLink(c *gin.Context) error {
	v := buttonView{Heading: "Sign in to the console", Text: "You opened your sign-in link. Press the button to sign in on this device.",
		Action: h.links.ConsoleLink(c.Param("secret")), Button: "Sign in"}
	h.render(c, http.StatusOK, "button", page{Title: "Sign in · Slipway", Body: v}, true)
	return nil
}

// colleagueUseLink: POST /console/signin/:secret spends a login link, once, and opens the console.
func (h *Handler) colleagueUseLink(c *gin.Context) error {
	if err := h.sameSite(c); err != nil {
		return err
	}
	secret, _, err := h.svc.Logins.UseLoginLink(reqCtx(c), c.Param("secret"))
	if err != nil {
		if errs.Is(err, errs.Unauthenticated) {
			return h.spentLink(c, "A sign-in link works once, for "+strconv.Itoa(int(access.LoginLinkTTL/time.Minute))+
				" minutes. This one was used already, has expired, or is not a Slipway link.", "Ask for a new sign-in link")
		}
		return err
	}
	h.setSessionCookie(c, secret, access.SessionTTL)
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusSeeOther, h.links.Base+"/console")
	return nil
}

func (h *Handler) spentLink(c *gin.Context, message, back string) error {
	v := errorView{Heading: "This link does not work any more", Message: message, BackURL: h.links.ConsoleSignIn(), BackText: back}
	h.render(c, http.StatusUnauthorized, "error", page{Title: "Link used · Slipway", Body: v}, true)
	return nil
}

// invitationPage: GET /console/invitations/:secret says what the invitation gives, with the
// button that accepts it.
func (h *Handler) invitationPage(c *gin.Context) error {
	inv, err := h.svc.Colleagues.Invitation(reqCtx(c), c.Param("secret"))
	if err != nil {
		if errs.Is(err, errs.Unauthenticated) {
			return h.spentInvitation(c)
		}
		return err
	}
	place := "the Slipway console as " + distribution.WithArticle(inv.Role)
	if inv.AppName != "" {
		place = inv.AppName + " on Slipway, as a member who uploads and manages its builds"
	}
	v := buttonView{Heading: "You are invited", Text: inv.InvitedBy + " invites " + inv.Email + " to " + place + ".",
		Action: h.links.Invitation(c.Param("secret")), Button: "Accept the invitation"}
	h.render(c, http.StatusOK, "button", page{Title: "Invitation · Slipway", Body: v}, true)
	return nil
}

func (h *Handler) spentInvitation(c *gin.Context) error {
	v := errorView{Heading: "This invitation does not work any more", BackURL: h.links.Base + "/console/login", BackText: "Sign in",
		Message: "An invitation works once, for " + strconv.Itoa(int(access.InvitationTTL/(24*time.Hour))) +
			" days. This one was accepted already, withdrawn, has expired, or is not a Slipway link: ask whoever invited you for a new one."}
	h.render(c, http.StatusUnauthorized, "error", page{Title: "Invitation used · Slipway", Body: v}, true)
	return nil
}

// acceptInvitation: POST /console/invitations/:secret accepts, once: a colleague who signs in by
// mail is signed in; one who signs in with the identity provider is sent to do so.
func (h *Handler) acceptInvitation(c *gin.Context) error {
	if err := h.sameSite(c); err != nil {
		return err
	}
	secret, _, err := h.svc.Colleagues.Accept(reqCtx(c), c.Param("secret"))
	if err != nil {
		if errs.Is(err, errs.Unauthenticated) {
			return h.spentInvitation(c)
		}
		return err
	}
	c.Header("Cache-Control", "no-store")
	if secret == "" {
		c.Redirect(http.StatusSeeOther, h.links.Base+"/console/login")
		return nil
	}
	h.setSessionCookie(c, secret, access.SessionTTL)
	c.Redirect(http.StatusSeeOther, h.links.Base+"/console")
	return nil
}
