package web

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	qrcode "github.com/skip2/go-qrcode"

	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// qrNamedSizes are the named QR code sizes, in pixels; a number from qrMinSize to qrMaxSize is
// taken as pixels.
var qrNamedSizes = map[string]int{"thumb": 128, "medium": 256, "large": 512}

const (
	qrMinSize = 64
	qrMaxSize = 2048
)

// qrSize parses the size parameter ("thumb" when empty).
func qrSize(s string) (int, error) {
	if s == "" {
		s = "thumb"
	}
	if n, ok := qrNamedSizes[s]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < qrMinSize || n > qrMaxSize {
		return 0, errs.Field("size", "must be thumb, medium, large or a number of pixels from %d to %d", qrMinSize, qrMaxSize)
	}
	return n, nil
}

// qrcode: GET /channels/:slug/releases/:id/qrcode?size=..., a PNG of the release page's URL.
// It needs no password: it holds only the URL, which whoever asks already has (a channel open
// to its testers only is the exception: only those the channel's pages let in get it). The image
// depends on nothing but the URL and the size, so its ETag is their hash and it may be cached
// for a day (privately for a protected channel). Errors are the API's JSON.
func (h *Handler) qrcode(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return errs.Field("id", "must be a positive integer")
	}
	size, err := qrSize(c.Query("size"))
	if err != nil {
		return err
	}
	rc, err := h.svc.Releases.ReleaseInChannel(ctx, c.Param("slug"), id)
	if err != nil {
		return err
	}
	if rc.Channel.TesterOnly {
		// A channel open to its testers only shows nothing of its builds to anyone else, not
		// even the QR code of a page they could not open (401 for nobody, 403 for another
		// tester).
		req := access.AccessRequest{Client: c.ClientIP(), AppID: rc.App.ID, ReleaseID: rc.ID, Token: c.Query("access")}
		if err := h.svc.Passwords.Authorize(ctx, &rc.Channel, req); err != nil {
			return err
		}
	}
	target := h.links.Release(rc.Channel.Slug, rc.ID)
	sum := sha256.Sum256([]byte("qr-v1\x00" + target + "\x00" + strconv.Itoa(size)))
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	cache := "public, max-age=86400"
	if rc.Channel.Protected() {
		cache = "private, max-age=86400"
	}
	c.Header("ETag", etag)
	c.Header("Cache-Control", cache)
	if ETagMatch(c.GetHeader("If-None-Match"), etag) {
		c.Status(http.StatusNotModified)
		return nil
	}
	img, err := qrcode.Encode(target, qrcode.Medium, size)
	if err != nil {
		return err
	}
	c.Data(http.StatusOK, "image/png", img)
	return nil
}

// ETagMatch implements If-None-Match's weak comparison against one strong tag (shared with the
// API's cached answers).
func ETagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
