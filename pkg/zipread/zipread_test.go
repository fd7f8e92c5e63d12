package zipread

import (
	"archive/zip"
	"bytes"
	"fmt"
	"testing"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// TestOpenHonestArchives: the directory walk accepts what archive/zip writes, including zip64
// archives (over 65,535 entries) and archives with bytes before them (self-extracting).
func TestOpenHonestArchives(t *testing.T) {
	small := realZip(t, "Payload/A.app/Info.plist", "Payload/A.app/icon.png")
	var many bytes.Buffer
	zw := zip.NewWriter(&many)
	for i := range 70_000 {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%d", i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	prefixed := append(bytes.Repeat([]byte("MZ stub "), 512), small...)
	for _, tc := range []struct {
		name  string
		data  []byte
		files int
	}{
		{"small", small, 2},
		{"zip64 with 70,000 entries", many.Bytes(), 70_000},
		{"bytes before the archive", prefixed, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Open(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Files()) != tc.files {
				t.Fatalf("%d files, want %d", len(a.Files()), tc.files)
			}
			if tc.files == 2 {
				b, err := a.ReadName("Payload/A.app/Info.plist", 1<<10)
				if err != nil || string(b) != "content of Payload/A.app/Info.plist" {
					t.Errorf("ReadName = %q, %v", b, err)
				}
			}
		})
	}
}

// TestOpenRefusesBadDirectories: end records that point nowhere and truncated archives are
// errs.Invalid.
func TestOpenRefusesBadDirectories(t *testing.T) {
	small := realZip(t, "a", "b")
	for name, data := range map[string][]byte{
		"empty":               nil,
		"no end record":       bytes.Repeat([]byte{0}, 200),
		"end record only 21":  small[len(small)-21:],
		"truncated":           small[:len(small)-30],
		"directory past end":  append(bytes.Repeat([]byte{0}, 10), endRecord(1, 46, 1<<30)...),
		"zip64 locator wrong": append(zip64End(1, 46, 0, 1<<40), endRecord(0xffff, 0xffffffff, 0xffffffff)...),
	} {
		_, err := Open(bytes.NewReader(data), int64(len(data)))
		if errs.KindOf(err) != errs.Invalid {
			t.Errorf("%s: %v, want errs.Invalid", name, err)
		}
	}
}
