package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Zealot's users and collaborators API (distribution/members.go), for admin tokens. People are
// made by signing in to the console; POST /api/users answers 422 saying so.

// userView is Zealot's user (id, username, email, role) and Slipway's own fields.
type userView struct {
	ID          int64   `json:"id"`
	Username    string  `json:"username"`
	Email       string  `json:"email"`
	Name        string  `json:"name"`
	Role        string  `json:"role"`
	Locked      bool    `json:"locked"`
	CreatedAt   string  `json:"created_at"`
	LastLoginAt *string `json:"last_sign_in_at"`
}

// collaboratorView is Zealot's collaborator: the user's id, username and email, and their role
// in the app (member, developer or admin).
type collaboratorView struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
	Email    string `json:"email"`
	Role     string `json:"role"`
}

// username is what Zealot calls a user's short name: the name given, or the email's local part.
func username(u *distribution.User) string {
	if u.Name != "" {
		return u.Name
	}
	local, _, _ := strings.Cut(u.Email, "@")
	return local
}

func (s *Server) userView(u *distribution.User) userView {
	return userView{ID: u.ID, Username: username(u), Email: u.Email, Name: u.Name, Role: u.Role, Locked: u.DisabledAt != nil,
		CreatedAt: s.timestamp(u.CreatedAt), LastLoginAt: s.optTimestamp(u.LastLogin)}
}

func collaboratorOf(m *access.Collaborator) collaboratorView {
	return collaboratorView{ID: m.ID, Username: username(&m.User), Email: m.Email, Role: m.CollaboratorRole()}
}

// listUsers: GET /api/users.
func (s *Server) listUsers(c *gin.Context) error {
	ctx := reqCtx(c)
	users, err := s.svc.People.ListUsers(ctx)
	if err != nil {
		return err
	}
	out := make([]userView, len(users))
	for i := range users {
		out[i] = s.userView(&users[i])
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// searchUser: GET /api/users/search?email=..., one user or 404.
func (s *Server) searchUser(c *gin.Context) error {
	ctx := reqCtx(c)
	u, err := s.svc.People.UserByEmail(ctx, c.Query("email"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.userView(u))
	return nil
}

// getUser: GET /api/users/:id.
func (s *Server) getUser(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.People.User, s.userView)
}

// createUser: POST /api/users. Slipway has no passwords: people are made on their first sign-in.
func (s *Server) createUser(*gin.Context) error {
	return errs.New(errs.Invalid, "users are made when they first sign in to the console (/console); invite them to sign in, then give them a role with PUT /api/users/:id")
}

// updateUser: PUT/PATCH /api/users/:id (role). Zealot's other fields (locale, appearance,
// timezone, password) mean nothing here and are ignored.
func (s *Server) updateUser(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var req roleRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	var u *distribution.User
	if req.Role != nil {
		u, err = s.svc.People.SetUserRole(ctx, id, *req.Role)
	} else {
		u, err = s.svc.People.User(ctx, id)
	}
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.userView(u))
	return nil
}

// lockUser: POST /api/users/:id/lock disables a user (their sessions and tokens stop at once);
// DELETE /api/users/:id/unlock enables them. 202 with Zealot's body.
func (s *Server) lockUser(locked bool) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		ctx := reqCtx(c)
		id, err := pathID(c)
		if err != nil {
			return err
		}
		if _, err := s.svc.People.LockUser(ctx, id, locked); err != nil {
			return err
		}
		c.JSON(http.StatusAccepted, deleted)
		return nil
	}
}

// deleteUser: DELETE /api/users/:id.
func (s *Server) deleteUser(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.svc.People.DeleteUser(ctx, id); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}

// collaboratorIDs reads the app id from the path and the user id from the path or the params.
func collaboratorIDs(c *gin.Context, bodyUserID *int) (int64, int64, error) {
	appID, err := pathID(c)
	if err != nil {
		return 0, 0, err
	}
	raw := c.Param("user_id")
	if raw == "" {
		if bodyUserID == nil {
			return 0, 0, errs.Field("user_id", "is required: the id of the user to add")
		}
		raw = strconv.Itoa(*bodyUserID)
	}
	userID, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || userID <= 0 {
		return 0, 0, errs.Field("user_id", "must be a user's id (a positive integer)")
	}
	return appID, userID, nil
}

// roleRequest is a request that sets a role (a user's, a collaborator's).
type roleRequest struct {
	Role *string `param:"role"`
}

// getCollaborator: GET /api/apps/:id/collaborators/:user_id.
func (s *Server) getCollaborator(c *gin.Context) error {
	ctx := reqCtx(c)
	appID, userID, err := collaboratorIDs(c, nil)
	if err != nil {
		return err
	}
	m, err := s.svc.People.Collaborator(ctx, appID, userID)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, collaboratorOf(m))
	return nil
}

// addCollaborator: POST /api/apps/:id/collaborators (user_id, role) → 201; 409 when a member.
func (s *Server) addCollaborator(c *gin.Context) error {
	ctx := reqCtx(c)
	var req struct {
		roleRequest
		UserID *int `param:"user_id"`
	}
	if err := bind(c, &req); err != nil {
		return err
	}
	appID, userID, err := collaboratorIDs(c, req.UserID)
	if err != nil {
		return err
	}
	m, err := s.svc.People.AddCollaborator(ctx, appID, userID, deref(req.Role))
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, collaboratorOf(m))
	return nil
}

// updateCollaborator: PUT/PATCH /api/apps/:id/collaborators/:user_id (role).
func (s *Server) updateCollaborator(c *gin.Context) error {
	ctx := reqCtx(c)
	var req roleRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	appID, userID, err := collaboratorIDs(c, nil)
	if err != nil {
		return err
	}
	m, err := s.svc.People.UpdateCollaborator(ctx, appID, userID, deref(req.Role))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, collaboratorOf(m))
	return nil
}

// removeCollaborator: DELETE /api/apps/:id/collaborators/:user_id.
func (s *Server) removeCollaborator(c *gin.Context) error {
	ctx := reqCtx(c)
	appID, userID, err := collaboratorIDs(c, nil)
	if err != nil {
		return err
	}
	if err := s.svc.People.RemoveCollaborator(ctx, appID, userID); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
