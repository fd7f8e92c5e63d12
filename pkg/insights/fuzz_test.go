package insights_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/pkg/insights"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// bytesSource draws values from fuzz input, zeros once it runs out.
type bytesSource struct{ b []byte }

func (s *bytesSource) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *bytesSource) int64() int64 {
	var buf [8]byte
	n := int(s.byte() % 9)
	for i := range n {
		buf[i] = s.byte()
	}
	return int64(binary.LittleEndian.Uint64(buf[:]))
}

// str picks a short string: one of a few that collide across snapshots, or raw bytes.
func (s *bytesSource) str() string {
	words := []string{"", "1", "1.0", "1.10", "1.9", "2.0-beta", "arm64", "x86", "lib/x86/", "a|b<c>", "\n", "15.0", "v2", "00", "é"}
	c := s.byte()
	if int(c) < len(words)*8 {
		return words[int(c)%len(words)]
	}
	n := int(s.byte() % 32)
	out := make([]byte, 0, n)
	for range n {
		out = append(out, s.byte())
	}
	return string(out)
}

func (s *bytesSource) strs() []string {
	var out []string
	for range int(s.byte() % 6) {
		out = append(out, s.str())
	}
	return out
}

// generated builds a snapshot from fuzz input, every field drawn, nil parts included.
func generated(b []byte) *insights.Snapshot {
	s := &bytesSource{b}
	if s.byte()%8 == 0 {
		return nil
	}
	snap := &insights.Snapshot{Schema: int(s.byte()), Platform: s.str(), Format: s.str(), BundleID: s.str(),
		ReleaseVersion: s.str(), BuildVersion: s.str(), MinOS: s.str(), TargetSDK: s.str(),
		Architectures: s.strs(), Permissions: s.strs()}
	if n := int(s.byte() % 5); n > 0 {
		snap.Entitlements = map[string]string{}
		for range n {
			snap.Entitlements[s.str()] = s.str()
		}
	}
	if s.byte()%2 == 0 {
		at := time.Unix(s.int64()%(1<<40), 0)
		snap.Signing = &insights.Signing{TeamID: s.str(), TeamName: s.str(), Type: s.str(), Devices: int(s.int64()), ExpiresAt: &at}
	}
	if s.byte()%4 != 0 {
		snap.Sizes = &insights.Sizes{Download: s.int64(), Install: s.int64(), Files: int(s.int64() % 5000)}
		for range int(s.byte() % 6) {
			snap.Sizes.Components = append(snap.Sizes.Components, insights.Component{Name: s.str(), Kind: s.str(), Download: s.int64(), Install: s.int64(), Files: int(s.byte())})
		}
		for range int(s.byte() % 8) {
			snap.Sizes.Largest = append(snap.Sizes.Largest, insights.File{Path: s.str(), Download: s.int64(), Install: s.int64()})
		}
	}
	return snap
}

// decode reads a fuzz input as a snapshot's JSON, else builds one from its bytes.
func decode(b []byte) *insights.Snapshot {
	var s *insights.Snapshot
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return generated(b)
}

// FuzzDiff diffs random snapshots (JSON as stored, or drawn from bytes) and renders the result:
// nothing may panic, the result must marshal, a snapshot compared with itself reports nothing
// but its expiry, and what one direction adds the other removes (permissions, architectures,
// files).
func FuzzDiff(f *testing.F) {
	var seeds [][]byte
	for _, data := range [][]byte{
		appletest.BuildIPA(appletest.IPAOptions{Profile: &appletest.ProfileOptions{Devices: []string{"a"}}}),
		appletest.BuildIPA(appletest.IPAOptions{Version: "1.10", Build: "7", Profile: &appletest.ProfileOptions{TeamID: "OTHER", AllDevices: true}}),
		androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.a", Permissions: []string{"CAMERA"}},
			Entries: []androidtest.AndroidEntry{{Name: "lib/x86/libx.so", Data: make([]byte, 300<<10)}}}),
		harmonytest.BuildApp(harmonytest.AppOptions{HAP: harmonytest.HAPOptions{Architectures: []string{"arm64-v8a"}}}),
		windowstest.BuildMSIXBundle(windowstest.BundleOptions{}),
	} {
		seeds = append(seeds, seed(f, data))
	}
	for _, file := range []string{"ios/very-capable-app-1.0-1.ipa", "android/appinfodemo-2.1.0-10.apk", "other/harmony-myapplication-1.0.0.app"} {
		if p := fixtures.Glob(file); len(p) == 1 {
			seeds = append(seeds, seed(f, mustRead(f, p[0])))
		}
	}
	for i, a := range seeds {
		f.Add(a, seeds[(i+1)%len(seeds)])
	}
	f.Add([]byte("\x01\x02\x03"), []byte("\xff\x00\x10\x20\x30\x40\x50\x60\x70\x80"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, new := decode(a), decode(b)
		o := insights.Options{Now: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), MaxFileChanges: 5}
		d := o.Diff(old, new)
		_ = insights.Summary(d)
		_ = insights.Markdown(d)
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if len(d.Files) > 5 {
			t.Fatalf("%d file changes, over the cap", len(d.Files))
		}
		if new != nil {
			self := o.Diff(new, new)
			if got := findings(self); len(got) > 1 || len(got) == 1 && (got[0] != "signing" || self.Signing.Expires == nil || self.Signing.Team != nil || self.Signing.Type != nil || self.Signing.Devices != nil) {
				t.Fatalf("a snapshot differs from itself: %q %+v", got, self)
			}
			if self.Size != nil && (len(self.Size.Components) > 0 || self.Size.Download.Change != 0) {
				t.Fatalf("a snapshot's size differs from itself: %+v", self.Size)
			}
		}
		if old != nil && new != nil {
			back := o.Diff(new, old)
			if fmt.Sprint(added(d.Permissions)) != fmt.Sprint(removed(back.Permissions)) || fmt.Sprint(added(d.Architectures)) != fmt.Sprint(removed(back.Architectures)) {
				t.Fatalf("not symmetric: %+v / %+v", d.Permissions, back.Permissions)
			}
			if d.FilesOmitted == 0 && back.FilesOmitted == 0 && count(d, insights.StatusAdded) != count(back, insights.StatusRemoved) {
				t.Fatalf("file changes %q, reversed %q", files(d), files(back))
			}
		}
	})
}

// seed returns the JSON snapshot of a package, its lists cut short: small inputs keep the
// fuzzer fast (it mutates and minimizes whole inputs).
func seed(f *testing.F, data []byte) []byte {
	s := snapshot(f, data)
	if s.Sizes != nil {
		s.Sizes.Components = s.Sizes.Components[:min(len(s.Sizes.Components), 6)]
		s.Sizes.Largest = s.Sizes.Largest[:min(len(s.Sizes.Largest), 6)]
	}
	for k := range s.Entitlements {
		if len(s.Entitlements) <= 6 {
			break
		}
		delete(s.Entitlements, k)
	}
	b, err := json.Marshal(s)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func added(s *insights.SetChange) []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.Added)
}

func removed(s *insights.SetChange) []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.Removed)
}

// count counts a diff's file changes of one status.
func count(d *insights.Diff, status string) int {
	n := 0
	for _, f := range d.Files {
		if f.Status == status {
			n++
		}
	}
	return n
}
