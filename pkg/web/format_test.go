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
