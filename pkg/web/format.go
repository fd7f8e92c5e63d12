package web

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
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
var platformNames = map[string]string{"ios": "iOS", "android": "Android", "macos": "macOS", "harmonyos": "HarmonyOS", "windows": "Windows", "linux": "Linux"}

var platformIcons = map[string]string{"ios": "fa-brands fa-apple", "macos": "fa-brands fa-apple", "android": "fa-brands fa-android",
	"windows": "fa-brands fa-windows", "linux": "fa-brands fa-linux"}

var deviceNames = map[string]string{
	"iphone": "iPhone", "ipad": "iPad", "universal": "iPhone and iPad", "appletv": "Apple TV", "macos": "Mac",
	"phone": "Phone", "tablet": "Tablet", "tv": "TV", "watch": "Watch", "automotive": "Automotive",
	"2in1": "2-in-1", "wearable": "Wearable", "car": "Car", "windows": "Windows PC", "linux": "Linux PC",
}

// formatNames are what pages call a package's format (the file kind a download button offers).
var formatNames = map[string]string{
	"ipa": ".ipa", "apk": ".apk", "aab": ".aab", "macos-zip": ".zip", "pkg": ".pkg", "dmg": ".dmg", "hap": ".hap",
	"harmony-app": ".app", "exe": ".exe", "exe-zip": ".zip", "msi": ".msi", "msix": ".msix", "msixbundle": ".msixbundle",
	"deb": ".deb", "rpm": ".rpm", "appimage": "AppImage",
}

// deviceLabel names a device value; HarmonyOS joins several with "," ("phone,tablet").
func deviceLabel(v string) string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = name(deviceNames, strings.TrimSpace(p))
	}
	return strings.Join(parts, ", ")
}

var releaseTypeNames = map[string]string{
	"debug": "Debug", "adhoc": "Ad hoc", "enterprise": "Enterprise", "appstore": "App Store", "release": "Release",
	"development": "Development", "inhouse": "In-house",
}

// name returns the display name of v in m, or v itself.
// androidVersions are the Android releases of the API levels (developer.android.com's table).
var androidVersions = map[string]string{"1": "1.0", "2": "1.1", "3": "1.5", "4": "1.6", "5": "2.0", "6": "2.0.1", "7": "2.1",
	"8": "2.2", "9": "2.3", "10": "2.3.3", "11": "3.0", "12": "3.1", "13": "3.2", "14": "4.0", "15": "4.0.3", "16": "4.1",
	"17": "4.2", "18": "4.3", "19": "4.4", "20": "4.4W", "21": "5.0", "22": "5.1", "23": "6.0", "24": "7.0", "25": "7.1",
	"26": "8.0", "27": "8.1", "28": "9", "29": "10", "30": "11", "31": "12", "32": "12L", "33": "13", "34": "14", "35": "15",
	"36": "16"}

// minOSLabel says what a build's minimum OS is: Android's is an API level ("API 14 (Android
// 4.0)"; a newer level than the table knows is "API 37"), HarmonyOS's an API version; the others
// are versions as they are.
func minOSLabel(platform, minOS string) string {
	switch {
	case minOS == "":
		return ""
	case platform == "android":
		if v, ok := androidVersions[minOS]; ok {
			return "API " + minOS + " (Android " + v + ")"
		}
		return "API " + minOS
	case platform == "harmonyos" && !strings.Contains(minOS, "."):
		return "API " + minOS
	}
	return minOS
}

// platformName is what pages call a platform (the template function of the same name).
func platformName(platform string) string { return name(platformNames, platform) }

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

// sizeUnits are the units parseSize reads and formSize writes: binary, as humanSize shows sizes
// ("KB" is 1024 bytes), with the IEC spellings accepted too.
var sizeUnits = []struct {
	names []string
	bytes int64
}{
	{[]string{"tb", "tib", "t"}, 1 << 40}, {[]string{"gb", "gib", "g"}, 1 << 30}, {[]string{"mb", "mib", "m"}, 1 << 20},
	{[]string{"kb", "kib", "k"}, 1 << 10}, {[]string{"b", "bytes", "byte", ""}, 1},
}

// parseSize reads a size as people type it: "200 MB", "1.5GB", "512 KiB", "0", or a byte count.
func parseSize(s string) (int64, error) {
	s = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), ",", ""))
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("not a size: %q", s)
	}
	for _, u := range sizeUnits {
		for _, n := range u.names {
			if unit == n {
				b := v * float64(u.bytes)
				if b > math.MaxInt64/2 {
					return 0, fmt.Errorf("too large: %q", s)
				}
				return int64(math.Round(b)), nil
			}
		}
	}
	return 0, fmt.Errorf("unknown unit in %q", s)
}

// formSize writes a byte count for a form field, in the largest unit it is a whole number of
// ("2 GB"), so that parseSize reads it back exactly.
func formSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range sizeUnits {
		if n%u.bytes == 0 {
			return strconv.FormatInt(n/u.bytes, 10) + " " + strings.ToUpper(u.names[0])
		}
	}
	return strconv.FormatInt(n, 10)
}

// editableChangelog is a changelog as its console field shows it: one message a line, as it was
// typed. (The API's text_changelog puts "- " before each, Zealot's list; shown in the field, the
// bullets were saved back as part of what was typed and came back with every edit.)
func editableChangelog(entries []distribution.ChangelogEntry) string {
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = e.Message
	}
	return strings.Join(lines, "\n")
}
