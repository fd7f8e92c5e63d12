package web

import (
	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution/policy"
)

// grants are what the signed-in person may do on a page, as the policy answers for the request's
// actor: the pages show a form only to whoever the use case behind it would let through (it asks
// again; a page never decides on its own).
type grants struct {
	// On the page's app (or the installation, for pages of none).
	ManageApp, DeleteApp, PinRelease, RotateFeedToken, ManageWebhooks, ConfigureSigning bool
	// Upload: into the page's app, or (on the installation) a build that makes its app.
	Upload bool
	// InvitePeople: invite colleagues to the page's app.
	InvitePeople bool
	// On the installation.
	CreateApp, ManagePeople, ManageTokens, ReadAudit, ReadDevices, ManageDevices bool
	// ReadTesters and ManageTesters: the Testers page, and its forms.
	ReadTesters, ManageTesters bool
}

// grants asks the policy what the request's actor may do on an app (0: on the installation).
func (h *Handler) grants(c *gin.Context, appID int64) grants {
	ctx, p := reqCtx(c), h.svc.Policy
	app, inst := policy.OnApp(appID), policy.Installation
	return grants{
		ManageApp:        appID != 0 && p.Allowed(ctx, policy.ManageApp, app),
		DeleteApp:        appID != 0 && p.Allowed(ctx, policy.DeleteApp, app),
		PinRelease:       appID != 0 && p.Allowed(ctx, policy.PinRelease, app),
		RotateFeedToken:  appID != 0 && p.Allowed(ctx, policy.RotateFeedToken, app),
		ManageWebhooks:   p.Allowed(ctx, policy.ManageWebhooks, app),
		ConfigureSigning: appID != 0 && p.Allowed(ctx, policy.ConfigureSigning, app),
		Upload:           p.Allowed(ctx, policy.Upload, app),
		InvitePeople:     appID != 0 && p.Allowed(ctx, policy.InvitePeople, app),
		CreateApp:        p.Allowed(ctx, policy.CreateApp, inst),
		ManagePeople:     p.Allowed(ctx, policy.ManagePeople, inst),
		ManageTokens:     p.Allowed(ctx, policy.ManageTokens, inst),
		ReadAudit:        p.Allowed(ctx, policy.ReadAudit, inst),
		ReadDevices:      p.Allowed(ctx, policy.ReadDevices, inst),
		ManageDevices:    p.Allowed(ctx, policy.ManageDevices, inst),
		ReadTesters:      p.Allowed(ctx, policy.ReadTesters, inst),
		ManageTesters:    p.Allowed(ctx, policy.ManageTesters, inst),
	}
}

// may asks the policy whether the request's actor may take act on res: a form refuses before it
// reads its fields, so that someone who may not act learns nothing from the form's checks.
func (h *Handler) may(c *gin.Context, act policy.Action, res policy.Resource) error {
	return h.svc.Policy.Authorize(reqCtx(c), act, res)
}
