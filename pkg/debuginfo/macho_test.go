package debuginfo

import (
	"archive/zip"
	"bytes"
	"debug/macho"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// referenceSlices reads a file's architectures and UUIDs with Go's debug/macho, the reference the header
// reader is checked against.
func referenceSlices(t testing.TB, data []byte) []Slice {
	t.Helper()
	one := func(f *macho.File, size int64) Slice {
		for _, l := range f.Loads {
			if raw := l.Raw(); len(raw) >= 24 && f.ByteOrder.Uint32(raw) == loadCmdUUID {
				return Slice{UUID: formatUUID(raw[8:24], true), Arch: archName(f.Cpu, f.SubCpu), Size: size}
			}
		}
		t.Fatal("reference: no LC_UUID")
		return Slice{}
	}
	if ff, err := macho.NewFatFile(bytes.NewReader(data)); err == nil {
		var out []Slice
		for _, a := range ff.Arches {
			out = append(out, one(a.File, int64(a.Size)))
		}
		return out
	}
	f, err := macho.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	return []Slice{one(f, int64(len(data)))}
}

func checkAgainstReference(t *testing.T, data []byte) {
	t.Helper()
	got, err := readMachO(bytes.NewReader(data), "x")
	if err != nil {
		t.Fatalf("readMachO: %v", err)
	}
	want := referenceSlices(t, data)
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("slice %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestMachOAgainstDebugMacho(t *testing.T) {
	uuid := "0123ABCD-4567-89EF-0123-456789ABCDEF"
	for _, archs := range [][]string{
		{"arm64"}, {"arm64e"}, {"arm64_32"}, {"armv7"}, {"armv7s"}, {"armv7k"}, {"x86_64"}, {"x86_64h"}, {"i386"},
		{"armv7", "arm64"}, {"armv7", "armv7s", "arm64", "arm64e"}, {"x86_64", "arm64"},
	} {
		t.Run(strings.Join(archs, "+"), func(t *testing.T) {
			var list []debuginfotest.Arch
			for i, a := range archs {
				list = append(list, debuginfotest.Arch{Name: a, UUID: uuid, Pad: 100 * i})
			}
			data := debuginfotest.MachO(list...)
			checkAgainstReference(t, data)
			got, _ := readMachO(bytes.NewReader(data), "x")
			for i, s := range got {
				if s.Arch != archs[i] || s.UUID != uuid {
					t.Errorf("slice %d = %+v, want %s %s", i, s, archs[i], uuid)
				}
			}
		})
	}
}

// TestMachOFixturesAgainstDebugMacho compares the header reader with debug/macho on the real
// DWARF files, read whole.
func TestMachOFixturesAgainstDebugMacho(t *testing.T) {
	for _, rel := range []string{"debug/ios-dsym-single-arm64.zip", "debug/ios-dsym-single-fat-armv7-arm64.zip", "debug/ios-dsyms-two-at-root.zip"} {
		zr, err := zip.OpenReader(fixtures.Path(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			if !strings.Contains(f.Name, "/DWARF/") || strings.HasSuffix(f.Name, "/") || strings.Contains(f.Name, "__MACOSX") {
				continue
			}
			rc, _ := f.Open()
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			t.Run(f.Name, func(t *testing.T) { checkAgainstReference(t, data) })
		}
		zr.Close()
	}
}

// TestMachOBigEndianAndFat64 covers big-endian (PowerPC) headers and 64-bit fat headers.
func TestMachOBigEndianAndFat64(t *testing.T) {
	// A big-endian 32-bit ppc header with one LC_UUID.
	var be []byte
	for _, v := range []uint32{macho.Magic32, uint32(macho.CpuPpc), 0, 0xa, 1, 24, 0, loadCmdUUID, 24} {
		be = append(be, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	be = append(be, bytes.Repeat([]byte{0xab}, 16)...)
	got, err := readMachO(bytes.NewReader(be), "x")
	if err != nil || len(got) != 1 || got[0].Arch != "ppc" || got[0].UUID != strings.Repeat("AB", 4)+"-ABAB-ABAB-ABAB-"+strings.Repeat("AB", 6) {
		t.Fatalf("ppc: %+v, %v", got, err)
	}

	// A fat64 header holding one thin arm64 slice at offset 64.
	thin := debuginfotest.Thin(debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"})
	var f []byte
	put32 := func(v uint32) { f = append(f, byte(v>>24), byte(v>>16), byte(v>>8), byte(v)) }
	put64 := func(v uint64) { put32(uint32(v >> 32)); put32(uint32(v)) }
	put32(magicFat64)
	put32(1)
	put32(uint32(macho.CpuArm64))
	put32(0)
	put64(64)
	put64(uint64(len(thin)))
	put32(6)
	put32(0)
	f = append(f, make([]byte, 64-len(f))...)
	f = append(f, thin...)
	got, err = readMachO(bytes.NewReader(f), "x")
	if err != nil || len(got) != 1 || got[0].Arch != "arm64" || got[0].Size != int64(len(thin)) {
		t.Fatalf("fat64: %+v, %v", got, err)
	}
}

func TestArchNames(t *testing.T) {
	for _, tt := range []struct {
		cpu  macho.Cpu
		sub  uint32
		want string
	}{
		{macho.CpuArm64, 0, "arm64"}, {macho.CpuArm64, 0x80000002, "arm64e"}, {macho.CpuArm64, 1, "arm64"},
		{cpuArm64_32, 1, "arm64_32"}, {macho.CpuArm, 9, "armv7"}, {macho.CpuArm, 11, "armv7s"}, {macho.CpuArm, 99, "arm"},
		{macho.CpuAmd64, 3, "x86_64"}, {macho.CpuAmd64, 0x80000003, "x86_64"}, {macho.CpuAmd64, 8, "x86_64h"},
		{macho.Cpu386, 3, "i386"}, {macho.Cpu(42), 7, "cpu42-7"},
	} {
		if got := archName(tt.cpu, tt.sub); got != tt.want {
			t.Errorf("archName(%v, %#x) = %q, want %q", tt.cpu, tt.sub, got, tt.want)
		}
	}
}

// TestMachOLargeFileSmallMemory streams a fat file with 16 MiB slices and checks the reader
// allocates a small fraction of the file's size.
func TestMachOLargeFileSmallMemory(t *testing.T) {
	const pad = 16 << 20
	data := debuginfotest.MachO(
		debuginfotest.Arch{Name: "armv7", UUID: "11111111-2222-3333-4444-555555555555", Pad: pad},
		debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555556", Pad: pad})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := readMachO(bytes.NewReader(data), "x")
	runtime.ReadMemStats(&after)
	if err != nil || len(s) != 2 {
		t.Fatalf("%+v, %v", s, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<10 {
		t.Errorf("allocated %d bytes reading a %d-byte file", n, len(data))
	}
}
