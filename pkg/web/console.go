package web

import (
	"context"
	"crypto/hmac"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gin-gonic/gin"
	"golang.org/x/oauth2"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The console's sign-in: OpenID Connect (authorization code with PKCE, state and nonce checked)
// or a one-time login link; sessions live in the database, so signing out ends them on every
// replica. The cookie holds the session's secret; the database only its hash.

// SessionCookie holds a console session's secret.
const SessionCookie = "slipway_session"

// oidcCookie carries the sign-in's state, nonce and PKCE verifier, signed, for ten minutes.
const oidcCookie = "slipway_oidc"

const oidcFlowTTL = 10 * time.Minute

// oidcClient is the provider, discovered on first use (a provider down at start does not stop
// serve), and kept.
type oidcClient struct {
	mu       sync.Mutex
	provider *oidc.Provider
}

func (h *Handler) provider(ctx context.Context) (*oidc.Provider, error) {
	h.oidc.mu.Lock()
	defer h.oidc.mu.Unlock()
	if h.oidc.provider != nil {
		return h.oidc.provider, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, h.cfg.OIDC.Issuer)
	if err != nil {
		h.log.WarnContext(ctx, "the identity provider's discovery failed", "error", err.Error())
		return nil, errs.New(errs.Unavailable, "the identity provider cannot be reached; try again in a moment")
	}
	h.oidc.provider = p
	return p, nil
}

func (h *Handler) oauthConfig(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: h.cfg.OIDC.ClientID, ClientSecret: h.cfg.OIDC.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: h.links.Base + "/console/callback", Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

func (h *Handler) setCookie(c *gin.Context, name, value string, maxAge time.Duration) {
	http.SetCookie(c.Writer, &http.Cookie{Name: name, Value: value, Path: "/console", MaxAge: int(maxAge.Seconds()),
		HttpOnly: true, Secure: h.https(), SameSite: http.SameSiteLaxMode})
}

// setSessionCookie sets (or, with a negative maxAge, clears) the console session cookie. It
// covers the whole site (Path=/), not only /console: the public pages, downloads and manifests
// read it too (Visitor), so that an app's members open its tester-only channels and a person
// who is also a tester is recorded as one. A cookie of an older release (Path=/console) is
// cleared at the same time, so that it cannot shadow the new one.
func (h *Handler) setSessionCookie(c *gin.Context, value string, maxAge time.Duration) {
	http.SetCookie(c.Writer, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: int(maxAge.Seconds()),
		HttpOnly: true, Secure: h.https(), SameSite: http.SameSiteLaxMode})
	http.SetCookie(c.Writer, &http.Cookie{Name: SessionCookie, Value: "", Path: "/console", MaxAge: -1,
		HttpOnly: true, Secure: h.https(), SameSite: http.SameSiteLaxMode})
}

type signInView struct {
	OIDC     bool
	Message  string
	LoginURL string
	// EmailURL is where a colleague who came by invitation asks for a mailed login link.
	EmailURL string
	// Closed says why the identity provider admits nobody (its policy is closed).
	Closed string
}

// signInPolicy is who the configuration lets sign in with the identity provider.
func (h *Handler) signInPolicy() access.SignInPolicy {
	o := h.cfg.OIDC
	return access.SignInPolicy{AllowedDomains: o.AllowedDomains, AllowedGroups: o.AllowedGroups, AllowAnyone: o.AllowAny,
		TrustEmails: o.TrustEmails, AdminGroups: o.AdminGroups}
}

// consoleLogin: GET /console/login starts the identity provider's sign-in, or explains how to
// sign in without one.
func (h *Handler) consoleLogin(c *gin.Context) error {
	ctx := reqCtx(c)
	// After signing out, the page says so instead of going to the provider at once: the sign-out
	// form's redirects may not leave the site (CSP form-action), and nobody wants to be signed
	// straight back in.
	// A policy that admits nobody does not send anyone to the provider: the page says why.
	closed := h.cfg.OIDC.Issuer != "" && h.signInPolicy().Closed()
	if h.cfg.OIDC.Issuer == "" || c.Query("signed_out") != "" || closed {
		v := signInView{OIDC: h.cfg.OIDC.Issuer != "" && !closed, LoginURL: h.links.Base + "/console/login", EmailURL: h.links.ConsoleSignIn()}
		status := http.StatusOK
		if closed {
			v.Closed, status = access.ErrSignInClosed.Error(), http.StatusForbidden
		}
		if c.Query("signed_out") != "" {
			v.Message = "You are signed out."
		}
		h.render(c, status, "signin", page{Title: "Sign in · Slipway", Body: v}, true)
		return nil
	}
	p, err := h.provider(ctx)
	if err != nil {
		return err
	}
	state, nonce, verifier := oauth2.GenerateVerifier(), oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	h.setCookie(c, oidcCookie, h.svc.Signer.Token("oidc-flow", oidcFlowTTL, state, nonce, verifier)+"."+state+"."+nonce+"."+verifier, oidcFlowTTL)
	c.Redirect(http.StatusFound, h.oauthConfig(p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)))
	return nil
}

