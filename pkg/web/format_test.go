package web

import (
	"testing"

	"github.com/slipwayhq/slipway/pkg/errs"
)

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KB", 42699: "41.7 KB", 4 << 20: "4.0 MB", 3<<30 + 1<<29: "3.5 GB",
	} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestQRSize(t *testing.T) {
	for in, want := range map[string]int{"": 128, "thumb": 128, "medium": 256, "large": 512, "64": 64, "2048": 2048} {
		if got, err := qrSize(in); err != nil || got != want {
			t.Errorf("qrSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"0", "63", "2049", "-1", "big", " 128", "0x80", "Thumb"} {
		if _, err := qrSize(in); !errs.Is(err, errs.Invalid) {
			t.Errorf("qrSize(%q) accepted", in)
		}
	}
}

func TestInstallURL(t *testing.T) {
	for in, want := range map[string]string{
		"itms-services://?action=download-manifest&url=https://x/y": "itms-services://?action=download-manifest&url=https://x/y",
		"https://x/download/releases/1":                             "https://x/download/releases/1",
		"javascript:alert(1)":                                       "#",
	} {
		if got := string(installURL(in)); got != want {
			t.Errorf("installURL(%q) = %q", in, got)
		}
	}
}

func TestEtagMatch(t *testing.T) {
	const tag = `"abc"`
	for h, want := range map[string]bool{`"abc"`: true, `W/"abc"`: true, `"x", "abc"`: true, "*": true, `"abd"`: false, "": false} {
		if ETagMatch(h, tag) != want {
			t.Errorf("ETagMatch(%q) != %v", h, want)
		}
	}
}

// The retention form's "Max size" reads sizes as people type them and shows them back so.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"200 MB": 200 << 20, "200MB": 200 << 20, "1.5 GB": 3 << 29, "512 KiB": 512 << 10, "2g": 2 << 30, "0": 0,
		"123456": 123456, "123456 bytes": 123456, " 1,024 B ": 1024, "1 TB": 1 << 40,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-1 MB", "200 parsecs", "1e400", "MB", "99999999999 TB"} {
		if n, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", bad, n)
		}
	}
	for n, want := range map[int64]string{0: "0", 2 << 30: "2 GB", 200 << 20: "200 MB", 1536: "1536 B", 1000: "1000 B"} {
		if got := formSize(n); got != want {
			t.Errorf("formSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := parseSize(formSize(n)); err != nil || back != n {
			t.Errorf("parseSize(formSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    any
		want string
	}{{1, "1 install"}, {int64(0), "0 installs"}, {2, "2 installs"}} {
		if got := plural(c.n, "install"); got != c.want {
			t.Errorf("plural(%v) = %q, want %q", c.n, got, c.want)
		}
	}
}
