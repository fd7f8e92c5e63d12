package httpapi

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/store"
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

// requireToken authenticates the request with a token of the given scope, read from the header,
// the query, then the form or JSON body (decisions.md). Missing or wrong: 401; scope too narrow: 403.
func (s *Server) requireToken(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		secret := headerOrQueryToken(c)
		if secret == "" {
			p, err := readParams(c)
			if err != nil {
				s.fail(c, err)
				return
			}
			if secret, err = p.str("token"); err != nil {
				s.fail(c, err)
				return
			}
		}
		tok, err := s.authenticate(c, secret, scope)
		if err != nil {
			s.fail(c, err)
			return
		}
		c.Set(tokenKey, tok)
		c.Next()
	}
}

// authenticate checks a token secret against scope.
func (s *Server) authenticate(c *gin.Context, secret, scope string) (*store.Token, error) {
	if secret == "" {
		return nil, errs.New(errs.Unauthenticated, "an API token is required: send it as \"Authorization: Token <token>\" or a token parameter")
	}
	tok, err := s.db.Authenticate(c, secret)
	if err != nil {
		return nil, err
	}
	if !tok.Allows(scope) {
		return nil, errs.New(errs.Forbidden, "this token's scope (%s) does not allow this operation; it needs %s", tok.Scope, scope)
	}
	return tok, nil
}
