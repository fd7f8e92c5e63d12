package feeds

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Windows' App Installer (docs/feeds.md, docs/repositories.md): an .appinstaller file names the
// MSIX package or bundle to install and the address of the file itself, which App Installer
// checks for a newer version when the app starts. The file uses the 2018 schema, Windows 10
// 1809 and later (its OnLaunch ShowPrompt and UpdateBlocksActivation take effect from 1903;
// older versions ignore them and update silently on the next start).

// AppInstallerNS is the namespace of the App Installer schema the file is written in.
const AppInstallerNS = "http://schemas.microsoft.com/appx/appinstaller/2018"

// AppInstallerPackage is the package an .appinstaller file installs: the identity from its
// manifest, which Windows requires to match the package exactly, and where it is downloaded.
type AppInstallerPackage struct {
	// Bundle: the package is an .msixbundle (MainBundle, which names no architecture).
	Bundle                bool
	Name, Publisher       string
	Version               string
	ProcessorArchitecture string
	URL                   string
}

// AppInstallerFile is what an .appinstaller file says.
type AppInstallerFile struct {
	// URL is the file's own stable address, where App Installer looks for updates.
	URL  string
	Main AppInstallerPackage
	// HoursBetweenUpdateChecks is OnLaunch's interval (0: at every start).
	HoursBetweenUpdateChecks int
	// Critical: the build is a mandatory update; the app does not start until it is installed
	// (UpdateBlocksActivation).
	Critical bool
}

// appInstallerVersion is the quad version App Installer takes: four numbers of at most 65535.
var appInstallerVersion = regexp.MustCompile(`^(0|[1-9][0-9]{0,4})(\.(0|[1-9][0-9]{0,4})){3}$`)

// appInstallerArchs are the architectures MainPackage may name.
var appInstallerArchs = []string{"x86", "x64", "arm", "arm64", "neutral"}

// AppInstallerOffers reports whether App Installer may be offered a release: an MSIX package or
// bundle with the identity Windows matches (a name, a publisher, a quad version), rolled out to
// everyone (the file names one build for every install: it cannot stage).
func AppInstallerOffers(r *distribution.Release) bool {
	if r.Format != "msix" && r.Format != "msixbundle" {
		return false
	}
	return r.BundleID != "" && r.Facts.Publisher != "" && validQuad(r.BuildVersion) && RolledOut(r)
}

func validQuad(v string) bool {
	if !appInstallerVersion.MatchString(v) {
		return false
	}
	for _, part := range bytes.Split([]byte(v), []byte(".")) {
		if n, _ := strconv.Atoi(string(part)); n > 65535 {
			return false
		}
	}
	return true
}

// AppInstallerMain returns the package of release r as an .appinstaller file names it,
// downloaded from url. A package's architecture is its manifest's ProcessorArchitecture (one a
// schema does not know is "neutral"); a bundle names none.
func AppInstallerMain(r *distribution.Release, url string) AppInstallerPackage {
	p := AppInstallerPackage{Bundle: r.Format == "msixbundle", Name: r.BundleID, Publisher: r.Facts.Publisher,
		Version: r.BuildVersion, URL: url}
	if !p.Bundle {
		p.ProcessorArchitecture = "neutral"
		if len(r.Facts.Architectures) > 0 && slices.Contains(appInstallerArchs, r.Facts.Architectures[0]) {
			p.ProcessorArchitecture = r.Facts.Architectures[0]
		}
	}
	return p
}

// The elements of the file, in the order the schema requires.
type appInstallerDoc struct {
	XMLName     xml.Name                `xml:"AppInstaller"`
	NS          string                  `xml:"xmlns,attr"`
	Version     string                  `xml:"Version,attr"`
	URI         string                  `xml:"Uri,attr"`
	MainPackage *appInstallerPackageDoc `xml:"MainPackage,omitempty"`
	MainBundle  *appInstallerPackageDoc `xml:"MainBundle,omitempty"`
	Update      appInstallerUpdateDoc   `xml:"UpdateSettings"`
}

type appInstallerPackageDoc struct {
	Name                  string `xml:"Name,attr"`
	Publisher             string `xml:"Publisher,attr"`
	Version               string `xml:"Version,attr"`
	ProcessorArchitecture string `xml:"ProcessorArchitecture,attr,omitempty"`
	URI                   string `xml:"Uri,attr"`
}

type appInstallerUpdateDoc struct {
	OnLaunch struct {
		Hours                  int  `xml:"HoursBetweenUpdateChecks,attr"`
		ShowPrompt             bool `xml:"ShowPrompt,attr"`
		UpdateBlocksActivation bool `xml:"UpdateBlocksActivation,attr"`
	} `xml:"OnLaunch"`
	// AutomaticBackgroundTask also checks every 8 hours whether or not the app is started.
	AutomaticBackgroundTask struct{} `xml:"AutomaticBackgroundTask"`
}

// AppInstaller renders an .appinstaller file. Its Version is the package's: App Installer reads
// the file again at every check, and a new build is a new version of both. The prompt is always
// shown (a tester sees that a new build arrives); a critical build blocks the app's start until
// it is installed.
func AppInstaller(f AppInstallerFile) ([]byte, error) {
	if !validQuad(f.Main.Version) {
		return nil, errs.Invalidf("the package's version %q is not the four numbers App Installer needs", f.Main.Version)
	}
	if f.HoursBetweenUpdateChecks < 0 || f.HoursBetweenUpdateChecks > distribution.MaxAppInstallerHours {
		return nil, fmt.Errorf("feeds: HoursBetweenUpdateChecks %d out of range", f.HoursBetweenUpdateChecks)
	}
	doc := appInstallerDoc{NS: AppInstallerNS, Version: f.Main.Version, URI: f.URL}
	p := &appInstallerPackageDoc{Name: f.Main.Name, Publisher: f.Main.Publisher, Version: f.Main.Version, URI: f.Main.URL}
	if f.Main.Bundle {
		doc.MainBundle = p
	} else {
		p.ProcessorArchitecture = f.Main.ProcessorArchitecture
		doc.MainPackage = p
	}
	doc.Update.OnLaunch.Hours = f.HoursBetweenUpdateChecks
	doc.Update.OnLaunch.ShowPrompt = true
	doc.Update.OnLaunch.UpdateBlocksActivation = f.Critical
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n")
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}
