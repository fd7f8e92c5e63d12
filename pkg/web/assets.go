// Package web renders what people see: release and channel pages, QR codes and the iOS install
// manifest, with html/template and assets embedded in the binary (no outside CDN).
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var staticFS embed.FS

// Static holds the embedded assets served under /static/.
var Static, _ = fs.Sub(staticFS, "static")
