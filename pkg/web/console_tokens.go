package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

type tokenRowView struct {
	ID                   int64
	Name, Scope, Created string
	LastUsed             string
	Revoked              bool
	RevokeURL            string
}

type tokensView struct {
	User      *distribution.User
	CSRF      string
	CreateURL string
	Tokens    []tokenRowView
	// NewSecret is shown once, in the answer to the form that made it.
	NewSecret, NewName string
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
	if !h.csrfValid(session, c.PostForm("csrf")) {
		return "", nil, errs.New(errs.Forbidden, "the form's CSRF token is missing or wrong; reload the page and try again")
	}
	return session, u, nil
}

// renderTokens renders the tokens page for an admin, with a just-made secret when there is one.
func (h *Handler) renderTokens(c *gin.Context, session string, u *distribution.User, newName, newSecret string) error {
	ctx := reqCtx(c)
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return err
	}
	toks, err := h.svc.Tokens.Tokens(ctx)
	if err != nil {
		return err
	}
	v := tokensView{User: u, CSRF: h.csrfToken(session), CreateURL: h.links.Base + "/console/tokens", NewName: newName, NewSecret: newSecret}
	for _, t := range toks {
		row := tokenRowView{ID: t.ID, Name: t.Name, Scope: t.Scope, Created: h.when(t.CreatedAt), LastUsed: "never", Revoked: t.RevokedAt != nil,
			RevokeURL: h.links.Base + "/console/tokens/" + strconv.FormatInt(t.ID, 10) + "/revoke"}
		if t.LastUsedAt != nil {
			row.LastUsed = h.when(*t.LastUsedAt)
		}
		v.Tokens = append(v.Tokens, row)
	}
	h.render(c, http.StatusOK, "tokens", page{Title: "API tokens · Slipway", Body: v}, true)
	return nil
}

// consoleTokens: GET /console/tokens (admins).
func (h *Handler) consoleTokens(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	return h.renderTokens(c, session, u, "", "")
}

// consoleCreateToken: POST /console/tokens makes a token and shows its secret once (in the page,
// never in a URL).
func (h *Handler) consoleCreateToken(c *gin.Context) error {
	ctx := reqCtx(c)
	session, u, err := h.consoleForm(c)
	if err != nil {
		return err
	}
	secret, t, err := h.svc.Console.CreateToken(ctx, u, strings.TrimSpace(c.PostForm("name")), c.PostForm("scope"))
	if err != nil {
		return err
	}
	return h.renderTokens(c, session, u, t.Name, secret)
}

// consoleRevokeToken: POST /console/tokens/:id/revoke.
func (h *Handler) consoleRevokeToken(c *gin.Context) error {
	ctx := reqCtx(c)
	_, u, err := h.consoleForm(c)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return errs.New(errs.NotFound, "there is no such token")
	}
	if err := h.svc.Console.RevokeToken(ctx, u, id); err != nil {
		return err
	}
	c.Redirect(http.StatusSeeOther, h.links.Base+"/console/tokens")
	return nil
}
