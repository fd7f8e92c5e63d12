package android

import (
	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// parseAPK reads an APK: its binary AndroidManifest.xml, and resources.arsc (when present) to
// resolve the label, versionName and launcher icon references.
func parseAPK(a *zipread.Archive) (*appinfo.Info, error) {
	f := a.File("AndroidManifest.xml")
	if f == nil {
		return nil, errs.Invalidf("the APK has no AndroidManifest.xml")
	}
	manifest, err := a.ReadFile(f, MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	m, err := decodeAXML(manifest)
	if err != nil {
		return nil, err
	}
	var res androidResources
	if f := a.File("resources.arsc"); f != nil {
		// Its header first: a table that is none is refused before it is inflated whole.
		head, err := a.ReadHead(f, 12)
		if err != nil {
			return nil, err
		}
		if len(head) < 12 || androidU16(head, 0) != androidChunkTable || androidU16(head, 2) < 12 || uint32(androidU16(head, 2)) > androidU32(head, 4) {
			_, err := decodeARSC(head)
			return nil, err
		}
		b, err := a.ReadFile(f, MaxResourcesBytes)
		if err != nil {
			return nil, err
		}
		t, err := decodeARSC(b)
		if err != nil {
			return nil, err
		}
		res = t
	}
	info, err := androidInfo(appinfo.FormatAPK, m, res)
	if err != nil {
		return nil, err
	}
	if info.Icon, err = androidIcon(a, "", m, res); err != nil {
		return nil, err
	}
	info.Architectures = androidABIs(a, false)
	info.Sizes = appinfo.ZipBreakdown(a, apkCut)
	return info, nil
}
