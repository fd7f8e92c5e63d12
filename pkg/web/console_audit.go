package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// auditPageSize is how many audit rows a page shows.
const auditPageSize = 50

// auditActions are offered in the action filter (it takes any action, or a prefix ending in ".").
var auditActions = []string{"release.", "release.upload", "release.update", "release.delete", "release.pin", "app.", "scheme.",
	"channel.", "retention.set", "webhook.", "token.", "member.", "user.", "device.delete", "upload_session.expire", "sign_in", "sign_out"}

type auditRowView struct {
	ID                        int64
	When, Actor, ActorKind    string
	Action, Target, TargetURL string
	Detail                    string
}

type auditAppOption struct {
	ID       int64
	Name     string
	Selected bool
}

type auditView struct {
	Rows    []auditRowView
	Apps    []auditAppOption
	Actions []string
	// The filters as given, for the form.
	Actor, Action string
	FormURL       string
	// NewerURL leads back to the newest rows, OlderURL on (empty: no more).
	NewerURL, OlderURL string
}

// consoleAudit: GET /console/audit, every actor's changes, newest first (admins), filtered by
// app (app=id), actor (actor=words of a name, or token / system) and action (action=exact, or a
// prefix ending in "."), paged by before=id.
func (h *Handler) consoleAudit(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	ctx := reqCtx(c)
	if err := h.may(c, policy.ReadAudit, policy.Installation); err != nil {
		return err
	}
	f := distribution.AuditFilter{Actor: strings.TrimSpace(c.Query("actor")), Action: strings.TrimSpace(c.Query("action")), Limit: auditPageSize + 1}
	for name, dst := range map[string]*int64{"app": &f.AppID, "before": &f.BeforeID} {
		if v := strings.TrimSpace(c.Query(name)); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return errs.Field(name, "must be a whole number")
			}
			*dst = n
		}
	}
	if len(f.Actor) > 255 || len(f.Action) > 255 {
		return errs.Invalidf("a filter is at most 255 characters")
	}
	entries, err := h.svc.People.AuditEntries(ctx, f)
	if err != nil {
		return err
	}
	apps, err := h.svc.Apps.ListApps(ctx, distribution.Page{Page: 1, PerPage: 1000})
	if err != nil {
		return err
	}
	base := h.links.Base + "/console/audit"
	v := auditView{Actor: f.Actor, Action: f.Action, Actions: auditActions, FormURL: base}
	for _, a := range apps {
		v.Apps = append(v.Apps, auditAppOption{ID: a.ID, Name: a.Name, Selected: a.ID == f.AppID})
	}
	more := len(entries) > auditPageSize
	if more {
		entries = entries[:auditPageSize]
	}
	for i := range entries {
		v.Rows = append(v.Rows, h.auditRow(&entries[i]))
	}
	q := url.Values{}
	if f.AppID > 0 {
		q.Set("app", strconv.FormatInt(f.AppID, 10))
	}
	if f.Actor != "" {
		q.Set("actor", f.Actor)
	}
	if f.Action != "" {
		q.Set("action", f.Action)
	}
	if f.BeforeID > 0 {
		v.NewerURL = base + "?" + q.Encode()
	}
	if more {
		q.Set("before", strconv.FormatInt(entries[len(entries)-1].ID, 10))
		v.OlderURL = base + "?" + q.Encode()
	}
	h.consoleRender(c, http.StatusOK, "audit", page{Title: "Audit log · Slipway", Body: v}, session, u)
	return nil
}

// auditRow is a row as the page shows it: the target's name, linked while the target is there
// (a deleted release's link shows its removal page).
func (h *Handler) auditRow(e *distribution.AuditEntry) auditRowView {
	r := auditRowView{ID: e.ID, When: h.when(e.At), Actor: e.Actor.Label(), ActorKind: e.Actor.Kind, Action: e.Action, Target: e.Target.Name}
	if r.Target == "" {
		r.Target = e.Target.Kind
	}
	id := strconv.FormatInt(e.Target.ID, 10)
	switch e.Target.Kind {
	case distribution.TargetRelease:
		if e.ChannelSlug != "" {
			r.TargetURL = h.links.Base + "/channels/" + url.PathEscape(e.ChannelSlug) + "/releases/" + id
		}
	case distribution.TargetApp, distribution.TargetScheme, distribution.TargetChannel:
		if e.AppExists {
			r.TargetURL = h.links.Base + "/console/apps/" + strconv.FormatInt(e.Target.AppID, 10)
		}
	case distribution.TargetWebhook:
		r.TargetURL = h.links.Base + "/console/webhooks/" + id
	case distribution.TargetToken:
		r.TargetURL = h.links.Base + "/console/tokens"
	case distribution.TargetUser:
		r.TargetURL = h.links.Base + "/console/users"
	}
	if e.Target.Kind == "" && e.AppExists {
		r.TargetURL = h.links.Base + "/console/apps/" + strconv.FormatInt(e.Target.AppID, 10)
	}
	if reason, ok := e.Detail["reason"].(string); ok && reason != "" {
		r.Detail = "rule: " + reason
	} else if from, ok := e.Detail["from"].(string); ok && from != "" {
		r.Detail = "was " + from
	}
	return r
}

// actingAs makes the request's context act as the console user: the policy decides what the use
// cases it calls may do from their role, and those write their audit rows (and a deleted
// release's tombstone) as theirs. It returns the new context.
func actingAs(c *gin.Context, u *distribution.User) context.Context {
	c.Request = c.Request.WithContext(distribution.WithActor(c.Request.Context(), distribution.UserActor(u)))
	return c.Request.Context()
}
