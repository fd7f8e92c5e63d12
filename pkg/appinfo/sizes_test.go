package appinfo_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// buildZip returns a zip of the named entries, each holding its data, deflated.
func buildZip(t testing.TB, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		if err == nil {
			_, err = w.Write([]byte(e[1]))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func open(t testing.TB, data []byte) *zipread.Archive {
	t.Helper()
	a, err := zipread.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// byTop cuts by top-level folder.
func byTop(name string) (string, string) {
	top, folder := appinfo.TopFolder(name)
	if !folder {
		return "", ""
	}
	return top + "/", appinfo.KindFolder
}

func sums(b *appinfo.Breakdown) (download, install int64, files int) {
	for _, c := range b.Components {
		download += c.Download
		install += c.Install
		files += c.Files
	}
	return
}

func TestZipBreakdown(t *testing.T) {
	data := buildZip(t, [2]string{"a/", ""}, [2]string{"a/x", strings.Repeat("x", 5000)}, [2]string{"a/y", "yy"},
		[2]string{"b/z", strings.Repeat("z", 300)}, [2]string{"root.txt", "r"})
	b := appinfo.ZipBreakdown(open(t, data), byTop)
	if b.Download != int64(len(data)) || b.Install != 5303 || b.Files != 4 {
		t.Fatalf("Download %d Install %d Files %d, want %d 5303 4", b.Download, b.Install, b.Files, len(data))
	}
	dl, in, files := sums(b)
	if dl != b.Download || in != b.Install || files != b.Files {
		t.Errorf("components add up to %d %d %d", dl, in, files)
	}
	var names []string
	for _, c := range b.Components {
		names = append(names, c.Name)
	}
	// Largest download first; the overhead of five entries outweighs b/'s 300 deflated bytes.
	if got := strings.Join(names, ","); got != "Archive overhead,a/,b/,Other" {
		t.Errorf("components %s", got)
	}
	if b.Largest[0].Path != "a/x" || b.Largest[0].Install != 5000 || len(b.Largest) != 4 {
		t.Errorf("Largest = %v", b.Largest)
	}
}

// TestZipBreakdownLyingSizes: a directory whose compressed sizes add up to more than the file
// gives no breakdown (nil), and Parse still gives Download.
func TestZipBreakdownLyingSizes(t *testing.T) {
	data := buildZip(t, [2]string{"a/x", strings.Repeat("x", 5000)}, [2]string{"b/y", "y"})
	// The central directory's first header: its compressed size (offset 20) claims 1 GiB.
	cd := bytes.Index(data, []byte("PK\x01\x02"))
	binary.LittleEndian.PutUint32(data[cd+20:], 1<<30)
	if b := appinfo.ZipBreakdown(open(t, data), byTop); b != nil {
		t.Errorf("ZipBreakdown = %+v, want nil", b)
	}
}

// TestZipBreakdownCaps: a directory of thousands of components and of long names keeps at most
// MaxComponents components and MaxListedFiles files, names cut, sums exact.
func TestZipBreakdownCaps(t *testing.T) {
	var entries [][2]string
	for i := range 3000 {
		entries = append(entries, [2]string{fmt.Sprintf("f%04d/%s", i, strings.Repeat("n", 2000)), strings.Repeat("d", i)})
	}
	data := buildZip(t, entries...)
	b := appinfo.ZipBreakdown(open(t, data), byTop)
	if len(b.Components) > appinfo.MaxComponents || len(b.Largest) != appinfo.MaxListedFiles || b.Files != 3000 {
		t.Fatalf("%d components, %d listed of %d files", len(b.Components), len(b.Largest), b.Files)
	}
	dl, in, files := sums(b)
	if dl != b.Download || dl != int64(len(data)) || in != b.Install || files != b.Files {
		t.Errorf("components add up to %d %d %d; want %d %d %d", dl, in, files, len(data), b.Install, b.Files)
	}
	for _, f := range b.Largest {
		if len(f.Path) > 520 {
			t.Fatalf("a %d-byte path kept", len(f.Path))
		}
	}
	last := b.Largest[len(b.Largest)-1]
	if last.Install != 2000 { // the 1000 largest of 0..2999
		t.Errorf("last listed %v", last)
	}
}

// TestExpand lists a nested package's files in place of it, keeping the order and the promise
// that every file left out is no larger than the last listed.
func TestExpand(t *testing.T) {
	outer := &appinfo.Breakdown{Files: 3, Largest: []appinfo.File{{"big.bin", 900, 900}, {"inner.hap", 500, 500}, {"small", 1, 1}}}
	inner := &appinfo.Breakdown{Files: 2, Largest: []appinfo.File{{"libs/a.so", 300, 400}, {"x", 10, 10}}}
	outer.Expand("inner.hap", inner)
	want := []appinfo.File{{"big.bin", 900, 900}, {"inner.hap/libs/a.so", 300, 400}, {"inner.hap/x", 10, 10}, {"small", 1, 1}}
	if fmt.Sprint(outer.Largest) != fmt.Sprint(want) || outer.Files != 4 {
		t.Errorf("Largest %v Files %d, want %v 4", outer.Largest, outer.Files, want)
	}
	// A cut list stays cut at its last size: the merged list drops what falls below.
	outer = &appinfo.Breakdown{Files: 10, Largest: []appinfo.File{{"inner.hap", 500, 500}, {"b", 50, 50}}}
	outer.Expand("inner.hap", inner)
	if fmt.Sprint(outer.Largest) != fmt.Sprint([]appinfo.File{{"inner.hap/libs/a.so", 300, 400}, {"b", 50, 50}}) || outer.Files != 11 {
		t.Errorf("Largest %v Files %d", outer.Largest, outer.Files)
	}
	// Absent: nothing changes.
	outer.Expand("nope", inner)
	if outer.Files != 11 {
		t.Errorf("Files %d", outer.Files)
	}
	var nilB *appinfo.Breakdown
	nilB.Expand("x", inner) // no panic
	if nilB.LargestFiles(20) != nil {
		t.Error("LargestFiles of nil")
	}
}
