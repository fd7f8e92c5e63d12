package httpapi

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

const tokenKey = "slipway.token"

// headerOrQueryToken reads the token from the places that need no body: the Authorization header
// ("Token t" or "Bearer t"), then the token query parameter.
func headerOrQueryToken(c *gin.Context) string {
	if h := c.GetHeader("Authorization"); h != "" {
		scheme, t, ok := strings.Cut(h, " ")
		if ok && (strings.EqualFold(scheme, "token") || strings.EqualFold(scheme, "bearer")) {
			return strings.TrimSpace(t)
		}
	}
	return c.Query("token")
}

// requireToken authenticates the request with a token, read from the header, the query, then the
// form or JSON body (decisions.md): missing or wrong, 401. The request then acts as the token
// (distribution.TokenActor): what it may do is the policy's to say, asked by the use case it
// calls. The token is kept on the context for the handler (tokenOf).
func (s *Server) requireToken() func(c *gin.Context) error {
	return func(c *gin.Context) error {
		ctx := reqCtx(c)
		secret := headerOrQueryToken(c)
		if secret == "" {
			var form struct {
				Token string `param:"token"`
			}
			if err := bind(c, &form); err != nil {
				return err
			}
			secret = form.Token
		}
		tok, err := s.svc.Tokens.Authenticate(ctx, secret)
		if err != nil {
			return err
		}
		c.Set(tokenKey, tok)
		// What the request changes is recorded as this token's (audit rows, tombstones).
		c.Request = c.Request.WithContext(distribution.WithActor(c.Request.Context(), distribution.TokenActor(tok)))
		return nil
	}
}

// tokenOf returns the token requireToken let in.
func tokenOf(c *gin.Context) *distribution.Token {
	t, _ := c.Get(tokenKey)
	return t.(*distribution.Token)
}
