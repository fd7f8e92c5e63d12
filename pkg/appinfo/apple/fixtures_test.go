package apple

import (
	"bytes"
	"image/png"
	"os"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// appleWant is what the fixtures README (and, where it is silent, plistlib) says a package holds.
// ReleaseType follows Slipway's rule from decisions.md, not app-info's.
type appleWant struct {
	file                                              string
	platform                                          appinfo.Platform
	format                                            appinfo.Format
	name, bundleID, release, build, minOS, device, rt string
	profile                                           *appleWantProfile
	iconW, iconH                                      int // 0: no icon
}

type appleWantProfile struct {
	teamName, teamID, name string
	expires                time.Time
	devices                int
	allDevices             bool
}

func appleUTC(y int, mo time.Month, d, h, mi, s int) time.Time {
	return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
}

var appleFixtures = []appleWant{
	{
		file: "ios/appinfodemo-iphone-1.2.3-5.ipa", platform: appinfo.IOS, format: appinfo.FormatIPA,
		name: "AppInfoDemo", bundleID: "com.icyleaf.AppInfoDemo", release: "1.2.3", build: "5", minOS: "9.3",
		device: appinfo.DeviceIPhone, rt: appinfo.ReleaseDebug, // development profile: get-task-allow
		profile: &appleWantProfile{"QYER Inc", "5PJA6N5A3B", "iOS Team Provisioning Profile: *", appleUTC(2017, 7, 27, 9, 44, 49), 100, false},
	},
	{
		file: "ios/bundle-ipad-1.0-1.ipa", platform: appinfo.IOS, format: appinfo.FormatIPA,
		name: "bundle", bundleID: "com.icyleaf.bundle", release: "1.0", build: "1", minOS: "9.3",
		device: appinfo.DeviceIPad, rt: appinfo.ReleaseAppStore, // no devices, not all devices, no get-task-allow
		profile: &appleWantProfile{"QYER Inc", "5PJA6N5A3B", "XC: *", appleUTC(2017, 4, 12, 9, 37, 18), 0, false},
		iconW:   167, iconH: 167, // AppIcon83.5x83.5@2x~ipad.png, CgBI-crushed
	},
	{
		file: "ios/demo-universal-enterprise-1.0-1.ipa", platform: appinfo.IOS, format: appinfo.FormatIPA,
		name: "Demo", bundleID: "com.icyleaf.test.Demo", release: "1.0", build: "1", minOS: "14.3",
		device: appinfo.DeviceUniversal, rt: appinfo.ReleaseEnterprise,
		profile: &appleWantProfile{"Niceliving Beijing Technology Co. Ltd.", "72LA85G59H", "iOS Team Inhouse Provisioning Profile: com.icyleaf.test.Demo", appleUTC(2022, 1, 15, 6, 40, 53), 0, true},
	},
	{
		file: "ios/ios-simple-objc-1.0-1.ipa", platform: appinfo.IOS, format: appinfo.FormatIPA,
		name: "ios-simple-objc", bundleID: "Bitrise.ios-simple-objc", release: "1.0", build: "1", minOS: "8.1",
		device: appinfo.DeviceUniversal, rt: appinfo.ReleaseDebug,
		profile: &appleWantProfile{"BITFALL FEJLESZTO KORLATOLT FELELOSSEGU TARSASAG", "72SA8V3WYL", "BitriseBot-Wildcard", appleUTC(2018, 2, 17, 9, 33, 57), 1, false},
	},
	{
		file: "ios/test-assetscar-icon-1.0-1.ipa", platform: appinfo.IOS, format: appinfo.FormatIPA,
		name: "Test", bundleID: "com.ineva.test-rtmp.Test", release: "1.0", build: "1", minOS: "13.1",
		device: appinfo.DeviceUniversal, rt: appinfo.ReleaseDebug,
		profile: &appleWantProfile{"Qin Junru", "GC6FQHF5NF", "iOS Team Provisioning Profile: com.ineva.test-rtmp.Test", appleUTC(2022, 5, 9, 6, 59, 38), 35, false},
		// AppIcon60x60 is declared but only Assets.car exists: no icon, no error.
	},
	{
		file: "ios/very-capable-app-1.0-1.ipa", platform: appinfo.IOS, format: appinfo.FormatIPA,
		name: "very-capable-app", bundleID: "org.fastlane.very-capable-app", release: "1.0", build: "1", minOS: "11.2",
		device: appinfo.DeviceUniversal, rt: appinfo.ReleaseDebug,
		profile: &appleWantProfile{"TestFixture", "TestFixture", "org.fastlane.very-capable-app Development", appleUTC(2019, 4, 7, 1, 27, 21), 1, false},
	},
	{
		file: "ios/helloworld-legacy-ios5-1.0-1.0.ipa", platform: appinfo.IOS, format: appinfo.FormatIPA,
		name: "helloworld", bundleID: "com.kthcorp.helloworld", release: "1.0", build: "1.0", minOS: "5.0",
		device: appinfo.DeviceUniversal, rt: appinfo.ReleaseEnterprise,
		profile: &appleWantProfile{"", "M8ZCXDJQW4", "helloworld", appleUTC(2012, 6, 20, 5, 48, 15), 0, true}, // no TeamName key
	},
	{
		file: "macos/guiapp-unsigned-1.0-1.zip", platform: appinfo.MacOS, format: appinfo.FormatMacZip,
		name: "GuiApp", bundleID: "com.icyleaf.macos.GUIApp", release: "1.0", build: "1", minOS: "11.3",
		device: appinfo.DeviceMac, rt: appinfo.ReleaseDebug, // no provisioning profile
		iconW: 256, iconH: 256, // the largest PNG (ic13) of AppIcon.icns
	},
}

func appleParseFile(t *testing.T, path string) (*appinfo.Info, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return appinfo.Parse(f, st.Size())
}

func TestAppleFixtures(t *testing.T) {
	for _, w := range appleFixtures {
		t.Run(w.file, func(t *testing.T) {
			info, err := appleParseFile(t, fixtures.Path(t, w.file))
			if err != nil {
				t.Fatal(err)
			}
			checkStr := func(field, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %q, want %q", field, got, want)
				}
			}
			checkStr("Platform", string(info.Platform), string(w.platform))
			checkStr("Format", string(info.Format), string(w.format))
			checkStr("Name", info.Name, w.name)
			checkStr("BundleID", info.BundleID, w.bundleID)
			checkStr("ReleaseVersion", info.ReleaseVersion, w.release)
			checkStr("BuildVersion", info.BuildVersion, w.build)
			checkStr("MinOS", info.MinOS, w.minOS)
			checkStr("Device", info.Device, w.device)
			checkStr("ReleaseType", info.ReleaseType, w.rt)
			if info.AppStore {
				t.Error("AppStore = true, but no fixture carries iTunesMetadata.plist")
			}
			switch p := info.Profile; {
			case w.profile == nil && p != nil:
				t.Errorf("Profile = %+v, want none", p)
			case w.profile != nil && p == nil:
				t.Error("Profile = nil, want one")
			case w.profile != nil:
				checkStr("Profile.TeamName", p.TeamName, w.profile.teamName)
				checkStr("Profile.TeamID", p.TeamID, w.profile.teamID)
				checkStr("Profile.Name", p.Name, w.profile.name)
				if !p.ExpiresAt.Equal(w.profile.expires) {
					t.Errorf("Profile.ExpiresAt = %v, want %v", p.ExpiresAt, w.profile.expires)
				}
				if len(p.Devices) != w.profile.devices {
					t.Errorf("len(Profile.Devices) = %d, want %d", len(p.Devices), w.profile.devices)
				}
				if p.AllDevices != w.profile.allDevices {
					t.Errorf("Profile.AllDevices = %v, want %v", p.AllDevices, w.profile.allDevices)
				}
				if !p.Expired(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
					t.Error("every fixture profile has expired by 2026")
				}
			}
			appleCheckIcon(t, info.Icon, w.iconW, w.iconH)
		})
	}
}

