package appinfo

import (
	"archive/zip"
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// This test binary imports no family package, so the families registered here are the only ones.

// fakeFamily claims every file that starts with "FAKE" and returns an Info naming itself.
func fakeFamily(name string, priority int, fallback bool) Family {
	return Family{Name: name, Priority: priority, Fallback: fallback,
		ClaimFile: func(r io.ReaderAt, size int64) FileParser {
			head := make([]byte, 4)
			if n, _ := r.ReadAt(head, 0); n < 4 || string(head) != "FAKE" {
				return nil
			}
			return func(io.ReaderAt, int64) (*Info, error) { return &Info{Name: name}, nil }
		},
		ClaimZip: func(*zipread.Archive) ZipParser { return nil },
	}
}

func TestClaimOrder(t *testing.T) {
	// Registered in an order unlike the claim order: registration order must not matter.
	for _, f := range []Family{
		fakeFamily("zz-fallback", 9, true),
		fakeFamily("b", 0, false),
		fakeFamily("a-fallback", 0, true),
		fakeFamily("c", 0, false),
		fakeFamily("a", 0, false),
		fakeFamily("high", 5, false),
	} {
		Register(f)
	}
	want := []string{"high", "a", "b", "c", "zz-fallback", "a-fallback"}
	if got := Families(); !slices.Equal(got, want) {
		t.Fatalf("Families() = %q, want %q", got, want)
	}
	data := []byte("FAKE package")
	info, err := Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil || info.Name != "high" {
		t.Fatalf("Parse = %+v, %v; want the highest-priority family's claim", info, err)
	}

	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "the file is empty"},
		{"text", []byte("release notes"), "(high; a; b; c): found a text file"},
		{"png", []byte("\x89PNG\r\n\x1a\n0000"), "found a PNG image"},
		{"zip", zipOf(t, "notes.txt"), "a zip archive holding notes.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(bytes.NewReader(tc.data), int64(len(tc.data)))
			if errs.KindOf(err) != errs.Invalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error %v, want errs.Invalid mentioning %q", err, tc.want)
			}
		})
	}
}

// zipOf returns a zip archive holding empty entries of the given names.
func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		if _, err := zw.Create(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
