package distribution

import (
	"context"
	"slices"
	"strings"
)

// Who acts. Every request carries its actor in its context: httpapi sets the token a request was
// let in with (or the anonymous actor), the console its signed-in user, each command and
// background component itself. The policy (pkg/distribution/policy) decides from it what the
// request may do; the audit log and tombstones record it.

// Actor kinds.
const (
	ActorUser      = "user"
	ActorToken     = "token"
	ActorSystem    = "system"
	ActorAnonymous = "anonymous"
	ActorTester    = "tester"
)

// Actor is who does something, with the rights the policy reads: a console user (with their
// role), an API token (by name and id, never its secret, with its scope), the system (Name:
// retention, gc, cli), or an anonymous client.
type Actor struct {
	Kind    string
	UserID  int64
	TokenID int64
	Name    string
	// Role is a console user's role (RoleAdmin, RoleDeveloper, RoleViewer), or, for a token
	// owned by one, its owner's role now (empty for a token without an owner).
	Role string
	// Scope is a token's scope as its owner's rights allow it now (ScopeAdmin, ScopeUpload).
	Scope string
	// Apps, when not empty, are the only apps a token may act on (LimitedTo); empty: any app.
	Apps []int64
	// Abilities, when not empty, are the only kinds of thing a token may do (AbilityRead,
	// AbilityUpload, AbilityDevices), within its scope; empty: all its scope allows.
	Abilities []string
	// TesterID is a tester's id: the tester signed in (ActorTester), or the tester a console
	// user is by their email (0: none).
	TesterID int64
}

// AppLimited reports whether the actor is a token limited to some apps.
func (a Actor) AppLimited() bool { return len(a.Apps) > 0 }

// LimitedTo reports whether the actor is a token limited to apps, appID among them: a token
// made for this app (and perhaps a few others), not one that reaches every app.
func (a Actor) LimitedTo(appID int64) bool {
	return appID != 0 && slices.Contains(a.Apps, appID)
}

// Reaches reports whether the actor's limits let it act on the app at all: it is not limited to
// apps, or it is limited to this one. (Whether it may take a given action is the policy's.)
func (a Actor) Reaches(appID int64) bool { return !a.AppLimited() || a.LimitedTo(appID) }

// Can reports whether the actor's abilities include ability: it is not limited to abilities, or
// ability is one of them.
func (a Actor) Can(ability string) bool {
	return len(a.Abilities) == 0 || slices.Contains(a.Abilities, ability)
}

// UserActor is a console user. Their console uploads are recorded with their upload token
// (access.Tokens.UserUploadToken); ConsoleUploader names it.
func UserActor(u *User) Actor {
	name := u.Name
	if name == "" {
		name = u.Email
	}
	return Actor{Kind: ActorUser, UserID: u.ID, Name: name, Role: u.Role}
}

// ConsoleUploader returns the user actor a uploading through the console with token t, the
// user's own upload token: the upload's session and release are t's, the decisions the user's.
func (a Actor) ConsoleUploader(t *Token) Actor {
	a.TokenID = t.ID
	return a
}

// TokenActor is an API token, with its owner (a console user, 0 for none) as the row's user, and
// the limits it was made with (the apps and abilities it is limited to).
func TokenActor(t *Token) Actor {
	return Actor{Kind: ActorToken, TokenID: t.ID, UserID: t.UserID, Name: t.Name, Scope: t.Scope, Role: t.OwnerRole,
		Apps: slices.Clone(t.Apps), Abilities: slices.Clone(t.Abilities)}
}

// TesterActor is a tester signed in with a mailed link (a tester session).
func TesterActor(t *Tester) Actor {
	name := t.Name
	if name == "" {
		name = t.Email
	}
	return Actor{Kind: ActorTester, TesterID: t.ID, Name: name}
}

// SystemActor is Slipway itself: a background component ("retention", "gc") or the CLI ("cli").
func SystemActor(component string) Actor { return Actor{Kind: ActorSystem, Name: component} }

// AnonymousActor is a client that gave no credentials.
func AnonymousActor() Actor { return Actor{Kind: ActorAnonymous, Name: "anonymous"} }

// Label is how the actor is shown: "Ada", "token ci-upload", "system (retention)".
func (a Actor) Label() string {
	switch a.Kind {
	case ActorToken:
		return "token " + a.Name
	case ActorSystem:
		return "system (" + a.Name + ")"
	case ActorTester:
		return "tester " + a.Name
	}
	return a.Name
}

type actorKey struct{}

// WithActor returns ctx carrying the actor it acts as.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorIn returns the actor ctx carries, if any.
func ActorIn(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// ActorOf returns the actor ctx carries, as the audit log records it; a context without one is
// the system's ("slipway"). (The policy treats a context without an actor as anonymous.)
func ActorOf(ctx context.Context) Actor {
	if a, ok := ActorIn(ctx); ok {
		return a
	}
	return SystemActor("slipway")
}

// WithArticle puts "a" or "an" before a word, by its first letter: "an android", "a macos".
func WithArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
