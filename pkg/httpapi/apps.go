package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
)

// listApps: GET /api/apps, paginated by id.
func (s *Server) listApps(c *gin.Context) error {
	return respond(c, http.StatusOK, page, s.svc.Apps.ListApps, each(newAppView))
}

// getApp: GET /api/apps/:id.
func (s *Server) getApp(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Apps.App, newAppView)
}

// nameParam reads the name parameter (the domain trims and validates it).
func nameParam(c *gin.Context) (string, error) {
	var req struct {
		Name string `param:"name"`
	}
	err := bind(c, &req)
	return req.Name, err
}

// createApp: POST /api/apps → 201 with the bare App (schemes: []).
func (s *Server) createApp(c *gin.Context) error {
	return respond(c, http.StatusCreated, nameParam, s.svc.Apps.CreateApp, newAppView)
}

// updateApp: PUT /api/apps/:id renames the app.
func (s *Server) updateApp(c *gin.Context) error {
	return respond2(c, http.StatusOK, pathID, nameParam, s.svc.Apps.RenameApp, newAppView)
}

// destroyApp: DELETE /api/apps/:id removes the app and everything in it, objects included.
func (s *Server) destroyApp(c *gin.Context) error {
	return respondDeleted(c, pathID, s.svc.Apps.DestroyApp)
}

// listSchemes: GET /api/apps/:id/schemes, an app's schemes with their channels.
func (s *Server) listSchemes(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Apps.Schemes, each(newSchemeView))
}

// schemeChanges reads the scheme fields a client sent.
func schemeChanges(c *gin.Context) (ch catalog.SchemeChanges, err error) {
	err = bind(c, &ch)
	return ch, err
}

// createScheme: POST /api/apps/:id/schemes → 201 Scheme.
func (s *Server) createScheme(c *gin.Context) error {
	return respond2(c, http.StatusCreated, pathID, schemeChanges, s.svc.Apps.CreateScheme, newSchemeView)
}

// getScheme: GET /api/schemes/:id.
func (s *Server) getScheme(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Apps.Scheme, newSchemeView)
}

// updateScheme: PUT or PATCH /api/schemes/:id changes the fields sent.
func (s *Server) updateScheme(c *gin.Context) error {
	return respond2(c, http.StatusOK, pathID, schemeChanges, s.svc.Apps.UpdateScheme, newSchemeView)
}

// deleteScheme: DELETE /api/schemes/:id, with its channels, releases and their objects.
func (s *Server) deleteScheme(c *gin.Context) error {
	return respondDeleted(c, pathID, s.svc.Apps.DeleteScheme)
}

// listChannels: GET /api/schemes/:id/channels.
func (s *Server) listChannels(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Apps.Channels, each(newChannelView))
}

// channelChanges reads the channel fields a client sent.
func channelChanges(c *gin.Context) (ch catalog.ChannelChanges, err error) {
	err = bind(c, &ch)
	return ch, err
}

// createChannel: POST /api/schemes/:id/channels → 201 Channel.
func (s *Server) createChannel(c *gin.Context) error {
	return respond2(c, http.StatusCreated, pathID, channelChanges, s.svc.Apps.CreateChannel, newChannelView)
}

// getChannel: GET /api/channels/:id.
func (s *Server) getChannel(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Apps.ChannelByID, func(cc *distribution.ChannelContext) channelView {
		return newChannelView(&cc.Channel)
	})
}

// updateChannel: PUT or PATCH /api/channels/:id changes the fields sent (an empty password
// clears it).
func (s *Server) updateChannel(c *gin.Context) error {
	return respond2(c, http.StatusOK, pathID, channelChanges, s.svc.Apps.UpdateChannel, newChannelView)
}

// deleteChannel: DELETE /api/channels/:id, with its releases, debug files and their objects.
func (s *Server) deleteChannel(c *gin.Context) error {
	return respondDeleted(c, pathID, s.svc.Apps.DeleteChannel)
}
