package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
)

// healthz: the process is alive (liveness). It touches no dependency, so a database outage does
// not make Kubernetes restart healthy replicas.
func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz: the database and object storage answer (readiness).
func (s *Server) readyz(c *gin.Context) {
	ctx := reqCtx(c)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	checks := gin.H{"database": "ok", "storage": "ok"}
	status := http.StatusOK
	dbErr, storageErr := s.svc.ReadinessCheck(ctx)
	if dbErr != nil {
		checks["database"], status = "unavailable", http.StatusServiceUnavailable
	}
	if storageErr != nil {
		checks["storage"], status = "unavailable", http.StatusServiceUnavailable
	}
	if status != http.StatusOK {
		c.Header("Retry-After", "5")
		c.JSON(status, gin.H{"error": "not ready", "checks": checks})
		return
	}
	c.JSON(status, gin.H{"status": "ok", "checks": checks})
}

// version: GET /api/version.
func (s *Server) version(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"version": buildinfo.Version, "vcs_ref": buildinfo.CommitOrVCS(), "api_version": buildinfo.APIVersion})
}

// health: GET /api/health, Zealot's health check: 200 while the database answers.
func (s *Server) health(c *gin.Context) error {
	ctx := reqCtx(c)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := s.svc.DatabaseReady(ctx); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"healthy": true})
	return nil
}

func (s *Server) metricsHandler() gin.HandlerFunc {
	h := promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{})
	return gin.WrapH(h)
}
