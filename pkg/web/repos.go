package web

import (
	"fmt"
	"strings"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/repos/rpmmd"
)

// repoSetupView is the "Install with a package manager" card of a Linux channel (template part
// repo-setup): the lines to paste for each repository the channel has. A protected channel's
// lines hold the placeholder FEED-TOKEN, never the token.
type repoSetupView struct {
	Slug, Guide string
	Protected   bool
	// APT: the channel has .deb builds. APTPackage is the newest one's package name.
	APT                                         bool
	APTKeyLine, APTSources, APTAuth, APTPackage string
	// RPM: the channel has .rpm builds. RPMPath is where the .repo file goes (RPMFile, RPMRows
	// lines), RPMPackage the newest one's package name; RPMSigned: every .rpm among them is
	// signed, so the file says gpgcheck=1 (decisions.md, "DNF repositories of Linux channels").
	RPM                          bool
	RPMPath, RPMFile, RPMPackage string
	RPMRows                      int
	RPMSigned                    bool
}

// repoSetup is the card for a channel, nil when it has none: not a Linux channel, no build of a
// repository's format among rels, or no repository signing key on the installation.
func (h *Handler) repoSetup(ch *distribution.Channel, rels []distribution.Release) *repoSetupView {
	if h.cfg == nil || h.cfg.RepoKey == nil || ch.DeviceType != "linux" {
		return nil
	}
	v := &repoSetupView{Slug: ch.Slug, Guide: h.links.Base + "/docs/repositories", Protected: ch.Protected()}
	unsigned := false
	for i := range rels {
		r := &rels[i]
		if r.Format == "deb" && !v.APT {
			v.APT, v.APTPackage = true, r.BundleID
		}
		if r.Format == "rpm" && r.Facts.Properties["SourcePackage"] == "" {
			if !v.RPM {
				v.RPM, v.RPMPackage = true, r.BundleID
			}
			unsigned = unsigned || r.Facts.Properties["Signed"] != "true"
		}
	}
	if v.RPM {
		f := rpmmd.RepoFile{Slug: ch.Slug, Name: ch.Slug + " (Slipway)", BaseURL: h.links.Channel(ch.Slug) + "/rpm",
			KeyURL: h.links.Base + "/keys/slipway.asc", Protected: v.Protected, Signed: !unsigned}
		v.RPMPath, v.RPMFile, v.RPMSigned = f.Path(), strings.TrimSuffix(f.String(), "\n"), !unsigned
		v.RPMRows = strings.Count(v.RPMFile, "\n") + 1
	}
	if !v.APT {
		if v.RPM {
			return v
		}
		return nil
	}
	base := h.links.Base + "/channels/" + ch.Slug + "/apt"
	keyring := "/etc/apt/keyrings/" + ch.Slug + ".gpg"
	v.APTKeyLine = fmt.Sprintf("curl -fsSL %s/key.asc | sudo gpg --dearmor -o %s", base, keyring)
	v.APTSources = fmt.Sprintf("Types: deb\nURIs: %s\nSuites: stable\nComponents: main\nSigned-By: %s", base, keyring)
	// auth.conf.d names the host and path without the scheme for https; plain http must be
	// written out, or apt refuses to send the password.
	machine := strings.TrimPrefix(base, "https://")
	v.APTAuth = fmt.Sprintf("machine %s login slipway password FEED-TOKEN", machine)
	return v
}
