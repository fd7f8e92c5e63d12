package distribution

import (
	"regexp"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Apple device identifiers come in three shapes: 40 hex digits (devices before 2018), 8 and 16
// hex digits joined by a dash (newer iPhones, iPads and Apple silicon Macs), and a UUID (Intel
// Macs, as the developer portal takes them).
var (
	udidLegacyRe = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)
	udidModernRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{16}$`)
	udidMacRe    = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// NormalizeUDID checks a UDID is in one of Apple's formats and returns its canonical form (40-hex
// ones lower case, the others upper case, as devices report them), or an errs.Invalid.
func NormalizeUDID(udid string) (string, error) {
	udid = strings.TrimSpace(udid)
	switch {
	case udidLegacyRe.MatchString(udid):
		return strings.ToLower(udid), nil
	case udidModernRe.MatchString(udid), udidMacRe.MatchString(udid):
		return strings.ToUpper(udid), nil
	}
	return "", errs.Field("udid", "is not an Apple device identifier (40 hex digits, 8-16 hex digits such as 00008030-001A2B3C4D5E6F70, or a Mac's UUID)")
}

// IsMacUDID reports whether a UDID has the shape of an Intel Mac's (a UUID).
func IsMacUDID(udid string) bool { return udidMacRe.MatchString(udid) }
