package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
)

// debugFileView is a Debug file (api.md).
type debugFileView struct {
	ID             int64               `json:"id"`
	AppName        string              `json:"app_name"`
	DeviceType     string              `json:"device_type"`
	ReleaseVersion string              `json:"release_version"`
	BuildVersion   string              `json:"build_version"`
	FileURL        string              `json:"file_url"`
	Metadata       []debugMetadataView `json:"metadata"`
}

type debugMetadataView struct {
	ID          int64  `json:"id"`
	DebugFileID int64  `json:"debug_file_id"`
	UUID        string `json:"uuid"`
	Type        string `json:"type"`
	Object      string `json:"object"`
	Data        any    `json:"data"`
	Size        int64  `json:"size"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

func (s *Server) debugFileView(d *distribution.DebugFile) debugFileView {
	v := debugFileView{ID: d.ID, AppName: d.AppName, DeviceType: d.DeviceType, ReleaseVersion: d.ReleaseVersion,
		BuildVersion: d.BuildVersion, FileURL: s.links.DebugFile(d.ID),
		Metadata: make([]debugMetadataView, 0, len(d.Metadata))}
	for _, m := range d.Metadata {
		v.Metadata = append(v.Metadata, debugMetadataView{ID: m.ID, DebugFileID: m.DebugFileID, UUID: m.UUID, Type: m.Type,
			Object: m.Object, Data: rawJSON(m.Data), Size: m.Size, CreatedAt: s.timestamp(m.CreatedAt), UpdatedAt: s.timestamp(m.UpdatedAt)})
	}
	return v
}

// uploadDebugFile: POST /api/debug_files/upload → 201 Debug file.
func (s *Server) uploadDebugFile(c *gin.Context) error {
	return s.receiveDebugFile(c, 0)
}

// updateDebugFile: PUT /api/debug_files/:id replaces the archive and its metadata → 200.
func (s *Server) updateDebugFile(c *gin.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	return s.receiveDebugFile(c, id)
}

// receiveDebugFile streams a debug archive and records it: a new debug file (id 0) or a
// replacement of debug file id.
func (s *Server) receiveDebugFile(c *gin.Context, id int64) error {
	ctx := reqCtx(c)
	up, err := s.readUpload(c, uploads.DebugFilePrefix)
	if err != nil {
		return err
	}
	form := uploads.DebugFileForm{ChannelKey: up.fields["channel_key"], ReleaseVersion: up.fields["release_version"], BuildVersion: up.fields["build_version"]}
	if form.ChannelKey == "" {
		form.ChannelKey = c.Query("channel_key")
	}
	var df *distribution.DebugFile
	status := http.StatusCreated
	if id == 0 {
		df, err = s.svc.DebugFiles.UploadDebugFile(ctx, up.file, form)
	} else {
		df, err = s.svc.DebugFiles.ReplaceDebugFile(ctx, id, up.file, form)
		status = http.StatusOK
	}
	if err != nil {
		return err
	}
	c.JSON(status, s.debugFileView(df))
	return nil
}

func (s *Server) debugFileList(c *gin.Context, files []distribution.DebugFile) {
	out := make([]debugFileView, 0, len(files))
	for i := range files {
		out = append(out, s.debugFileView(&files[i]))
	}
	c.JSON(http.StatusOK, out)
}

// listDebugFiles: GET /api/debug_files, the channel's app's debug files of its device type,
// newest first, paginated.
func (s *Server) listDebugFiles(c *gin.Context) error {
	ctx := reqCtx(c)
	cc, err := s.channelFromQuery(c)
	if err != nil {
		return err
	}
	p, err := page(c)
	if err != nil {
		return err
	}
	files, err := s.svc.DebugFiles.DebugFiles(ctx, cc, p)
	if err != nil {
		return err
	}
	s.debugFileList(c, files)
	return nil
}

// debugFileParams reads the path id and the channel_key of get and delete.
func (s *Server) debugFileParams(c *gin.Context) (int64, string, error) {
	id, err := pathID(c)
	if err != nil {
		return 0, "", err
	}
	var req struct {
		ChannelKey string `param:"channel_key"`
	}
	err = bind(c, &req)
	return id, req.ChannelKey, err
}

// getDebugFile: GET /api/debug_files/:id (token, channel_key).
func (s *Server) getDebugFile(c *gin.Context) error {
	ctx := reqCtx(c)
	id, key, err := s.debugFileParams(c)
	if err != nil {
		return err
	}
	df, err := s.svc.DebugFiles.ReadDebugFile(ctx, id, key)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.debugFileView(df))
	return nil
}

// deleteDebugFile: DELETE /api/debug_files/:id → {"mesage": "OK"}; the object is deleted too.
func (s *Server) deleteDebugFile(c *gin.Context) error {
	ctx := reqCtx(c)
	id, key, err := s.debugFileParams(c)
	if err != nil {
		return err
	}
	if err := s.svc.DebugFiles.DeleteDebugFile(ctx, id, key); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}

// downloadDebugFileByVersion: GET /api/debug_files/download → 302 to the archive, 404 when none.
func (s *Server) downloadDebugFileByVersion(c *gin.Context) error {
	ctx := reqCtx(c)
	cc, err := s.channelFromQuery(c)
	if err != nil {
		return err
	}
	df, err := s.svc.DebugFiles.FindDebugFileForDownload(ctx, cc, strings.TrimSpace(c.Query("release_version")),
		strings.TrimSpace(c.Query("build_version")), strings.TrimSpace(c.Query("order")))
	if err != nil {
		return err
	}
	return s.redirectToObject(c, df.ObjectKey, df.Filename, "application/zip", false) // symbols are never on the CDN
}

// downloadDebugFile: GET /download/debug_files/:id (a debug file's file_url) → 302 to the archive.
func (s *Server) downloadDebugFile(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	df, err := s.svc.DebugFiles.DebugFileToDownload(ctx, id)
	if err != nil {
		return err
	}
	return s.redirectToObject(c, df.ObjectKey, df.Filename, "application/zip", false) // symbols are never on the CDN
}

// debugFileExistsVersion: GET /api/debug_files/exists/version (channel_key, release_version,
// build_version) → the Debug file of that version, 404 when none.
func (s *Server) debugFileExistsVersion(c *gin.Context) error {
	ctx := reqCtx(c)
	cc, err := s.channelFromQuery(c)
	if err != nil {
		return err
	}
	df, err := s.svc.DebugFiles.DebugFileByVersion(ctx, cc, c.Query("release_version"), c.Query("build_version"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.debugFileView(df))
	return nil
}

// debugFileExistsBinary: GET /api/debug_files/exists/binary (checksum: the archive's MD5, as
// Zealot computes it, or its SHA-256) → the Debug file, 404 when none.
func (s *Server) debugFileExistsBinary(c *gin.Context) error {
	ctx := reqCtx(c)
	df, err := s.svc.DebugFiles.DebugFileByChecksum(ctx, c.Query("checksum"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.debugFileView(df))
	return nil
}

// debugFileExistsUUID: GET /api/debug_files/exists/uuid (uuid: a Mach-O UUID or a ProGuard
// mapping's UUID) → the Debug file holding it, 404 when none.
func (s *Server) debugFileExistsUUID(c *gin.Context) error {
	ctx := reqCtx(c)
	df, err := s.svc.DebugFiles.DebugFileByUUID(ctx, c.Query("uuid"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.debugFileView(df))
	return nil
}
