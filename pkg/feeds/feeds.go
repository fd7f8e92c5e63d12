// Package feeds is the update feeds desktop apps read: a Sparkle appcast (macOS),
// electron-updater's latest*.yml, the Tauri updater's JSON, and Squirrel.Windows' RELEASES. It
// chooses what each updater is offered of a channel's releases (select.go) and renders it: the
// renderers are pure, taking the chosen releases with absolute URLs and returning the bytes;
// pkg/httpapi serves them through the read cache, under the typed keys of Key.
package feeds

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"
	"time"
)

// Item is one release as the feeds show it.
type Item struct {
	// Title is what the updater shows ("<app> <version>").
	Title          string
	ReleaseVersion string
	BuildVersion   string
	// Notes are the release notes: one changelog message per line.
	Notes     []string
	Published time.Time
	// URL is the absolute URL the package is downloaded from; Filename its file name.
	URL      string
	Filename string
	Size     int64
	Format   string
	// SHA512Hex and SHA1Hex are Slipway's own checksums of the stored bytes.
	SHA512Hex string
	SHA1Hex   string
	MinOS     string
	// EdSignature is the Sparkle EdDSA signature (base64); TauriSignature the Tauri updater's
	// (the .sig file's content).
	EdSignature    string
	TauriSignature string
	// Channel is Sparkle's channel ("beta"), "" for the default channel.
	Channel        string
	RolloutPercent int
	Critical       bool
}

// SparkleNS is the Sparkle XML namespace.
const SparkleNS = "http://www.andymatuschak.org/xml-namespaces/sparkle"

// sparklePhaseInterval is the time between Sparkle's rollout groups for a release in a staged
// rollout: Sparkle phases an update in time (seven groups, one more each interval), not by a fixed
// share, so a rollout below 100% is announced as a seven-day phased rollout.
const sparklePhaseInterval = 24 * 60 * 60

// Appcast renders a Sparkle appcast (RSS 2.0 with the Sparkle namespace), items newest first.
func Appcast(title, link string, items []Item) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<rss version="2.0" xmlns:sparkle="` + SparkleNS + `" xmlns:dc="http://purl.org/dc/elements/1.1/">` + "\n<channel>\n")
	el := func(name, value string) {
		b.WriteString("<" + name + ">")
		_ = xml.EscapeText(&b, []byte(value))
		b.WriteString("</" + name + ">\n")
	}
	attr := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return strings.ReplaceAll(e.String(), `"`, "&#34;")
	}
	el("title", title)
	el("link", link)
	el("description", "Updates of "+title)
	el("language", "en")
	for _, it := range items {
		b.WriteString("<item>\n")
		el("title", it.Title)
		el("pubDate", it.Published.UTC().Format(time.RFC1123Z))
		el("sparkle:version", it.BuildVersion)
		el("sparkle:shortVersionString", it.ReleaseVersion)
		if it.MinOS != "" {
			el("sparkle:minimumSystemVersion", it.MinOS)
		}
		if it.Channel != "" {
			el("sparkle:channel", it.Channel)
		}
		if it.Critical {
			b.WriteString("<sparkle:criticalUpdate></sparkle:criticalUpdate>\n")
		}
		if it.RolloutPercent < 100 {
			el("sparkle:phasedRolloutInterval", fmt.Sprint(sparklePhaseInterval))
		}
		if len(it.Notes) > 0 {
			var html strings.Builder
			html.WriteString("<ul>")
			for _, n := range it.Notes {
				var e bytes.Buffer
				_ = xml.EscapeText(&e, []byte(n))
				html.WriteString("<li>" + e.String() + "</li>")
			}
			html.WriteString("</ul>")
			el("description", html.String())
		}
		b.WriteString(`<enclosure url="` + attr(it.URL) + `" length="` + fmt.Sprint(it.Size) + `" type="application/octet-stream"`)
		if it.EdSignature != "" {
			b.WriteString(` sparkle:edSignature="` + attr(it.EdSignature) + `"`)
		}
		if it.Format == "pkg" {
			b.WriteString(` sparkle:installationType="package"`)
		}
		b.WriteString("/>\n</item>\n")
	}
	b.WriteString("</channel>\n</rss>\n")
	return b.Bytes(), nil
}

