package linux

import (
	"bytes"
	"image/png"
	"io"
	"maps"
	"os"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// countingReader counts the ReadAt calls and bytes read through it.
type countingReader struct {
	r     io.ReaderAt
	calls atomic.Int64
	bytes atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.calls.Add(1)
	c.bytes.Add(int64(n))
	return n, err
}

// parseWith runs a parser over data.
func parseWith(parse func(io.ReaderAt, int64) (*appinfo.Info, error), data []byte) (*appinfo.Info, error) {
	return parse(bytes.NewReader(data), int64(len(data)))
}

// want describes the expected Info of a package; Icon is the expected icon size (0: none).
type want struct {
	Format         appinfo.Format
	Name, BundleID string
	Release, Build string
	Arch           []string
	Publisher      string
	Description    string
	Props          map[string]string
	Icon           int
}

// check compares every field of info with w, and the fields every Linux package shares.
func (w want) check(t *testing.T, info *appinfo.Info) {
	t.Helper()
	if info.Platform != appinfo.Linux || info.Device != appinfo.DeviceLinux || info.Format != w.Format {
		t.Errorf("platform/device/format = %s/%s/%s, want linux/linux/%s", info.Platform, info.Device, info.Format, w.Format)
	}
	got := []string{info.Name, info.BundleID, info.ReleaseVersion, info.BuildVersion, info.Publisher, info.Description}
	exp := []string{w.Name, w.BundleID, w.Release, w.Build, w.Publisher, w.Description}
	names := []string{"Name", "BundleID", "ReleaseVersion", "BuildVersion", "Publisher", "Description"}
	for i := range got {
		if got[i] != exp[i] {
			t.Errorf("%s = %q, want %q", names[i], got[i], exp[i])
		}
	}
	if !reflect.DeepEqual(info.Architectures, w.Arch) {
		t.Errorf("Architectures = %q, want %q", info.Architectures, w.Arch)
	}
	if len(info.Properties) != 0 || len(w.Props) != 0 {
		if !reflect.DeepEqual(info.Properties, w.Props) {
			t.Errorf("Properties = %q, want %q", info.Properties, w.Props)
		}
	}
	if info.MinOS != "" || info.TargetSDK != "" || info.ReleaseType != "" || info.Profile != nil || info.Debuggable || len(info.Permissions) != 0 {
		t.Errorf("fields Linux packages never set are set: %+v", info)
	}
	switch {
	case w.Icon == 0 && info.Icon != nil:
		t.Errorf("Icon = %dx%d, want none", info.Icon.Width, info.Icon.Height)
	case w.Icon != 0 && info.Icon == nil:
		t.Errorf("Icon = nil, want %dx%d", w.Icon, w.Icon)
	case w.Icon != 0:
		if info.Icon.Width != w.Icon || info.Icon.Height != w.Icon || info.Icon.ContentType != "image/png" {
			t.Errorf("Icon = %dx%d %s, want %dx%d image/png", info.Icon.Width, info.Icon.Height, info.Icon.ContentType, w.Icon, w.Icon)
		}
		img, err := png.Decode(bytes.NewReader(info.Icon.Data))
		if err != nil || img.Bounds().Dx() != w.Icon {
			t.Errorf("the icon does not decode as a %d-pixel PNG: %v", w.Icon, err)
		}
	}
}

// TestSharedFixtures parses the real packages of ../shared/fixtures/linux and checks every value
// its README lists, through appinfo.Parse (the registration) as an upload would.
func TestSharedFixtures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want want
	}{
		{"linux/field-tool_0.9.1-1_arm64.deb", want{Format: appinfo.FormatDeb, Name: "field-tool", BundleID: "field-tool",
			Release: "0.9.1", Build: "0.9.1-1", Arch: []string{"arm64"}, Publisher: "Acme <dev@acme.example>",
			Description: "field tool", Props: map[string]string{"Revision": "1"}}},
		{"linux/field-tool-0.9.1-7.noarch.rpm", want{Format: appinfo.FormatRPM, Name: "field-tool", BundleID: "field-tool",
			Release: "0.9.1", Build: "0.9.1-7", Arch: []string{"noarch"}, Description: "Hello desktop test package",
			Props: map[string]string{"Release": "7", "License": "MIT", "Description": "A test package.", "BuildTime": "1795631975",
				"BuildHost": "vm", "InstalledSize": "10", "Group": "Unspecified", "SourceRPM": "field-tool-0.9.1-7.src.rpm",
				"ArchiveSize": "268", "HeaderStart": "4504", "HeaderEnd": "6081", "Provides": "field-tool = 0.9.1-7", "Requires": "/bin/sh"}}},
		// The stand-in runtime is an x86-64 ELF although the file name says aarch64 (it was
		// built with gcc on an x86-64 machine); Architectures reports what the ELF says.
		{"linux/Field_Tool-0.9.1-aarch64.AppImage", want{Format: appinfo.FormatAppImage, Name: "Field Tool", BundleID: "field-tool",
			Release: "0.9.1", Build: "0.9.1", Arch: []string{"x86_64"}, Props: map[string]string{"Categories": "Utility"}, Icon: 256}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data := fixtures.Read(t, tc.file)
			r := &countingReader{r: bytes.NewReader(data)}
			info, err := appinfo.Parse(r, int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			tc.want.check(t, info)
			t.Logf("%d reads, %d of %d bytes", r.calls.Load(), r.bytes.Load(), len(data))
		})
	}
}

