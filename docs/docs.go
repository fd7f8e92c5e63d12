// Package docs embeds Slipway's API documents, so the binary can serve them and tests can check
// the server against them.
package docs

import "embed"

// OpenAPIYAML is the OpenAPI 3.1 document of every route Slipway answers (openapi.yaml). The
// server serves it as JSON at GET /api/openapi.json; test/apptest validates the integration
// tests' real requests and responses against it.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// Guides are the user guides the server serves at /docs/<name> (an installation without access to
// the internet still has them): the console links to them.
//
//go:embed ci.md deploy.md feedback.md feeds.md operations.md repositories.md security.md testers.md webhooks.md
var Guides embed.FS
