package httpapi

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"sigs.k8s.io/yaml"

	"github.com/slipwayhq/slipway/docs"
)

// openAPIJSON is docs/openapi.yaml converted to JSON once, when the process starts.
var openAPIJSON, openAPIErr = yaml.YAMLToJSON(docs.OpenAPIYAML)

// openAPI: GET /api/openapi.json, the OpenAPI 3.1 document of every route (docs/openapi.yaml).
func (s *Server) openAPI(c *gin.Context) error {
	if openAPIErr != nil {
		return fmt.Errorf("docs/openapi.yaml does not convert to JSON: %w", openAPIErr)
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", openAPIJSON)
	return nil
}

// Route is one method and path the router answers, in gin's syntax (/api/apps/:id, /objects/*key).
type Route struct {
	Method, Path string
}

// Routes lists every route registered on the router, for checking them against the OpenAPI
// document.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.engine.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}
