package windows

import (
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Component names of Windows breakdowns (besides folders named by their path, the main .exe and a
// bundle's packages named by their entry).
const (
	componentMetadata = "Package metadata"
	componentTopFiles = "Top-level files"
)

// msixCut cuts an MSIX or APPX package: its own files (AppxManifest.xml, AppxBlockMap.xml,
// AppxSignature.p7x, [Content_Types].xml, AppxMetadata/) are "Package metadata"
// (appinfo.KindSignature); each top-level folder is one component "<folder>/" and the other
// files at the root are "Top-level files" (appinfo.KindFolder). In a bundle, each package at the
// root (.msix, .appx) is a component of its own, named by its entry (appinfo.KindModule).
func msixCut(name string) (string, string) {
	top, folder := appinfo.TopFolder(name)
	switch {
	case folder && top == "AppxMetadata",
		!folder && (top == appxManifest || top == "AppxBlockMap.xml" || top == "AppxSignature.p7x" || top == "[Content_Types].xml"):
		return componentMetadata, appinfo.KindSignature
	case folder:
		return top + "/", appinfo.KindFolder
	}
	if lower := strings.ToLower(top); strings.HasSuffix(lower, ".msix") || strings.HasSuffix(lower, ".appx") {
		return top, appinfo.KindModule
	}
	return componentTopFiles, appinfo.KindFolder
}

// exeZipCut cuts a zip holding an .exe: the main .exe is a component of its own, named by its
// entry (appinfo.KindExecutable); the rest is cut by top-level folder as in msixCut, below the
// folders every entry shares (a zip of "TopBar/..." is cut by the folders inside TopBar/),
// so "<root>/<folder>/" and "Top-level files" (appinfo.KindFolder). macOS's __MACOSX/ entries
// are in appinfo.ComponentOther.
func exeZipCut(a *zipread.Archive, exe string) appinfo.Cut {
	root := commonFolder(a)
	return func(name string) (string, string) {
		if name == exe {
			return name, appinfo.KindExecutable
		}
		if zipread.IsMacOSXJunk(name) {
			return "", ""
		}
		rest := strings.TrimPrefix(name, root)
		if top, folder := appinfo.TopFolder(rest); folder {
			return root + top + "/", appinfo.KindFolder
		}
		return componentTopFiles, appinfo.KindFolder
	}
}

// commonFolder returns the folders every entry but macOS's junk lies in ("TopBar/", "a/b/"), ""
// when they share none.
func commonFolder(a *zipread.Archive) string {
	prefix, first := "", true
	for _, f := range a.Files() {
		if zipread.IsMacOSXJunk(f.Name) {
			continue
		}
		dir := f.Name[:strings.LastIndexByte(f.Name, '/')+1] // the entry's folder, "" at the root
		if first {
			prefix, first = dir, false
			continue
		}
		for !strings.HasPrefix(dir, prefix) {
			// Drop prefix's last folder.
			i := strings.LastIndexByte(strings.TrimSuffix(prefix, "/"), '/')
			prefix = prefix[:i+1]
		}
		if prefix == "" {
			break
		}
	}
	return prefix
}
