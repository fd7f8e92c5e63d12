// Package docs embeds Slipway's API documents, so the binary can serve them and tests can check
// the server against them.
package docs

import _ "embed"

// OpenAPIYAML is the OpenAPI 3.1 document of every route Slipway answers (openapi.yaml). The
// server serves it as JSON at GET /api/openapi.json; test/apptest validates the integration
// tests' real requests and responses against it.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte
