package web

import (
	"fmt"
	"time"
)

// humanSize renders a byte count in binary units with one decimal, as testers read sizes
// ("41.7 KB", "4.0 MB"); below 1 KB it is exact.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, []string{"KB", "MB", "GB", "TB", "PB"}[i])
}

// timeLayout is how pages show a moment, in the configured zone.
const timeLayout = "2 Jan 2006 15:04 MST"

// platformNames and deviceNames are what pages call the stored platform and device values.
var platformNames = map[string]string{"ios": "iOS", "android": "Android", "macos": "macOS", "harmonyos": "HarmonyOS", "windows": "Windows"}

var platformIcons = map[string]string{"ios": "fa-brands fa-apple", "macos": "fa-brands fa-apple", "android": "fa-brands fa-android", "windows": "fa-brands fa-windows"}

var deviceNames = map[string]string{
	"iphone": "iPhone", "ipad": "iPad", "universal": "iPhone and iPad", "appletv": "Apple TV", "macos": "Mac",
	"phone": "Phone", "tablet": "Tablet", "tv": "TV", "watch": "Watch", "automotive": "Automotive",
}

var releaseTypeNames = map[string]string{
	"debug": "Debug", "adhoc": "Ad hoc", "enterprise": "Enterprise", "appstore": "App Store", "release": "Release",
	"development": "Development", "inhouse": "In-house",
}

// name returns the display name of v in m, or v itself.
func name(m map[string]string, v string) string {
	if n, ok := m[v]; ok {
		return n
	}
	return v
}

func iconClass(platform string) string {
	if c, ok := platformIcons[platform]; ok {
		return c
	}
	return "fa-solid fa-box"
}

// shortCommit is the usual 8-character abbreviation of a commit id.
func shortCommit(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}

func (h *Handler) when(t time.Time) string { return t.In(h.cfg.Location).Format(timeLayout) }
