// Package access says who may do what: API tokens (Tokens), people signing in to the console and
// their sessions and login links (Logins), users, app members and the audit log (People), and the
// passwords of protected channels (Passwords).
package access

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// TokenStore keeps API tokens (only their hashes). Every token made or revoked is written to the
// audit log with it, in one transaction.
type TokenStore interface {
	// NewToken makes a token with an owner (or none), audited as made by in.By.
	NewToken(ctx context.Context, in distribution.NewToken) (string, *distribution.Token, error)
	// Authenticate returns the active token matching secret, with the rights its owner has now,
	// or errs.Unauthenticated (also for a token whose owner is disabled or deleted).
	Authenticate(ctx context.Context, secret string) (*distribution.Token, error)
	ListTokens(ctx context.Context) ([]distribution.Token, error)
	// RevokeToken and RevokeTokenByID revoke a token, audited as the context's actor or by.
	RevokeToken(ctx context.Context, name string) error
	RevokeTokenByID(ctx context.Context, id int64, by distribution.Actor) (*distribution.Token, error)
	// AppIDsOf resolves apps named by id or by name to their ids (errs.Field "apps" for one that
	// does not exist or a name several apps share).
	AppIDsOf(ctx context.Context, refs []string) ([]int64, error)
	// UserUploadToken returns the token a user's console uploads are recorded with (made on first
	// use; its secret is never shown).
	UserUploadToken(ctx context.Context, userID int64) (*distribution.Token, error)
}

// Tokens runs the use cases of API tokens.
type Tokens struct {
	Store TokenStore
	// Policy decides who may list, make and revoke tokens.
	Policy *policy.Policy
}

// Authenticate returns the active token matching secret, with the scope its owner's rights allow
// now: errs.Unauthenticated for a missing, wrong or revoked token. What the token may do is the
// policy's to say, once the request carries it (distribution.TokenActor).
func (t *Tokens) Authenticate(ctx context.Context, secret string) (*distribution.Token, error) {
	if secret == "" {
		return nil, errs.New(errs.Unauthenticated, "an API token is required: send it as \"Authorization: Token <token>\" or a token parameter")
	}
	return t.Store.Authenticate(ctx, secret)
}

// TokenRequest is a token to make, as its maker asks for it.
type TokenRequest struct {
	// Name is unique among active tokens; Scope is upload (when empty) or admin.
	Name  string `param:"name"`
	Scope string `param:"scope"`
	// Apps limits the token to these apps, each named by its id or its name; empty: every app.
	Apps []string `param:"apps"`
	// Abilities limits the token to these abilities (distribution.Abilities); empty: all its
	// scope allows.
	Abilities []string `param:"abilities"`
	// Expires, when set, is when the token stops working; it must be in the future.
	Expires *time.Time
}

// CreateToken makes a token with a name (unique among active tokens) and a scope, and returns
// its secret, which is shown only now. The token belongs to the context actor's owner: a console
// user's is theirs, a token's belongs to that token's owner (so it dies with them, and its rights
// follow theirs), the command line's to nobody.
func (t *Tokens) CreateToken(ctx context.Context, name, scope string) (string, *distribution.Token, error) {
	return t.MakeToken(ctx, TokenRequest{Name: name, Scope: scope})
}

// CreateTokenUntil is CreateToken for a token that stops working at expires, which must be in
// the future (`slipway token create --expires`).
func (t *Tokens) CreateTokenUntil(ctx context.Context, name, scope string, expires time.Time) (string, *distribution.Token, error) {
	return t.MakeToken(ctx, TokenRequest{Name: name, Scope: scope, Expires: &expires})
}

