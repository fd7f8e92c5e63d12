package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/lifecycle"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// retentionPolicyView is a scheme's or channel's own policy: null inherits, 0 is off.
type retentionPolicyView struct {
	KeepBuilds         *int   `json:"keep_builds"`
	MaxAgeDays         *int   `json:"max_age_days"`
	MaxBytes           *int64 `json:"max_bytes"`
	ExpiredProfileDays *int   `json:"expired_profile_days"`
}

type channelRetentionView struct {
	retentionPolicyView
	// Effective is what applies: the channel's, else the scheme's, else the server's defaults.
	Effective distribution.RetentionRules `json:"effective"`
}

type retentionVictimView struct {
	ReleaseID int64  `json:"release_id"`
	Version   int    `json:"version"`
	CreatedAt string `json:"created_at"`
	Size      int64  `json:"size"`
	Reason    string `json:"reason"`
}

type retentionPlanView struct {
	ChannelID int64                       `json:"channel_id"`
	Rules     distribution.RetentionRules `json:"rules"`
	Releases  []retentionVictimView       `json:"releases"`
	Bytes     int64                       `json:"bytes"`
}

func policyView(p *distribution.RetentionPolicy) retentionPolicyView {
	return retentionPolicyView{KeepBuilds: p.KeepBuilds, MaxAgeDays: p.MaxAgeDays, MaxBytes: p.MaxBytes, ExpiredProfileDays: p.ExpiredProfileDays}
}

func (s *Server) planView(p *lifecycle.RetentionPlan) retentionPlanView {
	v := retentionPlanView{ChannelID: p.ChannelID, Rules: p.Rules, Releases: []retentionVictimView{}}
	for _, r := range p.Victims {
		v.Releases = append(v.Releases, retentionVictimView{ReleaseID: r.ID, Version: r.Version, CreatedAt: s.timestamp(r.CreatedAt), Size: r.Size, Reason: r.Reason})
		v.Bytes += r.Size
	}
	return v
}

// readPolicy reads a whole policy from the body: a field that is absent, null or "" inherits. It
// reads types only; what a policy may hold is checked once, by the domain.
func readPolicy(c *gin.Context) (*distribution.RetentionPolicy, error) {
	var pol distribution.RetentionPolicy
	if err := bindStrict(c, &pol); err != nil {
		return nil, err
	}
	return &pol, nil
}

// nullableInt returns an integer parameter, nil when absent, null or "".
func (p *params) nullableInt(name string) (*int64, error) {
	v, ok := p.values[name]
	if !ok || v == nil {
		return nil, nil
	}
	var raw string
	switch v := v.(type) {
	case string:
		raw = strings.TrimSpace(v)
	case json.Number:
		raw = v.String()
	default:
		return nil, errs.Field(name, "must be a whole number, or null to inherit")
	}
	if raw == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return nil, errs.Field(name, "must be a whole number, or null to inherit")
	}
	return &n, nil
}

// getSchemeRetention: GET /api/schemes/:id/retention.
func (s *Server) getSchemeRetention(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Retention.SchemeRetention, policyView)
}

// setSchemeRetention: PUT /api/schemes/:id/retention replaces the scheme's policy.
func (s *Server) setSchemeRetention(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, err := readPolicy(c)
	if err != nil {
		return err
	}
	if err := s.svc.Retention.SetSchemeRetention(ctx, id, p); err != nil {
		return err
	}
	return s.getSchemeRetention(c)
}

// getChannelRetention: GET /api/channels/:id/retention.
func (s *Server) getChannelRetention(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, eff, err := s.svc.Retention.ChannelRetention(ctx, id)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, channelRetentionView{retentionPolicyView: policyView(p), Effective: eff})
	return nil
}

// setChannelRetention: PUT /api/channels/:id/retention replaces the channel's policy.
func (s *Server) setChannelRetention(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, err := readPolicy(c)
	if err != nil {
		return err
	}
	if err := s.svc.Retention.SetChannelRetention(ctx, id, p); err != nil {
		return err
	}
	return s.getChannelRetention(c)
}

// planChannelRetention: GET /api/channels/:id/retention/plan shows what the policy deletes now;
// POST with a policy shows what that policy would delete. Nothing is deleted.
func (s *Server) planChannelRetention(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var proposed *distribution.RetentionPolicy
	if c.Request.Method == http.MethodPost {
		if proposed, err = readPolicy(c); err != nil {
			return err
		}
	}
	plan, err := s.svc.Retention.PlanChannelRetention(ctx, id, proposed)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.planView(plan))
	return nil
}

// planAllRetention: GET /api/retention/plan lists what retention deletes now, channel by channel.
func (s *Server) planAllRetention(c *gin.Context) error {
	ctx := reqCtx(c)
	plans, err := s.svc.Retention.PlanAllRetention(ctx)
	if err != nil {
		return err
	}
	out := make([]retentionPlanView, 0, len(plans))
	for i := range plans {
		out = append(out, s.planView(&plans[i]))
	}
	c.JSON(http.StatusOK, out)
	return nil
}
