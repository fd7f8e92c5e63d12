package android

// Hooks for the external tests (package android_test), which import androidtest.

import (
	"bytes"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// AndroidParseZip is Parse restricted to the Android parsers: an APK when the archive has
// AndroidManifest.xml, else an app bundle.
func AndroidParseZip(b []byte) (*appinfo.Info, error) {
	a, err := zipread.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	if a.File("AndroidManifest.xml") != nil {
		return parseAPK(a)
	}
	return parseAAB(a)
}

// AndroidDecodeAPK runs the archive-free part of the APK parser on a binary manifest and a
// resources.arsc (nil for none): the Info without its icon, and the icon files the manifest's
// icon and roundIcon resolve to.
func AndroidDecodeAPK(manifest, arsc []byte) (*appinfo.Info, []string, error) {
	m, err := decodeAXML(manifest)
	if err != nil {
		return nil, nil, err
	}
	var res androidResources
	if arsc != nil {
		t, err := decodeARSC(arsc)
		if err != nil {
			return nil, nil, err
		}
		res = t
	}
	return androidDecodeRest(m, res, appinfo.FormatAPK)
}

// AndroidDecodeAAB is AndroidDecodeAPK for an app bundle's protobuf manifest and resources.pb.
func AndroidDecodeAAB(manifest, pb []byte) (*appinfo.Info, []string, error) {
	m, err := decodeAABManifest(manifest)
	if err != nil {
		return nil, nil, err
	}
	var res androidResources
	if pb != nil {
		res = newAABResources(pb)
	}
	return androidDecodeRest(m, res, appinfo.FormatAAB)
}

func androidDecodeRest(m *androidManifest, res androidResources, format appinfo.Format) (*appinfo.Info, []string, error) {
	info, err := androidInfo(format, m, res)
	if err != nil {
		return nil, nil, err
	}
	var paths []string
	for _, f := range []androidField{androidFieldIcon, androidFieldRoundIcon} {
		srcs, err := androidIconSources(m.fields[f], res)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range srcs {
			paths = append(paths, s.path)
		}
	}
	return info, paths, nil
}

// AndroidRasterSize exposes the PNG/WebP header reader.
func AndroidRasterSize(b []byte) (ctype string, w, h int, ok bool) { return androidRasterSize(b) }
