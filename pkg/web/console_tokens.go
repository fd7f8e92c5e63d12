package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
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
}

type tokensView struct {
	User      *distribution.User
	CSRF      string
	CreateURL string
	Tokens    []tokenRowView
	Form      formState
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
	v := tokensView{User: u, CSRF: h.csrfToken(session), CreateURL: h.links.Base + "/console/tokens", Form: form}
	for _, t := range toks {
		row := tokenRowView{ID: t.ID, Name: t.Name, Scope: t.Scope, Owner: t.Owner, Created: h.when(t.CreatedAt), LastUsed: "never", Revoked: t.RevokedAt != nil,
			RevokeURL: h.links.Base + "/console/tokens/" + strconv.FormatInt(t.ID, 10) + "/revoke"}
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
	f.inPlace("create-token", map[string]fieldLabel{"name": {"name", "Name"}, "scope": {"scope", "Scope"}}, func(s formState) error {
		return h.renderTokens(c, f.session, f.user, s, http.StatusUnprocessableEntity)
	})
	secret, t, err := h.svc.Tokens.CreateToken(ctx, strings.TrimSpace(c.PostForm("name")), c.PostForm("scope"))
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
