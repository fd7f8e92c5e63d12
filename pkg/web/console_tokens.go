package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

type tokenRowView struct {
	ID                   int64
	Name, Scope, Created string
	// Owner names the console user the token belongs to (empty: made on the command line).
	Owner     string
	LastUsed  string
	Revoked   bool
	RevokeURL string
	// Apps names the apps the token is limited to ("" for every app); Abilities its abilities
	// ("" for all its scope allows).
	Apps, Abilities string
}

// tokenAppOption is an app the tokens form can limit a token to.
type tokenAppOption struct {
	ID       int64
	Name     string
	Selected bool
}

// tokenAbilityOption is an ability the tokens form can limit a token to.
type tokenAbilityOption struct {
	Name    string
	Checked bool
}

type tokensView struct {
	User      *distribution.User
	CSRF      string
	CreateURL string
	Tokens    []tokenRowView
	Form      formState
	// Apps and Abilities are the limits the form offers, with a failed form's choices kept.
	Apps      []tokenAppOption
	Abilities []tokenAbilityOption
}

// consoleForm checks the signed-in user and the form's CSRF token.
func (h *Handler) consoleForm(c *gin.Context) (string, *distribution.User, error) {
	ctx := reqCtx(c)
	session, err := c.Cookie(SessionCookie)
	if err != nil {
		return "", nil, errs.New(errs.Unauthenticated, "sign in first")
	}
	u, err := h.svc.Logins.SessionUser(ctx, session)
	if err != nil {
		return "", nil, err
	}
	// The token comes in the form or, from the console's script, in a header; the body was read
	// within the console's limits before the handler ran (readConsoleForm).
	csrf := c.GetHeader(csrfHeader)
	if csrf == "" {
		csrf = c.PostForm("csrf")
	}
	if !h.csrfValid(session, csrf) {
		return "", nil, errs.New(errs.Forbidden, "the form's CSRF token is missing or wrong; reload the page and try again")
	}
	actingAs(c, u)
	return session, u, nil
}

// renderTokens renders the tokens page for an admin, with a failed form's state (or none).
func (h *Handler) renderTokens(c *gin.Context, session string, u *distribution.User, form formState, status int) error {
	toks, err := h.svc.Tokens.Tokens(reqCtx(c))
	if err != nil {
		return err
	}
	apps, err := h.svc.Apps.ListApps(reqCtx(c), distribution.Page{Page: 1, PerPage: 1000})
	if err != nil {
		return err
	}
	v := tokensView{User: u, CSRF: h.csrfToken(session), CreateURL: h.links.Base + "/console/tokens", Form: form}
	chosenApps, chosenAbilities := c.PostFormArray("apps"), c.PostFormArray("abilities")
	names := map[int64]string{}
	for _, a := range apps {
		names[a.ID] = a.Name
		v.Apps = append(v.Apps, tokenAppOption{ID: a.ID, Name: a.Name, Selected: slices.Contains(chosenApps, strconv.FormatInt(a.ID, 10))})
	}
	for _, ab := range distribution.Abilities {
		v.Abilities = append(v.Abilities, tokenAbilityOption{Name: ab, Checked: slices.Contains(chosenAbilities, ab)})
	}
	for _, t := range toks {
		row := tokenRowView{ID: t.ID, Name: t.Name, Scope: t.Scope, Owner: t.Owner, Created: h.when(t.CreatedAt), LastUsed: "never", Revoked: t.RevokedAt != nil,
			RevokeURL: h.links.Base + "/console/tokens/" + strconv.FormatInt(t.ID, 10) + "/revoke", Abilities: strings.Join(t.Abilities, ", ")}
		var limited []string
		for _, id := range t.Apps {
			if n, ok := names[id]; ok {
				limited = append(limited, n)
			} else {
				limited = append(limited, "#"+strconv.FormatInt(id, 10)+" (deleted)")
			}
		}
		row.Apps = strings.Join(limited, ", ")
		if t.LastUsedAt != nil {
			row.LastUsed = h.when(*t.LastUsedAt)
		}
		v.Tokens = append(v.Tokens, row)
	}
	h.consoleRender(c, status, "tokens", page{Title: "API tokens · Slipway", Body: v}, session, u)
	return nil
}

// consoleTokens: GET /console/tokens (admins).
func (h *Handler) consoleTokens(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	return h.renderTokens(c, session, u, formState{}, http.StatusOK)
}

// consoleCreateToken: POST /console/tokens makes a token; its secret is shown once, on the
// tokens page the form redirects to (carried by the sealed flash cookie, never in a URL).
func (h *Handler) consoleCreateToken(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	if err := h.may(c, policy.ManageTokens, policy.Installation); err != nil {
		return "", err
	}
	f.inPlace("create-token", map[string]fieldLabel{"name": {"name", "Name"}, "scope": {"scope", "Scope"},
		"apps": {"apps", "Apps"}, "abilities": {"abilities", "Abilities"}}, func(s formState) error {
		return h.renderTokens(c, f.session, f.user, s, http.StatusUnprocessableEntity)
	})
	secret, t, err := h.svc.Tokens.MakeToken(ctx, access.TokenRequest{Name: strings.TrimSpace(c.PostForm("name")), Scope: c.PostForm("scope"),
		Apps: c.PostFormArray("apps"), Abilities: c.PostFormArray("abilities")})
	if err != nil {
		return "", err
	}
	f.flash = flash{Kind: "ok", Message: "Token " + t.Name + " was made. Copy it now: it is shown only this once.", Secret: secret, SecretID: "new-token-secret"}
	return h.links.Base + "/console/tokens", nil
}

// consoleRevokeToken: POST /console/tokens/:id/revoke (with "confirm").
func (h *Handler) consoleRevokeToken(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return "", errs.New(errs.NotFound, "there is no such token")
	}
	f.inPlace("revoke-token-"+strconv.FormatInt(id, 10), nil, func(s formState) error {
		return h.renderTokens(c, f.session, f.user, s, http.StatusUnprocessableEntity)
	})
	if err := h.may(c, policy.ManageTokens, policy.Installation); err != nil {
		return "", err
	}
	if err := confirmed(c); err != nil {
		return "", err
	}
	if _, err := h.svc.Tokens.RevokeTokenByID(ctx, id); err != nil {
		return "", err
	}
	f.ok("Token revoked: it works no more.")
	return h.links.Base + "/console/tokens", nil
}
