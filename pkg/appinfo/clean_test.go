package appinfo

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// CleanText keeps what is printable of a package's text: it cuts at a NUL, drops control
// characters and invalid UTF-8, trims, and bounds the length on a rune boundary.
func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		"  Acme Corp  ":          "Acme Corp",
		"Acme\x00garbage":        "Acme",
		"Ac\x1bme\r\n":           "Acme",
		"Caf\xe9 \xff":           "Caf",
		"Zürich\u200b":           "Zürich\u200b",         // a format character is not a control character
		strings.Repeat("é", 600): strings.Repeat("é", 5), // (max 11, below)
	} {
		max := 1024
		if strings.HasPrefix(in, "é") {
			max = 11 // cuts inside the sixth é: backs off to the fifth
		}
		if got := CleanText(in, max); got != want || !utf8.ValidString(got) {
			t.Errorf("CleanText(%q, %d) = %q, want %q", in, max, got, want)
		}
	}
}
