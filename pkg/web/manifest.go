package web

import (
	"encoding/json"
	"strconv"

	"howett.net/plist"
)

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

// HarmonyApp is what a HarmonyOS install manifest says of a release.
type HarmonyApp struct {
	BundleName, VersionName, VersionCode, Label string
	// DeployDomain is the host the manifest and the package are served from.
	DeployDomain string
	IconURL      string
	// MinAPIVersion and TargetAPIVersion in the form build-profile.json5 gives them ("5.0.0(12)").
	MinAPIVersion, TargetAPIVersion string
	// Module is the .hap's module name and type ("entry"); DeviceTypes its module.json deviceTypes.
	Module, ModuleType string
	DeviceTypes        []string
	PackageURL         string
	// PackageHash is the package's SHA-256 in hex.
	PackageHash string
}

// HarmonyManifest renders HarmonyOS's enterprise (internal test) install manifest, the JSON5 file a
// store://enterprise/manifest?url= link points a device at; plain JSON is JSON5. Its layout
// follows the manifests hpack (github.com/iHongRen/hpack, signInfo.py) writes before signing:
// {"app": {bundleName, bundleType, versionCode, versionName, label, deployDomain, icons {normal,
// large}, minAPIVersion, targetAPIVersion, modules [{name, type, deviceTypes, packageUrl,
// packageHash}]}}. Slipway does not sign it: see docs/deploy.md.
func HarmonyManifest(a HarmonyApp) ([]byte, error) {
	type module struct {
		Name        string   `json:"name"`
		Type        string   `json:"type"`
		DeviceTypes []string `json:"deviceTypes"`
		PackageURL  string   `json:"packageUrl"`
		PackageHash string   `json:"packageHash"`
	}
	type icons struct {
		Normal string `json:"normal"`
		Large  string `json:"large"`
	}
	type app struct {
		BundleName       string   `json:"bundleName"`
		BundleType       string   `json:"bundleType"`
		VersionCode      any      `json:"versionCode"`
		VersionName      string   `json:"versionName"`
		Label            string   `json:"label"`
		DeployDomain     string   `json:"deployDomain"`
		Icons            icons    `json:"icons"`
		MinAPIVersion    string   `json:"minAPIVersion,omitempty"`
		TargetAPIVersion string   `json:"targetAPIVersion,omitempty"`
		Modules          []module `json:"modules"`
	}
	var code any = a.VersionCode
	if n, err := strconv.ParseInt(a.VersionCode, 10, 64); err == nil {
		code = n // versionCode is a number in app.json5
	}
	if a.DeviceTypes == nil {
		a.DeviceTypes = []string{}
	}
	m := map[string]app{"app": {BundleName: a.BundleName, BundleType: "app", VersionCode: code, VersionName: a.VersionName,
		Label: a.Label, DeployDomain: a.DeployDomain, Icons: icons{Normal: a.IconURL, Large: a.IconURL},
		MinAPIVersion: a.MinAPIVersion, TargetAPIVersion: a.TargetAPIVersion,
		Modules: []module{{Name: a.Module, Type: a.ModuleType, DeviceTypes: a.DeviceTypes, PackageURL: a.PackageURL, PackageHash: a.PackageHash}}}}
	return json.MarshalIndent(m, "", "  ")
}
