package distribution

import (
	"context"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Zealot's users and collaborators API, for admin tokens (the HTTP layer checks the scope). People
// are made on their first sign-in to the console, not by the API; the console and this API change
// them through the same functions (SetUserAccess, the store's membership calls), audited.
//
// Zealot's roles are member, developer and admin; Slipway's viewer is Zealot's member, and both
// names are taken. Slipway has no per-app roles: a collaborator (an app member) manages the app
// with the rights of their own role, so a collaborator's role is their user's, and giving a
// collaborator the developer or admin role makes a viewer a developer (as adding a member in the
// console does). It never makes anyone an admin of the installation.

// Collaborator is a member of an app.
type Collaborator struct {
	User
	AppID int64
}

// CollaboratorRole is a member's role in Zealot's terms: what they may do in the app.
func (c *Collaborator) CollaboratorRole() string {
	if c.Role == RoleViewer {
		return "member"
	}
	return c.Role
}

// tokenActor stands for an admin token in the audit log and in checks meant for people.
func tokenActor(t *Token) *User { return &User{Role: RoleAdmin, Name: "token " + t.Name} }

// userRole reads a role in either vocabulary.
func userRole(role string) (string, error) {
	switch r := strings.ToLower(strings.TrimSpace(role)); r {
	case RoleAdmin, RoleDeveloper, RoleViewer:
		return r, nil
	case "member":
		return RoleViewer, nil
	}
	return "", errs.Field("role", "must be admin, developer or member (viewer)")
}

// ListUsers returns every user.
func (s *Service) ListUsers(ctx context.Context) ([]User, error) { return s.Store.ListUsers(ctx) }

// User returns a user by id.
func (s *Service) User(ctx context.Context, id int64) (*User, error) { return s.Store.GetUser(ctx, id) }

// UserByEmail finds a user by email (errs.NotFound for a blank or unknown one, as Zealot).
func (s *Service) UserByEmail(ctx context.Context, email string) (*User, error) {
	if strings.TrimSpace(email) == "" {
		return nil, errs.New(errs.NotFound, "give the email of the user to find")
	}
	return s.Store.UserByEmail(ctx, strings.TrimSpace(email))
}

// TokenSetUserRole changes a user's role for an admin token.
func (s *Service) TokenSetUserRole(ctx context.Context, t *Token, id int64, role string) (*User, error) {
	u, err := s.Store.GetUser(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := userRole(role)
	if err != nil {
		return nil, err
	}
	return s.SetUserAccess(ctx, tokenActor(t), id, r, u.DisabledAt != nil)
}

// TokenLockUser disables (locked) or enables a user for an admin token: Zealot's lock and unlock.
func (s *Service) TokenLockUser(ctx context.Context, t *Token, id int64, locked bool) (*User, error) {
	u, err := s.Store.GetUser(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.SetUserAccess(ctx, tokenActor(t), id, u.Role, locked)
}

// TokenDeleteUser deletes a user with their sessions, memberships and tokens, audited.
func (s *Service) TokenDeleteUser(ctx context.Context, t *Token, id int64) error {
	u, err := s.Store.GetUser(ctx, id)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteUser(ctx, id); err != nil {
		return err
	}
	s.Audit(ctx, tokenActor(t), "user.delete", u.Email, map[string]any{"user_id": id, "token": t.Name})
	return nil
}

// Collaborator returns a member of an app (errs.NotFound for an unknown app, user or member).
func (s *Service) Collaborator(ctx context.Context, appID, userID int64) (*Collaborator, error) {
	if _, err := s.Store.GetApp(ctx, appID); err != nil {
		return nil, err
	}
	ok, err := s.Store.IsAppMember(ctx, appID, userID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.New(errs.NotFound, "that user is not a collaborator of this app")
	}
	u, err := s.Store.GetUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	return &Collaborator{User: *u, AppID: appID}, nil
}

// collaboratorRole reads a collaborator's role ("" is member, Zealot's default).
func collaboratorRole(role string) (string, error) {
	if strings.TrimSpace(role) == "" {
		return RoleViewer, nil
	}
	return userRole(role)
}

// AddCollaborator makes a user a member of an app for an admin token (errs.Conflict when they
// are one already), audited.
func (s *Service) AddCollaborator(ctx context.Context, t *Token, appID, userID int64, role string) (*Collaborator, error) {
	r, err := collaboratorRole(role)
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.GetApp(ctx, appID); err != nil {
		return nil, err
	}
	if err := s.Store.AddAppMemberByID(ctx, appID, userID, r != RoleViewer); err != nil {
		return nil, err
	}
	s.Audit(ctx, tokenActor(t), "member.add", "", map[string]any{"app_id": appID, "user_id": userID, "token": t.Name})
	return s.Collaborator(ctx, appID, userID)
}

// UpdateCollaborator gives a member the developer (or admin) role of an app: a viewer becomes a
// developer; member leaves the user's role as it is.
func (s *Service) UpdateCollaborator(ctx context.Context, t *Token, appID, userID int64, role string) (*Collaborator, error) {
	r, err := collaboratorRole(role)
	if err != nil {
		return nil, err
	}
	if _, err := s.Collaborator(ctx, appID, userID); err != nil {
		return nil, err
	}
	if r != RoleViewer {
		if err := s.Store.PromoteUser(ctx, userID); err != nil {
			return nil, err
		}
		s.Audit(ctx, tokenActor(t), "member.update", "", map[string]any{"app_id": appID, "user_id": userID, "role": r, "token": t.Name})
	}
	return s.Collaborator(ctx, appID, userID)
}

// RemoveCollaborator removes a member from an app for an admin token.
func (s *Service) RemoveCollaborator(ctx context.Context, t *Token, appID, userID int64) error {
	if _, err := s.Collaborator(ctx, appID, userID); err != nil {
		return err
	}
	return s.RemoveAppMember(ctx, tokenActor(t), appID, userID)
}
