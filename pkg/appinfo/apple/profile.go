package apple

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
		Entitlements:      entitlements(ent),
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

// Caps on the entitlements kept from a profile. Real profiles carry a few dozen keys with short
// values; a wildcard profile's longest are keychain groups and iCloud container lists.
const (
	maxEntitlements        = 128 // keys kept, the first in sorted order
	maxEntitlementKeyBytes = 256
	maxEntitlementBytes    = 512 // of one rendered value
	maxEntitlementItems    = 64  // array elements or dictionary keys rendered
)

// entitlements renders the profile's Entitlements dictionary for appinfo.Profile.Entitlements:
// a boolean as "true" or "false", a string as is, a number in decimal, a date in RFC 3339, data as
// "<N bytes>", an array as its elements joined by ", " (a nested one in brackets), a dictionary as
// "{" + its sorted keys joined by ", " + "}". Control characters are dropped and each value is cut
// at maxEntitlementBytes; nil when the profile has none.
func entitlements(ent plistDict) map[string]string {
	if len(ent) == 0 {
		return nil
	}
	keys := make([]string, 0, len(ent))
	for k := range ent {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string]string, min(len(keys), maxEntitlements))
	for _, k := range keys {
		if len(out) == maxEntitlements {
			break
		}
		key := entitlementText(k, maxEntitlementKeyBytes)
		if key == "" {
			continue
		}
		if _, dup := out[key]; !dup {
			out[key] = entitlementText(renderEntitlement(ent[k], 0), maxEntitlementBytes)
		}
	}
	return out
}

// renderEntitlement renders one plist value (see entitlements).
func renderEntitlement(v any, depth int) string {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	case string:
		return v
	case uint64:
		return strconv.FormatUint(v, 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case []byte:
		return fmt.Sprintf("<%d bytes>", len(v))
	case []any:
		parts := make([]string, 0, min(len(v), maxEntitlementItems))
		for i, e := range v {
			if i == maxEntitlementItems || depth > 2 {
				parts = append(parts, "…")
				break
			}
			parts = append(parts, renderEntitlement(e, depth+1))
		}
		if depth > 0 {
			return "[" + strings.Join(parts, ", ") + "]"
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) > maxEntitlementItems {
			keys = append(keys[:maxEntitlementItems], "…")
		}
		return "{" + strings.Join(keys, ", ") + "}"
	}
	return ""
}

// entitlementText drops control characters and invalid UTF-8 from s and cuts it at max bytes.
func entitlementText(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	s = strings.TrimSpace(s)
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