// appleCheckIcon checks an icon is a standard PNG of w×h (or absent when w is 0).
func appleCheckIcon(t *testing.T, icon *appinfo.Icon, w, h int) {
	t.Helper()
	if w == 0 {
		if icon != nil {
			t.Errorf("Icon is %d×%d, want none", icon.Width, icon.Height)
		}
		return
	}
	if icon == nil {
		t.Fatalf("Icon = nil, want %d×%d", w, h)
	}
	if icon.ContentType != "image/png" || icon.Width != w || icon.Height != h {
		t.Errorf("Icon = %s %d×%d, want image/png %d×%d", icon.ContentType, icon.Width, icon.Height, w, h)
	}
	img, err := png.Decode(bytes.NewReader(icon.Data))
	if err != nil {
		t.Fatalf("the icon is not a standard PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("the icon decodes to %v, want %d×%d", b, w, h)
	}
}

func TestAppleInvalidFixtures(t *testing.T) {
	for _, file := range []string{"ios/invalid/not-a-zip.ipa", "ios/invalid/payload-without-app.ipa"} {
		t.Run(file, func(t *testing.T) {
			info, err := appleParseFile(t, fixtures.Path(t, file))
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("Parse = %+v, %v; want an errs.Invalid error", info, err)
			}
			t.Log(err)
		})
	}
}

