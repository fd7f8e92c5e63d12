package distribution

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Authenticate returns the active token matching secret if its scope allows an operation that
// needs scope: errs.Unauthenticated for a missing, wrong or revoked token, errs.Forbidden for a
// scope too narrow.
func (s *Service) Authenticate(ctx context.Context, secret, scope string) (*Token, error) {
	if secret == "" {
		return nil, errs.New(errs.Unauthenticated, "an API token is required: send it as \"Authorization: Token <token>\" or a token parameter")
	}
	tok, err := s.Store.Authenticate(ctx, secret)
	if err != nil {
		return nil, err
	}
	if !tok.Allows(scope) {
		return nil, errs.New(errs.Forbidden, "this token's scope (%s) does not allow this operation; it needs %s", tok.Scope, scope)
	}
	return tok, nil
}

// CreateToken makes a token with a name (unique among active tokens) and a scope, and returns
// its secret, which is shown only now.
func (s *Service) CreateToken(ctx context.Context, name, scope string) (string, *Token, error) {
	name, scope, err := checkToken(name, scope)
	if err != nil {
		return "", nil, err
	}
	return s.Store.CreateToken(ctx, name, scope)
}

// checkToken validates a new token's name and scope (upload when empty).
func checkToken(name, scope string) (string, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > 255 {
		return "", "", errs.Field("name", "must be 1 to 255 characters")
	}
	scope = strings.TrimSpace(scope)
	if scope == "" {
		scope = ScopeUpload
	}
	if scope != ScopeUpload && scope != ScopeAdmin {
		return "", "", errs.Field("scope", "must be upload or admin")
	}
	return name, scope, nil
}

// Tokens lists every token, active ones first, newest first. Secrets are never stored, so never
// listed.
func (s *Service) Tokens(ctx context.Context) ([]Token, error) { return s.Store.ListTokens(ctx) }

// RevokeToken revokes the active token with this name.
func (s *Service) RevokeToken(ctx context.Context, name string) error {
	return s.Store.RevokeToken(ctx, strings.TrimSpace(name))
}

// RevokeTokenByID revokes an active token by id. A token may revoke itself.
func (s *Service) RevokeTokenByID(ctx context.Context, id int64) (*Token, error) {
	return s.Store.RevokeTokenByID(ctx, id)
}