// sha512B64 is electron-updater's form of a SHA-512: base64 of the digest.
func sha512B64(hexSum string) (string, error) {
	raw, err := hex.DecodeString(hexSum)
	if err != nil || len(raw) != 64 {
		return "", fmt.Errorf("bad sha512 %q", hexSum)
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// yamlString quotes s as a YAML double-quoted scalar (JSON strings are valid YAML).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ElectronYML renders electron-updater's latest*.yml for the newest release (generic provider).
func ElectronYML(it Item) ([]byte, error) {
	sum, err := sha512B64(it.SHA512Hex)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version: %s\n", yamlString(it.ReleaseVersion))
	fmt.Fprintf(&b, "files:\n  - url: %s\n    sha512: %s\n    size: %d\n", yamlString(it.URL), yamlString(sum), it.Size)
	fmt.Fprintf(&b, "path: %s\n", yamlString(it.URL))
	fmt.Fprintf(&b, "sha512: %s\n", yamlString(sum))
	fmt.Fprintf(&b, "releaseDate: %s\n", yamlString(it.Published.UTC().Format("2006-01-02T15:04:05.000Z")))
	fmt.Fprintf(&b, "releaseName: %s\n", yamlString(it.Title))
	fmt.Fprintf(&b, "releaseNotes: %s\n", yamlString(strings.Join(it.Notes, "\n")))
	if it.RolloutPercent < 100 {
		fmt.Fprintf(&b, "stagingPercentage: %d\n", it.RolloutPercent)
	}
	if it.Critical {
		// electron-updater has no mandatory flag of its own; apps read this one from the info.
		b.WriteString("critical: true\n")
	}
	return []byte(b.String()), nil
}

// TauriUpdate is the Tauri updater's answer for one platform (the dynamic endpoint's body).
type TauriUpdate struct {
	Version   string `json:"version"`
	Notes     string `json:"notes"`
	PubDate   string `json:"pub_date"`
	URL       string `json:"url"`
	Signature string `json:"signature"`
	// Critical and RolloutPercent are Slipway's additions (Tauri ignores unknown fields).
	Critical       bool `json:"critical,omitempty"`
	RolloutPercent int  `json:"rollout_percent,omitempty"`
}

// Tauri returns the Tauri updater's document for a release.
func Tauri(it Item) TauriUpdate {
	u := TauriUpdate{Version: it.ReleaseVersion, Notes: strings.Join(it.Notes, "\n"), PubDate: it.Published.UTC().Format(time.RFC3339),
		URL: it.URL, Signature: it.TauriSignature, Critical: it.Critical}
	if it.RolloutPercent < 100 {
		u.RolloutPercent = it.RolloutPercent
	}
	return u
}

// TauriStatic is the static form: the newest release for each "<os>-<arch>" key.
type TauriStatic struct {
	Version   string                   `json:"version"`
	Notes     string                   `json:"notes"`
	PubDate   string                   `json:"pub_date"`
	Platforms map[string]TauriPlatform `json:"platforms"`
}

// TauriPlatform is one platform's package in the static form.
type TauriPlatform struct {
	Signature string `json:"signature"`
	URL       string `json:"url"`
}

// SquirrelReleases renders Squirrel.Windows' RELEASES: "SHA1 filename size" per .nupkg, oldest
// first as Squirrel expects.
func SquirrelReleases(items []Item) []byte {
	var b strings.Builder
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		fmt.Fprintf(&b, "%s %s %d\n", strings.ToUpper(it.SHA1Hex), it.URL, it.Size)
	}
	return []byte(b.String())
}
