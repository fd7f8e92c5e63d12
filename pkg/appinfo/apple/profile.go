package apple

import (
	"bytes"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// ParseProfile reads an Apple provisioning profile (embedded.mobileprovision on iOS and tvOS,
// embedded.provisionprofile on macOS). A profile is a CMS (PKCS#7) signed envelope whose content
// is an XML property list; like app-info, ParseProfile takes the plist from between "<?xml" and
// "</plist>" in the DER bytes instead of decoding the CMS structure, and does not check the
// signature: Slipway shows what the profile says, the device enforces it on install.
func ParseProfile(data []byte) (*appinfo.Profile, error) {
	if len(data) == 0 {
		return nil, errs.Invalidf("the provisioning profile is empty")
	}
	start := bytes.Index(data, []byte("<?xml"))
	if start < 0 {
		return nil, errs.Invalidf("the provisioning profile holds no property list")
	}
	if !bytes.Contains(data[start:], []byte("<plist")) {
		return nil, errs.Invalidf("the provisioning profile holds no property list")
	}
	end := bytes.Index(data[start:], []byte("</plist>"))
	if end < 0 {
		return nil, errs.Invalidf("the provisioning profile's property list is truncated (no </plist>)")
	}
	d, err := decodePlist(data[start:start+end+len("</plist>")], "the provisioning profile")
	if err != nil {
		return nil, err
	}
	ent := d.dict("Entitlements")
	p := &appinfo.Profile{
		UUID:              d.str("UUID"),
		Name:              d.str("Name"),
		TeamName:          d.str("TeamName"),
		AppID:             appleFirst(ent.str("application-identifier"), ent.str("com.apple.application-identifier")),
		Platforms:         d.strs("Platform"),
		CreatedAt:         d.time("CreationDate"),
		ExpiresAt:         d.time("ExpirationDate"),
		Devices:           d.strs("ProvisionedDevices"),
		AllDevices:        d.bool("ProvisionsAllDevices"),
		GetTaskAllow:      ent.bool("get-task-allow") || ent.bool("com.apple.security.get-task-allow"),
		BetaReportsActive: ent.bool("beta-reports-active"),
	}
	if teams := d.strs("TeamIdentifier"); len(teams) > 0 {
		p.TeamID = teams[0]
	}
	if p.UUID == "" && p.Name == "" && p.TeamID == "" {
		return nil, errs.Invalidf("the provisioning profile has no UUID, Name or TeamIdentifier")
	}
	return p, nil
}

// releaseType derives the release type of an Apple package as decisions.md ("Upload") rules:
// appstore when it carries iTunesMetadata.plist; otherwise from its provisioning profile: debug
// when the profile allows debugging (get-task-allow), then for macOS apps release; for iOS and
// tvOS adhoc when it lists devices, enterprise when it provisions all devices, else appstore.
// Without a profile it is debug. (app-info differs: it calls any profile with devices adhoc and
// any other enterprise.)
func releaseType(platform appinfo.Platform, appStore bool, p *appinfo.Profile) string {
	switch {
	case appStore:
		return appinfo.ReleaseAppStore
	case p == nil, p.GetTaskAllow:
		return appinfo.ReleaseDebug
	case platform == appinfo.MacOS:
		return appinfo.ReleaseRelease
	case len(p.Devices) > 0:
		return appinfo.ReleaseAdhoc
	case p.AllDevices:
		return appinfo.ReleaseEnterprise
	}
	return appinfo.ReleaseAppStore
}