// MakeToken makes the token req asks for (see CreateToken), limited to its apps and abilities
// when it names some. The policy keeps the new token within what its maker may do
// (policy.Mint): a token limited to apps or abilities makes none that reaches further.
func (t *Tokens) MakeToken(ctx context.Context, req TokenRequest) (string, *distribution.Token, error) {
	if err := t.Policy.Authorize(ctx, policy.ManageTokens, policy.Installation); err != nil {
		return "", nil, err
	}
	name, scope, err := CheckToken(req.Name, req.Scope)
	if err != nil {
		return "", nil, err
	}
	if req.Expires != nil && !req.Expires.After(time.Now()) {
		return "", nil, errs.Field("expires", "must be in the future")
	}
	abilities, err := CheckAbilities(req.Abilities)
	if err != nil {
		return "", nil, err
	}
	var apps []int64
	if refs := nonBlank(req.Apps); len(refs) > 0 {
		if len(refs) > 100 {
			return "", nil, errs.Field("apps", "at most 100 apps")
		}
		if apps, err = t.Store.AppIDsOf(ctx, refs); err != nil {
			return "", nil, err
		}
	}
	by := distribution.ActorOf(ctx)
	if err := policy.Mint(by, scope, apps, abilities); err != nil {
		return "", nil, err
	}
	return t.Store.NewToken(ctx, distribution.NewToken{Name: name, Scope: scope, UserID: by.UserID, ExpiresAt: req.Expires,
		Apps: apps, Abilities: abilities, By: by})
}

// CheckAbilities validates a new token's abilities (each one of distribution.Abilities, also
// given comma-separated), without repeats, in the order distribution.Abilities lists them.
func CheckAbilities(in []string) ([]string, error) {
	var given []string
	for _, s := range in {
		given = append(given, nonBlank(strings.Split(s, ","))...)
	}
	var out []string
	for _, ab := range distribution.Abilities {
		if slices.Contains(given, ab) {
			out = append(out, ab)
		}
	}
	for _, g := range given {
		if !slices.Contains(distribution.Abilities, g) {
			return nil, errs.Field("abilities", "unknown ability %q: want %s", g, strings.Join(distribution.Abilities, ", "))
		}
	}
	return out, nil
}

// nonBlank returns xs trimmed, without the blank ones.
func nonBlank(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// CheckToken validates a new token's name and scope (upload when empty).
func CheckToken(name, scope string) (string, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > 255 {
		return "", "", errs.Field("name", "must be 1 to 255 characters")
	}
	scope = strings.TrimSpace(scope)
	if scope == "" {
		scope = distribution.ScopeUpload
	}
	if scope != distribution.ScopeUpload && scope != distribution.ScopeAdmin {
		return "", "", errs.Field("scope", "must be upload or admin")
	}
	return name, scope, nil
}

// Tokens lists every token, active ones first, newest first. Secrets are never stored, so never
// listed.
func (t *Tokens) Tokens(ctx context.Context) ([]distribution.Token, error) {
	if err := t.Policy.Authorize(ctx, policy.ManageTokens, policy.Installation); err != nil {
		return nil, err
	}
	return t.Store.ListTokens(ctx)
}

// RevokeToken revokes the active token with this name (the CLI), audited as the context's actor.
func (t *Tokens) RevokeToken(ctx context.Context, name string) error {
	if err := t.Policy.Authorize(ctx, policy.ManageTokens, policy.Installation); err != nil {
		return err
	}
	return t.Store.RevokeToken(ctx, strings.TrimSpace(name))
}

// RevokeTokenByID revokes an active token by id, audited as the context's actor (the token of
// the request, or the console's user).
func (t *Tokens) RevokeTokenByID(ctx context.Context, id int64) (*distribution.Token, error) {
	if err := t.Policy.Authorize(ctx, policy.ManageTokens, policy.Installation); err != nil {
		return nil, err
	}
	return t.Store.RevokeTokenByID(ctx, id, distribution.ActorOf(ctx))
}

// UserUploadToken returns the token a user's console uploads are recorded with (made on first
// use, its secret never shown): the console acts with it for the user's uploads.
func (t *Tokens) UserUploadToken(ctx context.Context, userID int64) (*distribution.Token, error) {
	return t.Store.UserUploadToken(ctx, userID)
}
