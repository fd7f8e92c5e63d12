// Package links builds every absolute URL Slipway hands out, from the configured public URL only
// (never a request's Host header), so the API, the pages and the install manifest agree.
package links

import (
	"fmt"
	"net/url"
)

// DefaultIconPath is the path of the icon shown for packages that have none.
const DefaultIconPath = "/static/default-icon.png"

// Links builds URLs under one public base URL (no trailing slash).
type Links struct {
	Base string
}

// Release is the release page.
func (l Links) Release(slug string, id int64) string {
	return fmt.Sprintf("%s/channels/%s/releases/%d", l.Base, url.PathEscape(slug), id)
}

// Channel is the channel page.
func (l Links) Channel(slug string) string {
	return fmt.Sprintf("%s/channels/%s", l.Base, url.PathEscape(slug))
}

// QRCode is the PNG QR code of the release page, at a size (thumb, medium, large or pixels).
func (l Links) QRCode(slug string, id int64, size string) string {
	return l.Release(slug, id) + "/qrcode?size=" + url.QueryEscape(size)
}

// Manifest is the iOS install manifest; token opens a password-protected channel ("" for none).
func (l Links) Manifest(slug string, id int64, token string) string {
	u := l.Release(slug, id) + "/install"
	if token != "" {
		u += "?access=" + url.QueryEscape(token)
	}
	return u
}

// Install is what a device opens to install: the itms-services link for iOS, the download
// otherwise. The manifest URL is not escaped inside the link, as iOS and Zealot expect.
func (l Links) Install(platform, slug string, id int64, token string) string {
	if platform == "ios" {
		return "itms-services://?action=download-manifest&url=" + l.Manifest(slug, id, token)
	}
	return l.Download(id, token)
}

// Download is the package download (302 to the object).
func (l Links) Download(id int64, token string) string {
	u := fmt.Sprintf("%s/download/releases/%d", l.Base, id)
	if token != "" {
		u += "?access=" + url.QueryEscape(token)
	}
	return u
}

// Icon is a release's icon, or the default icon when hasIcon is false.
func (l Links) Icon(id int64, hasIcon bool) string {
	if !hasIcon {
		return l.Base + DefaultIconPath
	}
	return fmt.Sprintf("%s/releases/%d/icon", l.Base, id)
}

// DebugFile is a debug file's download (file_url).
func (l Links) DebugFile(id int64) string {
	return fmt.Sprintf("%s/download/debug_files/%d", l.Base, id)
}
