package httpapi

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// listApps: GET /api/apps, paginated by id.
func (s *Server) listApps(c *gin.Context) {
	p, err := page(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	apps, err := s.db.ListApps(c, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]appView, 0, len(apps))
	for i := range apps {
		out = append(out, newAppView(&apps[i]))
	}
	c.JSON(http.StatusOK, out)
}

// getApp: GET /api/apps/:id.
func (s *Server) getApp(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	app, err := s.db.GetApp(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, newAppView(app))
}

// nameParam reads and validates the name parameter: trimmed, required, at most 255 characters.
func nameParam(c *gin.Context) (string, error) {
	p, err := readParams(c)
	if err != nil {
		return "", err
	}
	name, err := p.str("name")
	if err != nil {
		return "", err
	}
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errs.Field("name", "can't be blank")
	case utf8.RuneCountInString(name) > 255 || !utf8.ValidString(name):
		return "", errs.Field("name", "must be valid text of at most 255 characters")
	}
	return name, nil
}

// createApp: POST /api/apps → 201 with the bare App (schemes: []).
func (s *Server) createApp(c *gin.Context) {
	name, err := nameParam(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	app, err := s.db.CreateApp(c, name)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, newAppView(app))
}

// updateApp: PUT /api/apps/:id renames the app.
func (s *Server) updateApp(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	name, err := nameParam(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	app, err := s.db.RenameApp(c, id, name)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, newAppView(app))
}

// destroyApp: DELETE /api/apps/:id removes the app and everything in it, objects included.
func (s *Server) destroyApp(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.svc.DestroyApp(c, id); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, deleted)
}

// deleted is the body of successful deletions, spelled as the specification spells it.
var deleted = gin.H{"mesage": "OK"}
