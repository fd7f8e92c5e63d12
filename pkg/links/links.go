// Package links builds every absolute URL Slipway hands out, from the configured public URL only
// (never a request's Host header), so the API, the pages and the install manifest agree.
package links

import (
	"fmt"
	"net/url"
	"strings"
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

// HarmonyInstallable reports whether a release installs over the air on HarmonyOS: a .hap, which
// the manifest names as its one module (a .app is for AppGallery, not for devices).
func HarmonyInstallable(platform, format string) bool {
	return platform == "harmonyos" && format == "hap"
}

// HarmonyInstall is HarmonyOS's enterprise install link for a release's manifest: the manifest
// URL is not escaped inside the link, as hpack's pages and the iOS link do.
func HarmonyInstall(manifestURL string) string {
	return "store://enterprise/manifest?url=" + manifestURL
}

// Download is the package download (302 to the object).
func (l Links) Download(id int64, token string) string {
	u := fmt.Sprintf("%s/download/releases/%d", l.Base, id)
	if token != "" {
		u += "?access=" + url.QueryEscape(token)
	}
	return u
}

// InstallDownload is the package URL an iOS install manifest hands the device: the download,
// marked so that the install (counted when the manifest was fetched) is not counted twice.
func (l Links) InstallDownload(id int64, token string) string {
	u := fmt.Sprintf("%s/download/releases/%d?via=install", l.Base, id)
	if token != "" {
		u += "&access=" + url.QueryEscape(token)
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

// ChannelPage is one page of the channel page's release list (page 1 is the channel page itself).
func (l Links) ChannelPage(slug string, page int) string {
	if page <= 1 {
		return l.Channel(slug)
	}
	return fmt.Sprintf("%s?page=%d", l.Channel(slug), page)
}

// Static is an embedded asset (a path under /static/, such as "slipway.css").
func (l Links) Static(name string) string {
	return l.Base + "/static/" + strings.TrimPrefix(name, "/")
}

// GitRepo turns a channel's git_url into the repository's https web address: scp-like
// "git@host:org/repo.git" and "ssh://git@host[:port]/org/repo.git" become
// "https://host/org/repo"; http(s) URLs lose a trailing ".git". Anything else (another scheme,
// javascript:, no path) gives "" so that pages never link it.
func GitRepo(gitURL string) string {
	s := strings.TrimSpace(gitURL)
	if s == "" || strings.ContainsAny(s, " \t\r\n\"'<>\\") {
		return ""
	}
	if userHost, path, ok := strings.Cut(s, ":"); ok && !strings.Contains(s, "://") && !strings.Contains(userHost, "/") {
		// scp-like syntax, [user@]host:path; a host has a dot, so "javascript:..." is not one.
		host := userHost[strings.LastIndex(userHost, "@")+1:]
		if !strings.Contains(host, ".") {
			return ""
		}
		s = "https://" + host + "/" + strings.TrimPrefix(path, "/")
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return ""
	}
	switch u.Scheme {
	case "http", "https":
	case "ssh", "git", "git+ssh":
		u.Scheme, u.Host = "https", u.Hostname()
	default:
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	if strings.Trim(u.Path, "/") == "" {
		return ""
	}
	u.RawPath = ""
	return u.String()
}

// GitCommit links a commit in the repository of gitURL ("" when the repository is not linkable).
func GitCommit(gitURL, sha string) string {
	repo := GitRepo(gitURL)
	if repo == "" || sha == "" {
		return ""
	}
	return repo + "/commit/" + url.PathEscape(sha)
}

// GitBranch links a branch ("feature/x" keeps its slash) in the repository of gitURL.
func GitBranch(gitURL, branch string) string {
	repo := GitRepo(gitURL)
	if repo == "" || branch == "" {
		return ""
	}
	parts := strings.Split(branch, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return repo + "/tree/" + strings.Join(parts, "/")
}

// WebURL returns s when it is an absolute http(s) URL, else "": user-given links (ci_url) are
// only ever emitted as web links, never as javascript: or data: URLs.
func WebURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.String()
}

// Feed is one update feed of a channel: the framework that reads it and the URL to give it.
type Feed struct {
	Framework, URL string
}

// Feeds are the update feeds a channel of a desktop platform serves (docs/feeds.md), as an app
// is configured with them: electron-updater takes the folder of its latest*.yml (generic
// provider), Squirrel the folder of RELEASES, Tauri the endpoint with its placeholders, App
// Installer its .appinstaller file. None for other platforms.
func (l Links) Feeds(slug, platform string) []Feed {
	base := l.Channel(slug)
	tauri := []Feed{{"Tauri updater (endpoint)", base + "/tauri/{{target}}/{{arch}}/{{current_version}}"},
		{"Tauri updater (static JSON)", base + "/tauri.json"}}
	switch platform {
	case "macos":
		return append([]Feed{{"Sparkle (SUFeedURL)", base + "/appcast.xml"},
			{"electron-updater (generic provider url; reads latest-mac.yml)", base + "/electron"}}, tauri...)
	case "windows":
		return append([]Feed{{"electron-updater (generic provider url; reads latest.yml)", base + "/electron"},
			{"Squirrel.Windows (UpdateManager url; reads RELEASES)", base + "/squirrel"},
			{"Windows App Installer (.appinstaller file of the MSIX app; opened on Windows, it installs the app and keeps it updated)", base + "/app.appinstaller"}}, tauri...)
	case "linux":
		return append([]Feed{{"electron-updater (generic provider url; reads latest-linux.yml, latest-linux-arm64.yml)", base + "/electron"}}, tauri...)
	}
	return nil
}

// TesterHome is a tester's home page: the builds given to them.
func (l Links) TesterHome() string { return l.Base + "/t" }

// TesterSignIn is the page where a tester asks for a sign-in link.
func (l Links) TesterSignIn() string { return l.Base + "/t/signin" }

// TesterLink is a mailed sign-in link (its secret in the path). Opening it shows a button that
// signs in (a POST): a mail scanner that fetches links does not spend it.
func (l Links) TesterLink(secret string) string { return l.Base + "/t/in/" + url.PathEscape(secret) }

// Unsubscribe is a mail's one-click unsubscribe link (RFC 8058: a POST to it, without cookies,
// turns that app's mail off for that tester; a GET shows a page with the button).
func (l Links) Unsubscribe(token string) string {
	return l.Base + "/t/unsubscribe/" + url.PathEscape(token)
}

// Invitation is a colleague's mailed invitation (its secret in the path); like TesterLink, opening
// it shows a button, and the POST accepts.
func (l Links) Invitation(secret string) string {
	return l.Base + "/console/invitations/" + url.PathEscape(secret)
}

// ConsoleSignIn is the page where a colleague who came by invitation asks for a login link.
func (l Links) ConsoleSignIn() string { return l.Base + "/console/login/email" }

// ConsoleLink is a mailed console login link (its secret in the path): a page with a button.
func (l Links) ConsoleLink(secret string) string {
	return l.Base + "/console/signin/" + url.PathEscape(secret)
}

// Feedback is an app's feedback inbox in the console, at one report.
func (l Links) Feedback(appID, id int64) string {
	return fmt.Sprintf("%s/console/apps/%d/feedback#feedback-%d", l.Base, appID, id)
}
