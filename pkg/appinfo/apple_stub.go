package appinfo

// Placeholder: replaced by the Apple parsers (ipa.go, macos.go, pkg.go, profile.go, cgbi.go, icns.go).

import (
	"io"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

func findIPAInfoPlist(a *zipread.Archive) string    { return "" }
func findMacAppInfoPlist(a *zipread.Archive) string { return "" }
func parseIPA(a *zipread.Archive) (*Info, error)    { return nil, errs.Invalidf("ipa: not implemented") }
func parseMacZip(a *zipread.Archive) (*Info, error) {
	return nil, errs.Invalidf("macos: not implemented")
}
func parsePKG(r io.ReaderAt, size int64) (*Info, error) {
	return nil, errs.Invalidf("pkg: not implemented")
}
