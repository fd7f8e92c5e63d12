package insights

import (
	"fmt"
	"slices"
	"testing"
)

// Groups puts what matters first: 22 entitlement lines do not bury "version went backwards",
// and Summary says the same lines as before, in its own order.
func TestGroupsMostImportantFirst(t *testing.T) {
	d := &Diff{
		VersionBackwards: &Change{Old: "2.0", New: "1.9"},
		Size:             &SizeDiff{Download: Delta{Old: 100, New: 150, Change: 50}},
		Entitlements:     &EntitlementChanges{},
		MinOS:            &Change{Old: "15.0", New: "16.0"},
		Signing:          &SigningDiff{Type: &Change{Old: "adhoc", New: "appstore"}},
		New:              Ref{Platform: "ios"},
	}
	for i := range 22 {
		d.Entitlements.Added = append(d.Entitlements.Added, Entitlement{Key: fmt.Sprintf("com.apple.developer.e%d", i)})
	}
	var titles []string
	n := 0
	for _, g := range Groups(d) {
		titles = append(titles, g.Title)
		n += len(g.Lines)
	}
	want := []string{"Identity and version", "Signing", "Permissions and entitlements", "Size and files", "Platform"}
	if !slices.Equal(titles, want) {
		t.Fatalf("groups %q, want %q", titles, want)
	}
	if g := Groups(d)[0]; g.Lines[0] != "version went backwards: 2.0 → 1.9" {
		t.Errorf("the first line: %q", g.Lines[0])
	}
	if s := Summary(d); len(s) != n || s[0] != "version went backwards: 2.0 → 1.9" {
		t.Errorf("Summary has %d lines (groups %d), first %q", len(s), n, s[0])
	}
	if Groups(&Diff{}) != nil || Groups(nil) != nil {
		t.Error("an empty diff has groups")
	}
}
