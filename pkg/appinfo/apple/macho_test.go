package apple

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// TestMachOFixtures: the main executables' architectures the README lists (read there with Go's
// debug/macho).
func TestMachOFixtures(t *testing.T) {
	for file, want := range map[string][]string{
		"ios/appinfodemo-iphone-1.2.3-5.ipa":      {"arm64", "armv7"},
		"ios/bundle-ipad-1.0-1.ipa":               {"arm64", "armv7"},
		"ios/demo-universal-enterprise-1.0-1.ipa": {"arm64"},
		"ios/ios-simple-objc-1.0-1.ipa":           {"arm64", "armv7"},
		"ios/test-assetscar-icon-1.0-1.ipa":       {"arm64"},
		"ios/very-capable-app-1.0-1.ipa":          {"arm64"},
		"ios/helloworld-legacy-ios5-1.0-1.0.ipa":  {"armv7"},
		"macos/guiapp-unsigned-1.0-1.zip":         {"arm64", "x86_64"},
	} {
		t.Run(file, func(t *testing.T) {
			info, err := appleParseFile(t, fixtures.Path(t, file))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(info.Architectures, want) {
				t.Errorf("Architectures = %q, want %q", info.Architectures, want)
			}
		})
	}
}

// fatHeader returns a fat header (big-endian) of the given CPU type and subtype pairs.
func fatHeader(magic uint32, size int, slices ...[2]uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	b = binary.BigEndian.AppendUint32(b, uint32(len(slices)))
	for _, s := range slices {
		a := make([]byte, size)
		binary.BigEndian.PutUint32(a, s[0])
		binary.BigEndian.PutUint32(a[4:], s[1])
		b = append(b, a...)
	}
	return b
}

func thinHeader(cpu, sub uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0xfeedfacf)
	b = binary.LittleEndian.AppendUint32(b, cpu)
	b = binary.LittleEndian.AppendUint32(b, sub)
	return append(b, make([]byte, 20)...)
}

func TestMachOArchs(t *testing.T) {
	many := make([][2]uint32, 17)
	for i := range many {
		many[i] = [2]uint32{0x0100000c, 0}
	}
	for _, tc := range []struct {
		name string
		head []byte
		want []string
	}{
		{"thin arm64", thinHeader(0x0100000c, 0), []string{"arm64"}},
		{"thin arm64e with capability bits", thinHeader(0x0100000c, 0x80000002), []string{"arm64e"}},
		{"thin x86_64h", thinHeader(0x01000007, 8), []string{"x86_64h"}},
		{"thin big-endian ppc", binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 0xfeedface), 18), 0), []string{"ppc"}},
		{"fat", fatHeader(0xcafebabe, 20, [2]uint32{12, 9}, [2]uint32{0x0100000c, 0}), []string{"arm64", "armv7"}},
		{"fat64", fatHeader(0xcafebabf, 32, [2]uint32{0x01000007, 3}, [2]uint32{0x0100000c, 0}, [2]uint32{0x0100000c, 0}), []string{"arm64", "x86_64"}},
		{"fat of unknown CPUs", fatHeader(0xcafebabe, 20, [2]uint32{99, 0}), nil},
		{"too many slices", fatHeader(0xcafebabe, 20, many...), nil},
		{"java class", []byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 0x34, 0, 0, 0, 0}, nil},
		{"fat cut short", fatHeader(0xcafebabe, 20, [2]uint32{12, 9}, [2]uint32{12, 11})[:30], nil},
		{"short", []byte{0xcf, 0xfa, 0xed}, nil},
		{"not Mach-O", []byte("#!/bin/sh\necho hello\n"), nil},
	} {
		if got := machOArchs(tc.head); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestMachOSynthetic reads the executable stored or deflated; a broken one leaves the
// architectures empty and the parse succeeds.
func TestMachOSynthetic(t *testing.T) {
	if got := appleMustParse(t, appletest.BuildIPA(appletest.IPAOptions{})).Architectures; !slices.Equal(got, []string{"arm64"}) {
		t.Errorf("deflated: %q", got)
	}
	fat := fatHeader(0xcafebabe, 20, [2]uint32{0x01000007, 3}, [2]uint32{0x0100000c, 0})
	// The builder writes Payload/Demo.app/Demo first; an entry of the same name after it is a
	// duplicate the archive's index ignores, so name the executable differently.
	info := appleMustParse(t, appletest.BuildIPA(appletest.IPAOptions{InfoPlist: map[string]any{"CFBundleExecutable": "Universal"},
		Extra: []appletest.Entry{{Name: "Payload/Demo.app/Universal", Data: fat, Store: true}}}))
	if !slices.Equal(info.Architectures, []string{"arm64", "x86_64"}) {
		t.Errorf("stored fat: %q", info.Architectures)
	}
	for _, exec := range []string{"Missing", "../../x", "Garbage"} {
		info := appleMustParse(t, appletest.BuildIPA(appletest.IPAOptions{InfoPlist: map[string]any{"CFBundleExecutable": exec},
			Extra: []appletest.Entry{{Name: "Payload/Demo.app/Garbage", Data: []byte("\x00\x01not a Mach-O at all"), Store: true}}}))
		if info.Architectures != nil {
			t.Errorf("%s: %q", exec, info.Architectures)
		}
	}
	info = appleMustParse(t, appletest.BuildMacZip(appletest.MacZipOptions{}))
	t.Logf("macOS synthetic: %q", info.Architectures)
}

// FuzzMachOArchs reads random headers without panicking.
func FuzzMachOArchs(f *testing.F) {
	f.Add(thinHeader(0x0100000c, 0))
	f.Add(fatHeader(0xcafebabe, 20, [2]uint32{12, 9}, [2]uint32{0x0100000c, 0}))
	f.Add(fatHeader(0xcafebabf, 32, [2]uint32{0x01000007, 3}))
	f.Fuzz(func(t *testing.T, head []byte) {
		if got := machOArchs(head); len(got) > machOMaxSlices {
			t.Fatalf("%d architectures", len(got))
		}
	})
}