// consoleCallback: GET /console/callback, where the provider sends the browser back.
func (h *Handler) consoleCallback(c *gin.Context) error {
	ctx := reqCtx(c)
	if h.cfg.OIDC.Issuer == "" {
		return errs.New(errs.NotFound, "no identity provider is configured")
	}
	if e := c.Query("error"); e != "" {
		return errs.New(errs.Forbidden, "the identity provider refused the sign-in (%s)", truncateText(e, 60))
	}
	raw, err := c.Cookie(oidcCookie)
	parts := strings.Split(raw, ".")
	if err != nil || len(parts) < 4 {
		return errs.New(errs.Unauthenticated, "the sign-in expired or was started in another browser; sign in again")
	}
	n := len(parts)
	token, state, nonce, verifier := strings.Join(parts[:n-3], "."), parts[n-3], parts[n-2], parts[n-1]
	if !h.svc.Signer.CheckToken(token, "oidc-flow", state, nonce, verifier) || !hmac.Equal([]byte(c.Query("state")), []byte(state)) {
		return errs.New(errs.Unauthenticated, "the sign-in's state does not match; sign in again")
	}
	h.setCookie(c, oidcCookie, "", -time.Second)
	p, err := h.provider(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tok, err := h.oauthConfig(p).Exchange(ctx, c.Query("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return errs.New(errs.Unauthenticated, "the identity provider did not accept the sign-in's code; sign in again")
	}
	rawID, _ := tok.Extra("id_token").(string)
	idToken, err := p.Verifier(&oidc.Config{ClientID: h.cfg.OIDC.ClientID}).Verify(ctx, rawID)
	if err != nil || !hmac.Equal([]byte(idToken.Nonce), []byte(nonce)) {
		return errs.New(errs.Unauthenticated, "the identity provider's ID token is not valid for this sign-in")
	}
	var claims map[string]any
	if err := idToken.Claims(&claims); err != nil {
		return errs.New(errs.Unauthenticated, "the ID token's claims cannot be read")
	}
	// Many providers put the profile (email, name, groups) in the UserInfo answer only; it fills
	// what the ID token leaves out, never overrides it, and only for the same subject.
	if claims["email"] == nil || claims["name"] == nil || claims[h.cfg.OIDC.GroupsClaim] == nil {
		if info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil && info.Subject == idToken.Subject {
			var more map[string]any
			if info.Claims(&more) == nil {
				for k, v := range more {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		}
	}
	id := access.Identity{Issuer: idToken.Issuer, Subject: idToken.Subject}
	id.Email, _ = claims["email"].(string)
	// email_verified is a boolean by the standard; some providers (AWS Cognito) send the string
	// "true"; some (Entra ID) send none, which only SLIPWAY_OIDC_TRUST_EMAILS lets pass.
	switch v := claims["email_verified"].(type) {
	case bool:
		id.EmailVerified = v
	case string:
		id.EmailVerified = strings.EqualFold(v, "true")
	case nil:
		id.EmailVerifiedAbsent = true
	}
	id.Name, _ = claims["name"].(string)
	if groups, ok := claims[h.cfg.OIDC.GroupsClaim].([]any); ok {
		for _, g := range groups {
			if s, ok := g.(string); ok {
				id.Groups = append(id.Groups, s)
			}
		}
	}
	secret, _, err := h.svc.Logins.SignIn(ctx, id, h.signInPolicy())
	if err != nil {
		return err
	}
	h.setSessionCookie(c, secret, access.SessionTTL)
	c.Redirect(http.StatusFound, h.links.Base+"/console")
	return nil
}

// consoleLoginLink: GET /console/login-link?token=... signs in with a one-time link.
func (h *Handler) consoleLoginLink(c *gin.Context) error {
	ctx := reqCtx(c)
	secret, _, err := h.svc.Logins.UseLoginLink(ctx, c.Query("token"))
	if err != nil {
		return err
	}
	h.setSessionCookie(c, secret, access.SessionTTL)
	c.Redirect(http.StatusFound, h.links.Base+"/console")
	return nil
}

// csrfToken ties a form to the session: an HMAC of the session's secret.
func (h *Handler) csrfToken(session string) string {
	return h.svc.Signer.Sign("console-csrf", session)
}

// csrfValid checks a form's CSRF token, made with the current or a previous SLIPWAY_SECRET (a page
// rendered before a key rotation still posts).
func (h *Handler) csrfValid(session, token string) bool {
	return h.svc.Signer.Verify(token, "console-csrf", session)
}

type consoleView struct {
	User   *distribution.User
	CSRF   string
	Apps   []appRow
	Base   string
	Recent []recentView
	Form   formState
	Can    grants
	// Upload is the upload box (nil: the person may not make an app by upload).
	Upload *uploadBoxView
}

// appRow is an app in the console's apps list: its icon, platforms and newest build.
type appRow struct {
	ID                               int64
	Name, URL, IconURL               string
	Platforms                        []string
	Newest, NewestUploaded, NewestID string
}

// appRows shows the apps with their newest build (across their channels, from the read cache)
// and platforms.
func (h *Handler) appRows(ctx context.Context, apps []distribution.App) []appRow {
	rows := make([]appRow, 0, len(apps))
	for _, a := range apps {
		row := appRow{ID: a.ID, Name: a.Name, URL: h.appURL(a.ID), IconURL: h.links.Icon(0, false)}
		var newest *distribution.Release
		for _, sc := range a.Schemes {
			for _, ch := range sc.Channels {
				if p := platformName(ch.DeviceType); !slices.Contains(row.Platforms, p) {
					row.Platforms = append(row.Platforms, p)
				}
				if view, err := h.svc.Reads.View(ctx, ch.Slug); err == nil && len(view.Releases) > 0 {
					if r := &view.Releases[0]; newest == nil || r.CreatedAt.After(newest.CreatedAt) {
						newest = r
					}
				}
			}
		}
		if newest != nil {
			row.Newest, row.NewestUploaded = versionText(newest), h.when(newest.CreatedAt)
			row.NewestID = strconv.FormatInt(newest.ID, 10)
			row.IconURL = h.links.Icon(newest.ID, newest.IconKey != nil)
		}
		rows = append(rows, row)
	}
	return rows
}

// recentView is an upload on the console's home: the newest across every app.
type recentView struct {
	App, Channel, Version, Uploaded, AppURL, URL string
	Downloads                                    int64
}

// consoleHome: GET /console, the signed-in person's home.
func (h *Handler) consoleHome(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	return h.renderHome(c, session, u, formState{}, http.StatusOK)
}

// renderHome renders the console's home, with a failed "create app" form's state (or none).
func (h *Handler) renderHome(c *gin.Context, session string, u *distribution.User, form formState, status int) error {
	ctx := reqCtx(c)
	apps, err := h.svc.Apps.ListApps(ctx, distribution.Page{Page: 1, PerPage: 50})
	if err != nil {
		return err
	}
	recent, err := h.svc.Releases.RecentUploads(ctx, 15)
	if err != nil {
		return err
	}
	v := consoleView{User: u, CSRF: h.csrfToken(session), Apps: h.appRows(ctx, apps), Base: h.links.Base, Form: form, Can: h.grants(c, 0)}
	if v.Can.Upload {
		v.Upload = h.homeUploadBox(v.CSRF, form)
	}
	for _, rc := range recent {
		v.Recent = append(v.Recent, recentView{App: rc.App.Name, Channel: rc.Scheme.Name + " · " + rc.Channel.Name, Version: versionText(&rc.Release),
			Uploaded: h.when(rc.CreatedAt), Downloads: rc.Downloads, URL: h.links.Release(rc.Channel.Slug, rc.ID),
			AppURL: h.appURL(rc.App.ID)})
	}
	p := page{Title: "Console · Slipway", Body: v}
	if v.Upload != nil {
		p.Script = h.links.Static("console.js")
	}
	h.consoleRender(c, status, "console", p, session, u)
	return nil
}

// consoleUser returns the session and its user, or sends the browser to sign in. From then on
// the request acts as the user (actingAs).
func (h *Handler) consoleUser(c *gin.Context) (string, *distribution.User, bool) {
	ctx := reqCtx(c)
	session, err := c.Cookie(SessionCookie)
	if err == nil {
		if u, err := h.svc.Logins.SessionUser(ctx, session); err == nil {
			actingAs(c, u)
			return session, u, true
		}
	}
	c.Redirect(http.StatusFound, h.links.Base+"/console/login")
	return "", nil, false
}

// consoleLogout: POST /console/logout (with the CSRF token) ends the session everywhere.
func (h *Handler) consoleLogout(c *gin.Context) error {
	ctx := reqCtx(c)
	session, u, err := h.consoleForm(c)
	if err != nil {
		return err
	}
	if err := h.svc.Logins.SignOut(ctx, session, u); err != nil {
		return err
	}
	h.setSessionCookie(c, "", -time.Second)
	c.Redirect(http.StatusSeeOther, h.links.Base+"/console/login?signed_out=1")
	return nil
}

// truncateText cuts what a provider sends back before it is shown.
func truncateText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
