package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
)

// listApps: GET /api/apps, paginated by id.
func (s *Server) listApps(c *gin.Context) error {
	ctx := reqCtx(c)
	p, err := page(c)
	if err != nil {
		return err
	}
	apps, err := s.svc.Apps.ListApps(ctx, p)
	if err != nil {
		return err
	}
	out := make([]appView, 0, len(apps))
	for i := range apps {
		out = append(out, newAppView(&apps[i]))
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// getApp: GET /api/apps/:id.
func (s *Server) getApp(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	app, err := s.svc.Apps.App(ctx, id)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newAppView(app))
	return nil
}

// nameParam reads the name parameter (the domain trims and validates it).
func nameParam(c *gin.Context) (string, error) {
	p, err := readParams(c)
	if err != nil {
		return "", err
	}
	return p.str("name")
}

// createApp: POST /api/apps → 201 with the bare App (schemes: []).
func (s *Server) createApp(c *gin.Context) error {
	ctx := reqCtx(c)
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	app, err := s.svc.Apps.CreateApp(ctx, name)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, newAppView(app))
	return nil
}

// updateApp: PUT /api/apps/:id renames the app.
func (s *Server) updateApp(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	app, err := s.svc.Apps.RenameApp(ctx, id, name)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newAppView(app))
	return nil
}

// destroyApp: DELETE /api/apps/:id removes the app and everything in it, objects included.
func (s *Server) destroyApp(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.svc.Apps.DestroyApp(ctx, id); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}

// listSchemes: GET /api/apps/:id/schemes, an app's schemes with their channels.
func (s *Server) listSchemes(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	schemes, err := s.svc.Apps.Schemes(ctx, id)
	if err != nil {
		return err
	}
	out := make([]schemeView, 0, len(schemes))
	for i := range schemes {
		out = append(out, newSchemeView(&schemes[i]))
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// schemeChanges reads the scheme fields a client sent.
func schemeChanges(c *gin.Context) (ch catalog.SchemeChanges, err error) {
	p, err := readParams(c)
	if err != nil {
		return ch, err
	}
	if ch.Name, err = p.optStr("name"); err != nil {
		return ch, err
	}
	if ch.NewBuildCallout, err = p.optBool("new_build_callout"); err != nil {
		return ch, err
	}
	ch.RetainedBuilds, err = p.optInt("retained_builds")
	return ch, err
}

// createScheme: POST /api/apps/:id/schemes → 201 Scheme.
func (s *Server) createScheme(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ch, err := schemeChanges(c)
	if err != nil {
		return err
	}
	sc, err := s.svc.Apps.CreateScheme(ctx, id, ch)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, newSchemeView(sc))
	return nil
}

// getScheme: GET /api/schemes/:id.
func (s *Server) getScheme(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	sc, err := s.svc.Apps.Scheme(ctx, id)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newSchemeView(sc))
	return nil
}

// updateScheme: PUT or PATCH /api/schemes/:id changes the fields sent.
func (s *Server) updateScheme(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ch, err := schemeChanges(c)
	if err != nil {
		return err
	}
	sc, err := s.svc.Apps.UpdateScheme(ctx, id, ch)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newSchemeView(sc))
	return nil
}

// deleteScheme: DELETE /api/schemes/:id, with its channels, releases and their objects.
func (s *Server) deleteScheme(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.svc.Apps.DeleteScheme(ctx, id); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}

// listChannels: GET /api/schemes/:id/channels.
func (s *Server) listChannels(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	channels, err := s.svc.Apps.Channels(ctx, id)
	if err != nil {
		return err
	}
	out := make([]channelView, 0, len(channels))
	for i := range channels {
		out = append(out, newChannelView(&channels[i]))
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// channelChanges reads the channel fields a client sent.
func channelChanges(c *gin.Context) (ch catalog.ChannelChanges, err error) {
	p, err := readParams(c)
	if err != nil {
		return ch, err
	}
	for name, dst := range map[string]**string{"name": &ch.Name, "slug": &ch.Slug, "device_type": &ch.DeviceType,
		"bundle_id": &ch.BundleID, "password": &ch.Password, "git_url": &ch.GitURL, "download_filename_type": &ch.DownloadFilenameType} {
		if *dst, err = p.optStr(name); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// createChannel: POST /api/schemes/:id/channels → 201 Channel.
func (s *Server) createChannel(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ch, err := channelChanges(c)
	if err != nil {
		return err
	}
	channel, err := s.svc.Apps.CreateChannel(ctx, id, ch)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, newChannelView(channel))
	return nil
}

// getChannel: GET /api/channels/:id.
func (s *Server) getChannel(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	cc, err := s.svc.Apps.ChannelByID(ctx, id)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newChannelView(&cc.Channel))
	return nil
}

// updateChannel: PUT or PATCH /api/channels/:id changes the fields sent (an empty password
// clears it).
func (s *Server) updateChannel(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ch, err := channelChanges(c)
	if err != nil {
		return err
	}
	channel, err := s.svc.Apps.UpdateChannel(ctx, id, ch)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newChannelView(channel))
	return nil
}

// deleteChannel: DELETE /api/channels/:id, with its releases, debug files and their objects.
func (s *Server) deleteChannel(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.svc.Apps.DeleteChannel(ctx, id); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}
