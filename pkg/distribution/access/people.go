package access

import (
	"context"
	"log/slog"
	"strings"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Zealot's users and collaborators API, for admin tokens, and the console's users page. People
// are made on their first sign-in to the console, not by the API; the console and this API change
// them through the same functions (SetUserAccess, the store's membership calls), audited.
//
// Zealot's roles are member, developer and admin; Slipway's viewer is Zealot's member, and both
// names are taken. Slipway has no per-app roles: a collaborator (an app member) manages the app
// with the rights of their own role, so a collaborator's role is their user's, and giving a
// collaborator the developer or admin role makes a viewer a developer (as adding a member in the
// console does). It never makes anyone an admin of the installation.

// PeopleStore keeps users, app memberships and the audit log.
type PeopleStore interface {
	ListUsers(ctx context.Context) ([]distribution.User, error)
	GetUser(ctx context.Context, id int64) (*distribution.User, error)
	UserByEmail(ctx context.Context, email string) (*distribution.User, error)
	// SetUserAccess sets a user's role and disables (ending their sessions) or enables them.
	SetUserAccess(ctx context.Context, id int64, role string, disabled bool) (*distribution.User, error)
	PromoteUser(ctx context.Context, id int64) error
	DeleteUser(ctx context.Context, id int64) error
	IsAppMember(ctx context.Context, appID, userID int64) (bool, error)
	AppMembers(ctx context.Context, appID int64) ([]distribution.User, error)
	// AddAppMemberByID adds a user to an app (errs.Conflict when already one), making a viewer a
	// developer when promote is set.
	AddAppMemberByID(ctx context.Context, appID, userID int64, promote bool) error
	RemoveAppMember(ctx context.Context, appID, userID int64) error
	// GetApp reads an app (a membership needs one).
	GetApp(ctx context.Context, id int64) (*distribution.App, error)
	distribution.AuditStore
}

// People runs the use cases of users and app members, for admins in the console and for admin
// tokens (Zealot's users and collaborators API), and keeps the audit log every actor writes.
type People struct {
	Store PeopleStore
	Log   *slog.Logger
	// AuditLog writes the rows (distribution.AuditLog.Record, the one writer).
	AuditLog *distribution.AuditLog
	// Policy decides who may read and change people and the audit log.
	Policy *policy.Policy
}

// Collaborator is a member of an app.
type Collaborator struct {
	distribution.User
	AppID int64
}

// CollaboratorRole is a member's role in Zealot's terms: what they may do in the app.
func (c *Collaborator) CollaboratorRole() string {
	if c.Role == distribution.RoleViewer {
		return "member"
	}
	return c.Role
}

// userRole reads a role in either vocabulary.
func userRole(role string) (string, error) {
	switch r := strings.ToLower(strings.TrimSpace(role)); r {
	case distribution.RoleAdmin, distribution.RoleDeveloper, distribution.RoleViewer:
		return r, nil
	case "member":
		return distribution.RoleViewer, nil
	}
	return "", errs.Field("role", "must be admin, developer or member (viewer)")
}

// may checks the context's actor may manage people.
func (p *People) may(ctx context.Context) error {
	return p.Policy.Authorize(ctx, policy.ManagePeople, policy.Installation)
}

// ListUsers returns every user.
func (p *People) ListUsers(ctx context.Context) ([]distribution.User, error) {
	if err := p.may(ctx); err != nil {
		return nil, err
	}
	return p.Store.ListUsers(ctx)
}

// User returns a user by id.
func (p *People) User(ctx context.Context, id int64) (*distribution.User, error) {
	if err := p.may(ctx); err != nil {
		return nil, err
	}
	return p.Store.GetUser(ctx, id)
}

// UserByEmail finds a user by email (errs.NotFound for a blank or unknown one, as Zealot).
func (p *People) UserByEmail(ctx context.Context, email string) (*distribution.User, error) {
	if err := p.may(ctx); err != nil {
		return nil, err
	}
	if strings.TrimSpace(email) == "" {
		return nil, errs.New(errs.NotFound, "give the email of the user to find")
	}
	return p.Store.UserByEmail(ctx, strings.TrimSpace(email))
}

// SetUserRole changes a user's role (in either vocabulary), leaving them enabled or disabled.
func (p *People) SetUserRole(ctx context.Context, id int64, role string) (*distribution.User, error) {
	if err := p.may(ctx); err != nil {
		return nil, err
	}
	u, err := p.Store.GetUser(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := userRole(role)
	if err != nil {
		return nil, err
	}
	return p.SetUserAccess(ctx, id, r, u.DisabledAt != nil)
}

// LockUser disables (locked) or enables a user: Zealot's lock and unlock.
func (p *People) LockUser(ctx context.Context, id int64, locked bool) (*distribution.User, error) {
	if err := p.may(ctx); err != nil {
		return nil, err
	}
	u, err := p.Store.GetUser(ctx, id)
	if err != nil {
		return nil, err
	}
	return p.SetUserAccess(ctx, id, u.Role, locked)
}

// DeleteUser deletes a user with their sessions, memberships and tokens, audited.
func (p *People) DeleteUser(ctx context.Context, id int64) error {
	if err := p.may(ctx); err != nil {
		return err
	}
	u, err := p.Store.GetUser(ctx, id)
	if err != nil {
		return err
	}
	if err := p.Store.DeleteUser(ctx, id); err != nil {
		return err
	}
	p.audit(ctx, "user.delete", u.Email, map[string]any{"user_id": id})
	return nil
}

// Collaborator returns a member of an app (errs.NotFound for an unknown app, user or member).
func (p *People) Collaborator(ctx context.Context, appID, userID int64) (*Collaborator, error) {
	if err := p.may(ctx); err != nil {
		return nil, err
	}
	if _, err := p.Store.GetApp(ctx, appID); err != nil {
		return nil, err
	}
	ok, err := p.Store.IsAppMember(ctx, appID, userID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.New(errs.NotFound, "that user is not a collaborator of this app")
	}
	u, err := p.Store.GetUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	return &Collaborator{User: *u, AppID: appID}, nil
}

// collaboratorRole reads a collaborator's role ("" is member, Zealot's default).
func collaboratorRole(role string) (string, error) {
	if strings.TrimSpace(role) == "" {
		return distribution.RoleViewer, nil
	}
	return userRole(role)
}

// AddCollaborator makes a user a member of an app (errs.Conflict when they are one already),
// audited.
func (p *People) AddCollaborator(ctx context.Context, appID, userID int64, role string) (*Collaborator, error) {
	if err := p.may(ctx); err != nil {
		return nil, err
	}
	r, err := collaboratorRole(role)
	if err != nil {
		return nil, err
	}
	if _, err := p.Store.GetApp(ctx, appID); err != nil {
		return nil, err
	}
	if err := p.Store.AddAppMemberByID(ctx, appID, userID, r != distribution.RoleViewer); err != nil {
		return nil, err
	}
	p.audit(ctx, "member.add", "", map[string]any{"app_id": appID, "user_id": userID})
	return p.Collaborator(ctx, appID, userID)
}

// UpdateCollaborator gives a member the developer (or admin) role of an app: a viewer becomes a
// developer; member leaves the user's role as it is.
func (p *People) UpdateCollaborator(ctx context.Context, appID, userID int64, role string) (*Collaborator, error) {
	r, err := collaboratorRole(role)
	if err != nil {
		return nil, err
	}
	if _, err := p.Collaborator(ctx, appID, userID); err != nil {
		return nil, err
	}
	if r != distribution.RoleViewer {
		if err := p.Store.PromoteUser(ctx, userID); err != nil {
			return nil, err
		}
		p.audit(ctx, "member.update", "", map[string]any{"app_id": appID, "user_id": userID, "role": r})
	}
	return p.Collaborator(ctx, appID, userID)
}

// RemoveCollaborator removes a member from an app.
func (p *People) RemoveCollaborator(ctx context.Context, appID, userID int64) error {
	if _, err := p.Collaborator(ctx, appID, userID); err != nil {
		return err
	}
	return p.RemoveAppMember(ctx, appID, userID)
}

// SetUserAccess changes a user's role and disables or enables them. Disabling ends the user's
// sessions on every replica and stops their API tokens at once. Nobody changes their own access
// (a person, or a token acting for them), so an installation is never left without an admin.
func (p *People) SetUserAccess(ctx context.Context, id int64, role string, disabled bool) (*distribution.User, error) {
	if err := p.may(ctx); err != nil {
		return nil, err
	}
	switch role {
	case distribution.RoleAdmin, distribution.RoleDeveloper, distribution.RoleViewer:
	default:
		return nil, errs.Field("role", "must be admin, developer or viewer")
	}
	if a := distribution.ActorOf(ctx); a.UserID != 0 && id == a.UserID {
		return nil, errs.New(errs.Forbidden, "you cannot change your own role or disable yourself; ask another admin")
	}
	u, err := p.Store.SetUserAccess(ctx, id, role, disabled)
	if err != nil {
		return nil, err
	}
	p.audit(ctx, "user.update", u.Email, map[string]any{"user_id": id, "role": role, "disabled": disabled})
	return u, nil
}

// AppMembers lists an app's members (whoever may read the app may see who manages it).
func (p *People) AppMembers(ctx context.Context, appID int64) ([]distribution.User, error) {
	if err := p.Policy.Authorize(ctx, policy.ReadCatalog, policy.OnApp(appID)); err != nil {
		return nil, err
	}
	return p.Store.AppMembers(ctx, appID)
}

// RemoveAppMember removes a user from an app, audited. Their role is left as it is.
func (p *People) RemoveAppMember(ctx context.Context, appID, userID int64) error {
	if err := p.may(ctx); err != nil {
		return err
	}
	if err := p.Store.RemoveAppMember(ctx, appID, userID); err != nil {
		return err
	}
	p.audit(ctx, "member.remove", "", map[string]any{"app_id": appID, "user_id": userID})
	return nil
}

// AuditEntries returns audit rows, newest first, as the filter selects them.
func (p *People) AuditEntries(ctx context.Context, f distribution.AuditFilter) ([]distribution.AuditEntry, error) {
	if err := p.Policy.Authorize(ctx, policy.ReadAudit, policy.Installation); err != nil {
		return nil, err
	}
	return p.Store.AuditEntries(ctx, f)
}

// audit records a change to people as the context's actor. target is the name of what changed;
// detail's app_id, when there is one, files the row under that app.
func (p *People) audit(ctx context.Context, action, target string, detail map[string]any) {
	t := distribution.AuditTarget{Name: target}
	if id, ok := detail["app_id"].(int64); ok {
		t.AppID = id
	}
	p.AuditLog.Record(ctx, action, t, detail)
}