// TestParseIPAPayloadWithoutApp calls the IPA parser directly, past the dispatcher, on an archive
// whose Payload/ holds no app, to check its own message.
func TestParseIPAPayloadWithoutApp(t *testing.T) {
	a := appleOpenZip(t, fixtures.Read(t, "ios/invalid/payload-without-app.ipa"))
	_, err := parseIPA(a)
	if !errs.Is(err, errs.Invalid) || err.Error() != "Payload/ holds no .app bundle with an Info.plist" {
		t.Fatalf("parseIPA = %v", err)
	}
}

// appleWantProfileFile is what the fixtures README says of a standalone profile.
type appleWantProfileFile struct {
	file, name, platform, appID string
	devices                     int
	getTaskAllow, betaReports   bool
	expires                     time.Time
	rt                          string // Slipway's release type for an app of the profile's platform
}

func TestProfileFixtures(t *testing.T) {
	const team, teamID = "Niceliving (Beijing) Technology Co., Ltd.", "WKR87TTKML"
	const appID = "WKR87TTKML.com.icyleaf.appinfo.test"
	for _, w := range []appleWantProfileFile{
		{"ios/provisioning/ios_development.mobileprovision", "iOS Full Development", "iOS", appID, 1, true, false, appleUTC(2021, 7, 21, 8, 43, 27), appinfo.ReleaseDebug},
		{"ios/provisioning/ios_adhoc.mobileprovision", "iOS Full AdHoc", "iOS", appID, 1, false, false, appleUTC(2020, 10, 24, 8, 40, 28), appinfo.ReleaseAdhoc},
		{"ios/provisioning/ios_appstore.mobileprovision", "iOS Full AppStore", "iOS", appID, 0, false, true, appleUTC(2020, 10, 24, 8, 40, 28), appinfo.ReleaseAppStore},
		// macOS profiles carry no get-task-allow: a macOS app with either is "release".
		{"ios/provisioning/macos_development.provisionprofile", "macOS Full development", "OSX", appID, 1, false, false, appleUTC(2021, 7, 21, 8, 44, 2), appinfo.ReleaseRelease},
		{"ios/provisioning/macos_appstore.provisionprofile", "macOS Full appstore", "OSX", appID, 0, false, false, appleUTC(2020, 10, 24, 8, 40, 28), appinfo.ReleaseRelease},
	} {
		t.Run(w.file, func(t *testing.T) {
			p, err := ParseProfile(fixtures.Read(t, w.file))
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != w.name || p.TeamName != team || p.TeamID != teamID || p.AppID != w.appID {
				t.Errorf("profile = %q team %q (%s) app %q", p.Name, p.TeamName, p.TeamID, p.AppID)
			}
			if len(p.Platforms) != 1 || p.Platforms[0] != w.platform {
				t.Errorf("Platforms = %v, want [%s]", p.Platforms, w.platform)
			}
			if len(p.Devices) != w.devices || p.AllDevices {
				t.Errorf("devices = %d (all %v), want %d", len(p.Devices), p.AllDevices, w.devices)
			}
			if p.GetTaskAllow != w.getTaskAllow || p.BetaReportsActive != w.betaReports {
				t.Errorf("get-task-allow %v beta-reports-active %v, want %v %v", p.GetTaskAllow, p.BetaReportsActive, w.getTaskAllow, w.betaReports)
			}
			if !p.ExpiresAt.Equal(w.expires) || p.UUID == "" || p.CreatedAt.IsZero() {
				t.Errorf("expires %v (want %v), UUID %q, created %v", p.ExpiresAt, w.expires, p.UUID, p.CreatedAt)
			}
			platform := appinfo.IOS
			if w.platform == "OSX" {
				platform = appinfo.MacOS
			}
			if rt := releaseType(platform, false, p); rt != w.rt {
				t.Errorf("release type = %s, want %s", rt, w.rt)
			}
		})
	}
	for _, file := range []string{
		"ios/provisioning/invalid_empty.mobileprovision",
		"ios/provisioning/invalid_missing_plist_block.mobileprovision",
		"ios/provisioning/invalid_missing_plist_tag.mobileprovision",
	} {
		t.Run(file, func(t *testing.T) {
			p, err := ParseProfile(fixtures.Read(t, file))
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("ParseProfile = %+v, %v; want an errs.Invalid error", p, err)
			}
			t.Log(err)
		})
	}
}
