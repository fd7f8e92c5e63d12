package uploads

import (
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
)

// A file a windows or linux channel keeps unread takes its name and version from its file name
// when the upload's fields do not give them.
func TestSplitFileName(t *testing.T) {
	for _, c := range []struct{ in, base, version string }{
		{"notes-2.3.1.tar.gz", "notes", "2.3.1"},
		{"Field_Tool-0.9.1-aarch64.tar.xz", "Field_Tool", "0.9.1-aarch64"},
		{"tool_v1.4.zip", "tool", "1.4"},
		{"tool-1.0.0+build.7.bin", "tool", "1.0.0+build.7"},
		{"tool-0.9.1", "tool", "0.9.1"},
		{"setup.exe", "setup", ""},
		{"README", "README", ""},
		{"2.0.1.tar.gz", "2.0.1", "2.0.1"},
		{`C:\builds\app-3.2.msi`, "app", "3.2"},
		{"", "", ""},
	} {
		base, version := splitFileName(c.in)
		if base != c.base || version != c.version {
			t.Errorf("splitFileName(%q) = %q, %q; want %q, %q", c.in, base, version, c.base, c.version)
		}
	}
}

// The facts a release keeps are capped, whatever a parser returns.
func TestPlatformFactsCaps(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	info := &appinfo.Info{Publisher: long, Properties: map[string]string{}}
	for i := range 250 {
		info.Permissions = append(info.Permissions, long)
		info.Properties[strings.Repeat("k", i+1)] = long
	}
	f := platformFacts(info)
	if len(f.Publisher) > maxFactBytes || !strings.HasPrefix(long, f.Publisher) || len(f.Publisher) < maxFactBytes-1 {
		t.Errorf("publisher clipped to %d bytes", len(f.Publisher))
	}
	if len(f.Permissions) != maxFactItems || len(f.Properties) != maxFactItems/2 {
		t.Errorf("%d permissions, %d properties", len(f.Permissions), len(f.Properties))
	}
	for k, v := range f.Properties {
		if len(k) > maxFactBytes || len(v) > maxFactBytes {
			t.Errorf("property %d bytes = %d bytes", len(k), len(v))
		}
	}
	// A repository index's properties keep 4 KiB.
	desc := strings.Repeat("d", 5000)
	if f := platformFacts(&appinfo.Info{Properties: map[string]string{"Description": desc, "Requires": desc, "Other": desc}}); len(f.Properties["Description"]) != appinfo.MaxIndexProperty ||
		len(f.Properties["Requires"]) != appinfo.MaxIndexProperty || len(f.Properties["Other"]) != maxFactBytes {
		t.Errorf("index properties clipped to %d, %d bytes, others to %d", len(f.Properties["Description"]), len(f.Properties["Requires"]), len(f.Properties["Other"]))
	}
	if f := platformFacts(&appinfo.Info{}); f.Properties != nil || f.Permissions != nil {
		t.Errorf("empty facts: %+v", f)
	}
}
