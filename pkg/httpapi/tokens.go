package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution/access"
)

// listTokens: GET /api/tokens, every token without its secret (admin).
func (s *Server) listTokens(c *gin.Context) error {
	ctx := reqCtx(c)
	toks, err := s.svc.Tokens.Tokens(ctx)
	if err != nil {
		return err
	}
	out := make([]tokenView, 0, len(toks))
	for i := range toks {
		out = append(out, s.tokenView(&toks[i]))
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// createToken: POST /api/tokens (name, scope, apps, abilities) → 201 with the secret in "token", shown only now.
// The new token belongs to the requesting token's owner and never exceeds its rights.
func (s *Server) createToken(c *gin.Context) error {
	ctx := reqCtx(c)
	var req access.TokenRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	secret, tok, err := s.svc.Tokens.MakeToken(ctx, req)
	if err != nil {
		return err
	}
	v := s.tokenView(tok)
	v.Token = secret
	c.JSON(http.StatusCreated, v)
	return nil
}

// revokeToken: DELETE /api/tokens/:id revokes a token at once, on every replica.
func (s *Server) revokeToken(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if _, err := s.svc.Tokens.RevokeTokenByID(ctx, id); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}

// meView answers who a token is: Zealot's /api/users/me fields that a token can fill (username),
// and the token's own name and scope.
type meView struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
	Name     string `json:"name"`
	Scope    string `json:"scope"`
}

// me: GET /api/users/me, the token the request carries.
func (s *Server) me(c *gin.Context) error {
	t := tokenOf(c)
	c.JSON(http.StatusOK, meView{ID: t.ID, Username: t.Name, Name: t.Name, Scope: t.Scope})
	return nil
}
