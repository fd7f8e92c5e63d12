package httpapi

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// aptFile: GET /channels/:slug/apt/*file, a Linux channel's APT repository (docs/repositories.md).
func (s *Server) aptFile(c *gin.Context) error {
	if s.cfg.RepoKey == nil {
		return errNoRepoKey()
	}
	file := strings.TrimPrefix(c.Param("file"), "/")
	if file == "key.asc" {
		return s.channelKey(c)
	}
	return errs.New(errs.NotFound, "%q is not a file of the APT repository", file)
}
