package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/testers"
)

// Testers and groups (issue "Testers are people"): groups shared across apps, testers in them by
// email, a channel's tester_groups (PATCH /api/channels/:id), who a release went to and what they
// did, and distributing a release already uploaded.

type groupView struct {
	ID        int64  `json:"id"`
	Alias     string `json:"alias"`
	Name      string `json:"name"`
	Testers   int    `json:"testers"`
	CreatedAt string `json:"created_at"`
}

func (s *Server) groupView(g *distribution.TesterGroup) groupView {
	return groupView{ID: g.ID, Alias: g.Alias, Name: g.Name, Testers: g.Testers, CreatedAt: s.timestamp(g.CreatedAt)}
}

type testerView struct {
	ID        int64    `json:"id"`
	Email     string   `json:"email"`
	Name      string   `json:"name"`
	Groups    []string `json:"groups"`
	CreatedAt string   `json:"created_at"`
}

func (s *Server) testerView(t *distribution.Tester) testerView {
	gs := t.Groups
	if gs == nil {
		gs = []string{}
	}
	return testerView{ID: t.ID, Email: t.Email, Name: t.Name, Groups: gs, CreatedAt: s.timestamp(t.CreatedAt)}
}

type releaseTesterView struct {
	Email       string  `json:"email"`
	Name        string  `json:"name"`
	State       string  `json:"state"`
	Direct      bool    `json:"direct"`
	InvitedAt   *string `json:"invited_at"`
	OpenedAt    *string `json:"opened_at"`
	InstalledAt *string `json:"installed_at"`
	Mail        string  `json:"mail"`
}

func (s *Server) releaseTesterView(rt *distribution.ReleaseTester) releaseTesterView {
	var invited *time.Time
	if !rt.InvitedAt.IsZero() {
		invited = &rt.InvitedAt
	}
	return releaseTesterView{Email: rt.Email, Name: rt.Name, State: rt.State(), Direct: rt.Direct, InvitedAt: s.optTimestamp(invited),
		OpenedAt: s.optTimestamp(rt.OpenedAt), InstalledAt: s.optTimestamp(rt.InstalledAt), Mail: rt.Mail}
}

type distributedView struct {
	Testers  int `json:"testers"`
	Notified int `json:"notified"`
}

func newDistributedView(d distribution.Distributed) distributedView {
	return distributedView{Testers: d.Testers, Notified: d.Notified}
}

// bindGroup, bindAddTesters and bindDistribute read those requests' bodies.
func bindGroup(c *gin.Context) (testers.GroupInput, error) {
	var in testers.GroupInput
	return in, bindStrict(c, &in)
}

func bindAddTesters(c *gin.Context) (testers.AddTestersInput, error) {
	var in testers.AddTestersInput
	return in, bindStrict(c, &in)
}

func bindDistribute(c *gin.Context) (distribution.DistributeInput, error) {
	var in distribution.DistributeInput
	return in, bindStrict(c, &in)
}

// createGroup: POST /api/groups {"alias","name"} → 201.
func (s *Server) createGroup(c *gin.Context) error {
	return respond(c, http.StatusCreated, bindGroup, s.svc.Testers.CreateGroup, s.groupView)
}

// listGroups: GET /api/groups.
func (s *Server) listGroups(c *gin.Context) error {
	gs, err := s.svc.Testers.Groups(reqCtx(c))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, each(s.groupView)(gs))
	return nil
}

// deleteGroup: DELETE /api/groups/:alias.
func (s *Server) deleteGroup(c *gin.Context) error {
	return respondDeleted(c, pathParam("alias"), s.svc.Testers.DeleteGroup)
}

// addTesters: POST /api/groups/:alias/testers {"emails":[...]} → 200 with every tester now in
// the group.
func (s *Server) addTesters(c *gin.Context) error {
	return respond2(c, http.StatusOK, pathParam("alias"), bindAddTesters, s.svc.Testers.AddTesters, each(s.testerView))
}

// removeTester: DELETE /api/groups/:alias/testers/:email.
func (s *Server) removeTester(c *gin.Context) error {
	alias, email := c.Param("alias"), c.Param("email")
	if err := s.svc.Testers.RemoveTester(reqCtx(c), alias, email); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}

// listTesters: GET /api/testers?group=alias.
func (s *Server) listTesters(c *gin.Context) error {
	return respond(c, http.StatusOK, func(c *gin.Context) (string, error) { return c.Query("group"), nil },
		s.svc.Testers.ListTesters, each(s.testerView))
}

// releaseTesters: GET /api/releases/:id/testers, everyone who may install it and what they did.
func (s *Server) releaseTesters(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Testers.ReleaseTesters, each(s.releaseTesterView))
}

// distributeRelease: POST /api/releases/:id/distribute {"testers","groups","notify"}.
func (s *Server) distributeRelease(c *gin.Context) error {
	return respond2(c, http.StatusOK, pathID, bindDistribute, s.svc.Testers.Distribute, newDistributedView)
}
