package distribution

import (
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// The short texts and URLs more than one part takes from clients (names, release types, links).

// ShortText trims v and checks it is valid text of at most 255 characters.
func ShortText(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if utf8.RuneCountInString(v) > 255 || !utf8.ValidString(v) {
		return "", errs.Field(field, "must be valid text of at most 255 characters")
	}
	return v, nil
}

var releaseTypeRe = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// NormReleaseType lower-cases a release type and checks it is one short word ("" for none).
func NormReleaseType(v string) (string, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v != "" && !releaseTypeRe.MatchString(v) {
		return "", errs.Field("release_type", "must be a word such as debug, beta, adhoc, release or enterprise")
	}
	return v, nil
}

// WebURL trims v and checks it is an http or https URL of at most 2048 characters ("" for none).
func WebURL(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(v) > 2048 {
		return "", errs.Field(field, "must be an http or https URL of at most 2048 characters")
	}
	return v, nil
}
