package web

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// UDID collection (Apple's Profile Service): /udid explains and links the profile, the device
// installs it and POSTs its signed answer to /udid/callback, which records the device and sends
// Safari on to /udid/<UDID>, the device's page. That page remembers the device in a cookie, so
// release pages can say whether this device can install a build.

// DeviceCookie holds the UDID of the device that registered from this browser. It is not a
// secret (a UDID is an identifier, not a credential) and only changes what pages say.
const DeviceCookie = "slipway_device"

// maxAnswerBytes bounds a device's answer: a plist of a few attributes and a certificate chain.
const maxAnswerBytes = 64 << 10

// Callback rate limit per client address, per replica.
const (
	callbackLimit  = 20
	callbackWindow = time.Minute
)

type udidIndexView struct {
	ProfileURL, DeviceURL string
	Insecure              bool
}

type deviceView struct {
	UDID, Name, Product, OSVersion, Serial, Registered string
	Unverified                                         bool
	Releases                                           []installableView
	// Expired are builds whose provisioning profile lists the device but has expired: no
	// device installs them any more, so they are not among Releases.
	Expired []installableView
}

type installableView struct {
	AppName, Channel, Version, URL, Uploaded string
	AllDevices                               bool
	// Expired is when the build's provisioning profile expired ("": it has not).
	Expired string
}

// udidIndex: GET /udid.
func (h *Handler) udidIndex(c *gin.Context) error {
	v := udidIndexView{ProfileURL: h.links.Base + "/udid/profile", Insecure: !h.https()}
	if ck, err := c.Cookie(DeviceCookie); err == nil {
		if udid, err := distribution.NormalizeUDID(ck); err == nil {
			v.DeviceURL = h.links.Base + "/udid/" + udid
		}
	}
	h.render(c, http.StatusOK, "udid", page{Title: "Register this device · Slipway", Body: v}, false)
	return nil
}

// udidProfile: GET /udid/profile, the configuration profile that asks for the UDID.
func (h *Handler) udidProfile(c *gin.Context) error {
	body, err := h.svc.Devices.UDIDProfile(h.links.Base + "/udid/callback")
	if err != nil {
		return err
	}
	c.Header("Content-Disposition", `attachment; filename="slipway-udid.mobileconfig"`)
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "application/x-apple-aspen-config", body)
	return nil
}

// udidCallback: POST /udid/callback, the device's signed answer → 301 to its page (iOS follows
// a 301 from a profile service in Safari).
func (h *Handler) udidCallback(c *gin.Context) error {
	ctx := reqCtx(c)
	if !h.limiter.allow(c.ClientIP(), time.Now()) {
		c.Header("Retry-After", "60")
		return errs.New(errs.TooManyRequests, "too many device registrations from this address; try again in a minute")
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxAnswerBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errs.New(errs.TooLarge, "a device's answer is at most %d bytes", maxAnswerBytes)
	}
	if err != nil {
		return errs.Wrap(errs.Invalid, err, "the device's answer could not be read")
	}
	d, err := h.svc.Devices.RegisterDeviceAnswer(ctx, body)
	if err != nil {
		return err
	}
	h.log.InfoContext(ctx, "device registered through the profile service", "product", d.Product, "os_version", d.OSVersion)
	c.Redirect(http.StatusMovedPermanently, h.links.Base+"/udid/"+d.UDID)
	return nil
}

// devicePage: GET /udid/:udid, the device and the builds it can install; remembers the device.
func (h *Handler) devicePage(c *gin.Context) error {
	ctx := reqCtx(c)
	d, err := h.svc.Devices.Device(ctx, c.Param("udid"))
	if err != nil {
		return err
	}
	rels, err := h.svc.Devices.InstallableReleases(ctx, d.UDID)
	if err != nil {
		return err
	}
	v := deviceView{UDID: d.UDID, Name: d.Name, Product: d.Product, OSVersion: d.OSVersion, Serial: d.Serial, Registered: h.when(d.CreatedAt),
		Unverified: d.Unverified}
	for _, rc := range rels {
		iv := installableView{AppName: rc.App.Name, Channel: rc.Scheme.Name + " · " + rc.Channel.Name,
			Version: versionText(&rc.Release), URL: h.links.Release(rc.Channel.Slug, rc.ID), Uploaded: h.when(rc.CreatedAt),
			AllDevices: rc.Profile != nil && rc.Profile.AllDevices}
		if profileExpired(&rc.Release) {
			iv.Expired = h.when(rc.Profile.ExpiresAt)
			v.Expired = append(v.Expired, iv)
			continue
		}
		v.Releases = append(v.Releases, iv)
	}
	http.SetCookie(c.Writer, &http.Cookie{Name: DeviceCookie, Value: d.UDID, Path: "/", MaxAge: 365 * 24 * 3600,
		HttpOnly: true, Secure: h.https(), SameSite: http.SameSiteLaxMode})
	h.render(c, http.StatusOK, "device", page{Title: d.Name + " · Slipway", Body: v, Script: h.links.Static("copy.js")}, true)
	return nil
}

// deviceCheck is what a release page says about the browser's registered device.
type deviceCheck struct {
	Registered bool
	Name       string
	CanInstall bool
	UDID       string
	// Expired is when the build's provisioning profile expired ("": it has not). A profile that
	// lists the device but has expired installs on no device, so CanInstall is false then.
	Expired string
}

// checkDevice looks at the device cookie for an ad hoc or development build.
func (h *Handler) checkDevice(c *gin.Context, r *distribution.Release) *deviceCheck {
	ctx := reqCtx(c)
	ck, err := c.Cookie(DeviceCookie)
	if err != nil {
		return nil
	}
	udid, err := distribution.NormalizeUDID(ck)
	if err != nil {
		return nil
	}
	d, err := h.svc.Devices.Device(ctx, udid)
	if err != nil {
		return nil
	}
	if profileExpired(r) {
		return &deviceCheck{Registered: true, Name: d.Name, UDID: d.UDID, Expired: h.when(r.Profile.ExpiresAt)}
	}
	ok, err := h.svc.Devices.DeviceInProfile(ctx, r, udid)
	if err != nil {
		return nil
	}
	return &deviceCheck{Registered: true, Name: d.Name, CanInstall: ok, UDID: d.UDID}
}

// rateLimiter counts requests per client in fixed windows.
type rateLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	clients map[string]*rateWindow
}

type rateWindow struct {
	start time.Time
	n     int
}

func newRateLimiter(limit int, window time.Duration) *rateLimiter {
	return &rateLimiter{limit: limit, window: window, clients: map[string]*rateWindow{}}
}

// allow counts a request of client at now and reports whether it is within the limit.
func (l *rateLimiter) allow(client string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.clients) > 10_000 {
		for k, w := range l.clients {
			if now.Sub(w.start) >= l.window {
				delete(l.clients, k)
			}
		}
	}
	w := l.clients[client]
	if w == nil || now.Sub(w.start) >= l.window {
		w = &rateWindow{start: now}
		l.clients[client] = w
	}
	w.n++
	return w.n <= l.limit
}
