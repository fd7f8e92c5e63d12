package insights

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestBytesText(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 3_200_000: "3.2 MB", 1 << 62: "4.6 EB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
	p := 4.123
	for _, tc := range []struct {
		d    Delta
		want string
	}{
		{delta(100, 100), "0 B"},
		{Delta{Change: 3_200_000, Percent: &p}, "+3.2 MB (+4.1%)"},
		{delta(2000, 1000), "-1.0 kB (-50.0%)"},
		{delta(0, 10), "+10 B"},
		{Delta{Change: -1 << 63}, "-9.2 EB"},
	} {
		if got := signedDelta(tc.d); got != tc.want {
			t.Errorf("signedDelta(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// hostileDiff names every part of a diff with text no report may pass through unescaped.
func hostileDiff() *Diff {
	bad := "x|y`<img src=x onerror=alert(1)>*_[a](b)\n# h\r\u2028~~&amp;"
	return &Diff{
		Old:              Ref{Platform: "android", ReleaseVersion: bad, BuildVersion: "1"},
		New:              Ref{Platform: "android", ReleaseVersion: "2", BuildVersion: bad},
		VersionBackwards: &Change{Old: bad, New: bad},
		Size: &SizeDiff{Download: delta(100, 200), Components: []ComponentChange{
			{Name: bad, Kind: bad, Status: StatusAdded, Download: delta(0, 100)}}},
		Files:         []FileChange{{Path: bad, Status: StatusAdded, Install: delta(0, 1)}},
		Permissions:   &SetChange{Added: []string{bad}},
		Entitlements:  &EntitlementChanges{Changed: []EntitlementChange{{Key: bad, Old: bad, New: bad}}},
		Architectures: &SetChange{Removed: []string{bad}},
		Signing:       &SigningDiff{Team: &Change{Old: bad, New: "T"}, TeamNames: &Change{Old: bad}},
	}
}

// TestMarkdownEscapes: text from a package cannot add markup, HTML, rows or lines to the report.
func TestMarkdownEscapes(t *testing.T) {
	md := Markdown(hostileDiff())
	if strings.ContainsAny(md, "\r\u2028") || strings.Contains(md, "\n# h") {
		t.Errorf("Markdown holds a line break from the package:\n%s", md)
	}
	// Every markup character from the package is escaped (the report's own are outside it).
	for _, line := range strings.Split(md, "\n") {
		if b, ok := strings.CutPrefix(line, "**"); ok { // the report's own bold line
			line = strings.TrimSuffix(b, "**")
		}
		for i := 0; i < len(line); i++ {
			if strings.IndexByte("<`[*_~&", line[i]) >= 0 && (i == 0 || line[i-1] != '\\') {
				t.Errorf("unescaped %q in %q", line[i], line)
			}
		}
	}
	// Every table row has as many unescaped cell separators as its table's header.
	cells := 0
	for _, line := range strings.Split(md, "\n") {
		n := strings.Count(line, "|") - strings.Count(line, `\|`)
		switch {
		case !strings.HasPrefix(line, "|"):
			cells = 0
		case cells == 0:
			cells = n
		case n != cells:
			t.Errorf("row %q has %d separators, its header %d", line, n, cells)
		}
	}
	for _, l := range Summary(hostileDiff()) {
		if strings.ContainsAny(l, "\n\r\u2028") {
			t.Errorf("Summary line %q spans lines", l)
		}
	}
}

// TestMarkdownReport checks the report's parts on an ordinary diff.
func TestMarkdownReport(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &Diff{
		Old: Ref{Platform: "ios", ReleaseVersion: "1.4", BuildVersion: "87"},
		New: Ref{Platform: "ios", ReleaseVersion: "1.5", BuildVersion: "88"},
		Size: &SizeDiff{Download: delta(77_300_000, 80_500_000), Install: &Delta{Old: 1, New: 1},
			Components: []ComponentChange{{Name: "Frameworks/Lottie.framework", Kind: "framework", Status: StatusAdded, Download: delta(0, 1_200_000), Install: delta(0, 3_000_000)}}},
		Files:        []FileChange{{Path: "Payload/X.app/Frameworks/Lottie.framework/Lottie", Status: StatusAdded, Download: delta(0, 1_200_000), Install: delta(0, 3_000_000)}},
		Permissions:  &SetChange{Added: []string{"android.permission.CAMERA"}},
		Entitlements: &EntitlementChanges{Added: []Entitlement{{Key: "aps-environment", Value: "production", Capability: "Push Notifications"}}},
		MinOS:        &Change{Old: "15.0", New: "16.0", Direction: "up"},
		Signing:      &SigningDiff{Expires: &Expiry{At: at, Days: 5}},
	}
	md := Markdown(d)
	for _, want := range []string{
		"### What changed since 1.4 (87)\n",
		"| Download | 77.3 MB | 80.5 MB | +3.2 MB (+4.1%) |",
		"| Frameworks/Lottie.framework | framework | added | +1.2 MB | +3.0 MB |",
		"- new permission: android.permission.CAMERA\n",
		"- new entitlement: aps-environment (Push Notifications)\n",
		"- minimum iOS 15.0 → 16.0\n",
		"- profile expires in 5 days (2025-01-01)\n",
		"| Payload/X.app/Frameworks/Lottie.framework/Lottie | added |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	sum := Summary(d)
	want := []string{"+3.2 MB (+4.1%)", "new framework: Frameworks/Lottie.framework (+1.2 MB)", "new permission: android.permission.CAMERA",
		"new entitlement: aps-environment (Push Notifications)", "minimum iOS 15.0 → 16.0", "profile expires in 5 days (2025-01-01)", "files: 1 added"}
	if strings.Join(sum, "\n") != strings.Join(want, "\n") {
		t.Errorf("Summary =\n%s\nwant\n%s", strings.Join(sum, "\n"), strings.Join(want, "\n"))
	}
	if first := Markdown(&Diff{New: Ref{ReleaseVersion: "1.0", BuildVersion: "1"}}); !strings.HasPrefix(first, "### 1.0 (1): first build") {
		t.Errorf("first build:\n%s", first)
	}
}

// TestSnapshotJSON pins the JSON names of a Snapshot, which are stored and served.
func TestSnapshotJSON(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Snapshot{Schema: 1, Platform: "ios", Format: "ipa", BundleID: "com.x", ReleaseVersion: "1.0", BuildVersion: "1",
		MinOS: "15.0", TargetSDK: "", Architectures: []string{"arm64"}, Permissions: []string{"p"},
		Entitlements: map[string]string{"aps-environment": "production"},
		Signing:      &Signing{TeamID: "T", TeamName: "Team", Type: "adhoc", ProfileName: "P", ExpiresAt: &at, Devices: 2},
		Sizes: &Sizes{Download: 10, Install: 20, Files: 1, Components: []Component{{Name: "c", Kind: "other", Download: 10, Install: 20, Files: 1}},
			Largest: []File{{Path: "f", Download: 10, Install: 20}}}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"schema":1,"platform":"ios","format":"ipa","bundle_id":"com.x","release_version":"1.0","build_version":"1","min_os":"15.0",` +
		`"architectures":["arm64"],"permissions":["p"],"entitlements":{"aps-environment":"production"},` +
		`"signing":{"team_id":"T","team_name":"Team","type":"adhoc","profile_name":"P","expires_at":"2025-01-01T00:00:00Z","devices":2},` +
		`"sizes":{"download":10,"install":20,"files":1,"components":[{"name":"c","kind":"other","download":10,"install":20,"files":1}],` +
		`"largest":[{"path":"f","download":10,"install":20}]}}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := (Options{Now: at.AddDate(-1, 0, 0)}).Diff(s, &back); !d.Empty() {
		t.Errorf("a snapshot differs from its JSON round trip: %+v", d)
	}
	if _, err := json.Marshal(hostileDiff()); err != nil {
		t.Fatal(err)
	}
}
