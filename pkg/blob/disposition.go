package blob

import (
	"strings"
	"unicode"
)

// ContentDisposition returns an "attachment" Content-Disposition value for filename, following
// RFC 6266: a quoted ASCII fallback (non-ASCII and control characters replaced by "_", quotes and
// backslashes escaped) and, when the name is not plain ASCII, a filename* parameter carrying the
// exact UTF-8 name (RFC 8187 percent-encoding). Control characters never reach the header, so a
// crafted file name cannot inject headers. An empty filename yields plain "attachment".
//
// It is shared by the S3 presigner (response-content-disposition) and the handler that serves
// filesystem objects itself, so both give browsers the same name.
func ContentDisposition(filename string) string {
	filename = strings.ToValidUTF8(filename, "\uFFFD")
	if filename == "" {
		return "attachment"
	}
	var fallback strings.Builder
	ascii := true
	for _, r := range filename {
		switch {
		case r > unicode.MaxASCII || unicode.IsControl(r):
			ascii = false
			fallback.WriteByte('_')
		case r == '"' || r == '\\':
			fallback.WriteByte('\\')
			fallback.WriteRune(r)
		default:
			fallback.WriteRune(r)
		}
	}
	v := `attachment; filename="` + fallback.String() + `"`
	if !ascii {
		v += "; filename*=UTF-8''" + encodeRFC8187(filename)
	}
	return v
}

// encodeRFC8187 percent-encodes every byte of s that is not an attr-char (RFC 8187 section 3.2.1).
func encodeRFC8187(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAttrChar(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

func isAttrChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}