// TestRealTestdata parses the small packages in testdata/real, made with mksquashfs, dpkg-deb and
// rpmbuild (see its README): the compressions and fields the shared fixtures do not cover.
func TestRealTestdata(t *testing.T) {
	deb := want{Format: appinfo.FormatDeb, Name: "real-demo", BundleID: "real-demo", Release: "2.0.1", Build: "1:2.0.1-3",
		Arch: []string{"amd64"}, Publisher: "Example Maintainers <pkg@example.org>", Description: "real demo package",
		Props: map[string]string{"Revision": "3", "Epoch": "1", "Depends": "libc6 (>= 2.34), adduser", "Section": "utils", "Homepage": "https://example.org/demo",
			"Priority": "optional", "Extended-Description": "Built with dpkg-deb for the parser tests.\n.\nSecond paragraph."}}
	rpm := want{Format: appinfo.FormatRPM, Name: "real-demo", BundleID: "real-demo", Release: "2.0.1", Build: "2.0.1-5.el9",
		Arch: []string{"noarch"}, Publisher: "Example Vendor", Description: "Real demo built with rpmbuild",
		Props: map[string]string{"Release": "5.el9", "Epoch": "4", "License": "Apache-2.0", "URL": "https://example.org/demo",
			"Description": "A demo package.", "BuildTime": "1700000000", "BuildHost": "example", "InstalledSize": "20", "Group": "Unspecified",
			"Packager": "Example Packager <rpm@example.org>", "Vendor": "Example Vendor", "SourceRPM": "real-demo-2.0.1-5.el9.src.rpm",
			"ArchiveSize": "276", "HeaderStart": "4504", "HeaderEnd": "6205", "Provides": "real-demo = 4:2.0.1-5.el9"}}
	srpm := rpm
	srpm.Props = maps.Clone(rpm.Props)
	delete(srpm.Props, "SourceRPM")
	srpm.Props["SourcePackage"], srpm.Props["InstalledSize"], srpm.Props["ArchiveSize"], srpm.Props["HeaderEnd"] = "true", "389", "636", "6485"
	app := want{Format: appinfo.FormatAppImage, Name: "Real Demo", BundleID: "org.example.Demo", Release: "2.0.1", Build: "2.0.1",
		Arch: []string{"aarch64"}, Description: "Made with mksquashfs", Props: map[string]string{"Categories": "Utility"}, Icon: 32}
	for file, w := range map[string]want{
		"real-demo_2.0.1-3_amd64-gzip.deb": deb, "real-demo_2.0.1-3_amd64-zstd.deb": deb, "real-demo_2.0.1-3_amd64-none.deb": deb,
		"real-demo-2.0.1-5.el9.noarch.rpm": rpm, "real-demo-2.0.1-5.el9.src.rpm": srpm,
		"demo-xz.squashfs": app, "demo-zstd.squashfs": app, "demo-bigdir-gzip.squashfs": app,
	} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/real/" + file)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.HasPrefix(data, []byte("hsqs")) {
				data = append(linuxtest.Runtime(linuxtest.RuntimeOptions{Machine: linuxtest.MachineAArch64}), data...)
			}
			info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			w.check(t, info)
		})
	}
}

// TestRegistration checks that appinfo.Parse hands each format to this package, and that the
// claims read one small block.
func TestRegistration(t *testing.T) {
	if !contains(appinfo.Families(), "linux") {
		t.Fatalf("families %q lack linux", appinfo.Families())
	}
	for name, data := range map[string][]byte{
		"deb":      linuxtest.BuildDeb(linuxtest.DebOptions{}),
		"rpm":      linuxtest.BuildRPM(linuxtest.RPMOptions{}),
		"appimage": linuxtest.BuildAppImage(linuxtest.AppImageOptions{}),
	} {
		info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(info.Format) != name || info.Platform != appinfo.Linux {
			t.Errorf("%s: parsed as %s/%s", name, info.Platform, info.Format)
		}
	}
	// A type 1 AppImage is claimed, with a message saying what to do.
	t1 := linuxtest.Runtime(linuxtest.RuntimeOptions{Type: 1})
	_, err := appinfo.Parse(bytes.NewReader(t1), int64(len(t1)))
	wantInvalid(t, err, "type 1 AppImage")
	// An ordinary ELF executable is not a package of this family.
	elf := linuxtest.Runtime(linuxtest.RuntimeOptions{})
	elf[8], elf[9], elf[10] = 0, 0, 0
	_, err = appinfo.Parse(bytes.NewReader(elf), int64(len(elf)))
	wantInvalid(t, err, "not a build Slipway reads")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
