package web

import "howett.net/plist"

// InstallManifest renders Apple's over-the-air install manifest, the plist an itms-services link
// points iOS at: where the package is, its icon, bundle identifier, version and title. httpapi's
// handler (GET /channels/:slug/releases/:id/install) checks channel access and serves it.
func InstallManifest(packageURL, iconURL, bundleID, bundleVersion, title string) ([]byte, error) {
	type asset struct {
		Kind string `plist:"kind"`
		URL  string `plist:"url"`
	}
	type item struct {
		Assets   []asset           `plist:"assets"`
		Metadata map[string]string `plist:"metadata"`
	}
	m := map[string][]item{"items": {{
		Assets:   []asset{{Kind: "software-package", URL: packageURL}, {Kind: "display-image", URL: iconURL}, {Kind: "full-size-image", URL: iconURL}},
		Metadata: map[string]string{"bundle-identifier": bundleID, "bundle-version": bundleVersion, "kind": "software", "title": title},
	}}}
	return plist.MarshalIndent(m, plist.XMLFormat, "\t")
}
