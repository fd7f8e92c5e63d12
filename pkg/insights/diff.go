package insights

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Defaults of Options.
const (
	// DefaultGrowthPercent and DefaultGrowthBytes: a file is reported as grown (or shrunk) when
	// its install size changed by at least both.
	DefaultGrowthPercent = 10
	DefaultGrowthBytes   = 100 << 10
	// DefaultExpiryWarning: a profile expiring within this time of Options.Now is reported.
	DefaultExpiryWarning = 30 * 24 * time.Hour
	// DefaultMaxFileChanges bounds Diff.Files; the largest changes are kept.
	DefaultMaxFileChanges = 100
)

// Options tune a diff. The zero value uses the defaults and the current time.
type Options struct {
	// GrowthPercent and GrowthBytes are the change in install size, relative and absolute,
	// that a file must reach, both, to be reported as grown or shrunk (defaults
	// DefaultGrowthPercent and DefaultGrowthBytes; a negative value means 0).
	GrowthPercent float64
	GrowthBytes   int64
	// ExpiryWarning is how soon before expiring a profile is reported (DefaultExpiryWarning; a
	// negative value reports only expired profiles).
	ExpiryWarning time.Duration
	// MaxFileChanges bounds the file changes listed (DefaultMaxFileChanges).
	MaxFileChanges int
	// Now is the time expiry is measured from (time.Now() when zero).
	Now time.Time
}

// withDefaults fills the zero fields of o.
func (o Options) withDefaults() Options {
	if o.GrowthPercent == 0 {
		o.GrowthPercent = DefaultGrowthPercent
	}
	if o.GrowthBytes == 0 {
		o.GrowthBytes = DefaultGrowthBytes
	}
	o.GrowthPercent, o.GrowthBytes = max(o.GrowthPercent, 0), max(o.GrowthBytes, 0)
	if o.ExpiryWarning == 0 {
		o.ExpiryWarning = DefaultExpiryWarning
	}
	if o.MaxFileChanges <= 0 {
		o.MaxFileChanges = DefaultMaxFileChanges
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// Diff is what changed from one build (old) to another (new). Every field but Old, New and Size
// is set only when there is a change to report; Size is set whenever both builds know their size.
type Diff struct {
	// Old and New identify the two builds.
	Old Ref `json:"old"`
	New Ref `json:"new"`
	// BundleID is set when the builds are of different identities.
	BundleID *Change `json:"bundle_id,omitempty"`
	// VersionBackwards is set when New's release version is lower than Old's, comparing
	// dotted versions numerically part by part ("1.10" > "1.9"); BuildBackwards likewise for
	// build versions (an integer is a one-part version). Versions that cannot be compared
	// ("1.0-beta" and "1.0") are never reported.
	VersionBackwards *Change `json:"version_backwards,omitempty"`
	BuildBackwards   *Change `json:"build_backwards,omitempty"`
	// Size is the change in size, total and per component; nil when either build's size is
	// unknown.
	Size *SizeDiff `json:"size,omitempty"`
	// Files are the files added, removed, grown or shrunk past the threshold (Options), the
	// largest changes first, at most Options.MaxFileChanges; FilesOmitted counts the rest. Empty
	// unless both builds list their files (zip packages).
	Files        []FileChange `json:"files,omitempty"`
	FilesOmitted int          `json:"files_omitted,omitempty"`
	// Permissions added and removed.
	Permissions *SetChange `json:"permissions,omitempty"`
	// Entitlements added, removed and changed.
	Entitlements *EntitlementChanges `json:"entitlements,omitempty"`
	// MinOS and TargetSDK are set when they changed.
	MinOS     *Change `json:"min_os,omitempty"`
	TargetSDK *Change `json:"target_sdk,omitempty"`
	// Architectures added and removed.
	Architectures *SetChange `json:"architectures,omitempty"`
	// Signing is set when the team, profile type or device count changed, or New's profile
	// expires soon (Options.ExpiryWarning).
	Signing *SigningDiff `json:"signing,omitempty"`
}

// Ref identifies a build in a diff.
type Ref struct {
	Platform       string `json:"platform,omitempty"`
	BundleID       string `json:"bundle_id,omitempty"`
	ReleaseVersion string `json:"release_version,omitempty"`
	BuildVersion   string `json:"build_version,omitempty"`
}

// Change is a value that changed from Old to New.
type Change struct {
	Old string `json:"old"`
	New string `json:"new"`
	// Direction is "up" or "down" when both are versions that compare ("15.0" → "16.0" is up),
	// else empty.
	Direction string `json:"direction,omitempty"`
}

// SetChange is what was added to and removed from a set of names, each sorted.
type SetChange struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Delta is a size (bytes) from one build to the next.
type Delta struct {
	Old int64 `json:"old"`
	New int64 `json:"new"`
	// Change is New - Old.
	Change int64 `json:"change"`
	// Percent is Change relative to Old, rounded to two decimals; nil when Old is not positive.
	Percent *float64 `json:"percent,omitempty"`
}

// SizeDiff is the change in a package's size.
type SizeDiff struct {
	// Download is the change in file size.
	Download Delta `json:"download"`
	// Install is the change in uncompressed size; nil unless both builds know it.
	Install *Delta `json:"install,omitempty"`
	// Components are the components whose size changed, appeared or disappeared, the largest
	// change in download size first; empty unless both builds list components.
	Components []ComponentChange `json:"components,omitempty"`
}

// Statuses of a ComponentChange or FileChange.
const (
	StatusAdded   = "added"
	StatusRemoved = "removed"
	StatusChanged = "changed" // a component whose size changed
	StatusGrown   = "grown"   // a file grown past the threshold
	StatusShrunk  = "shrunk"  // a file shrunk past the threshold
)

// ComponentChange is a component that appeared, disappeared or changed size.
type ComponentChange struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	// Download and Install are its sizes in each build (0 where it is absent).
	Download Delta `json:"download"`
	Install  Delta `json:"install"`
}

// FileChange is a file added, removed, or grown or shrunk past the threshold.
type FileChange struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	// Download and Install are its sizes in each build (0 where it is absent).
	Download Delta `json:"download"`
	Install  Delta `json:"install"`
	// Uncertain is set when the other build's list of largest files was cut short (a package
	// of more than appinfo.MaxListedFiles files) and this file was not in it: "added" then
	// means added, or grown by at least the threshold's bytes from under that list's smallest
	// size; "removed" means removed, or shrunk as much.
	Uncertain bool `json:"uncertain,omitempty"`
}

// EntitlementChanges are the entitlements added, removed and changed, each sorted by key.
type EntitlementChanges struct {
	Added   []Entitlement       `json:"added,omitempty"`
	Removed []Entitlement       `json:"removed,omitempty"`
	Changed []EntitlementChange `json:"changed,omitempty"`
}

// Entitlement is one entitlement.
type Entitlement struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Capability names the capability the key grants, as Xcode shows it ("Push Notifications"),
	// when known (Capability).
	Capability string `json:"capability,omitempty"`
}

// EntitlementChange is an entitlement whose value changed.
type EntitlementChange struct {
	Key        string `json:"key"`
	Old        string `json:"old"`
	New        string `json:"new"`
	Capability string `json:"capability,omitempty"`
}

// SigningDiff is what changed in the signing.
type SigningDiff struct {
	// Team is set when the team changed (its identifier; the name when only it changed).
	Team *Change `json:"team,omitempty"`
	// TeamNames are the teams' names when Team is set ("" for a build without a name).
	TeamNames *Change `json:"team_names,omitempty"`
	// Type is set when the profile's kind changed ("adhoc" → "appstore"; "" for no profile).
	Type *Change `json:"type,omitempty"`
	// Devices is set when the number of provisioned devices changed.
	Devices *Delta `json:"devices,omitempty"`
	// Expires is set when New's profile expires within Options.ExpiryWarning of Options.Now,
	// or has expired.
	Expires *Expiry `json:"expires,omitempty"`
}

// Expiry is a profile's expiry, seen from Options.Now.
type Expiry struct {
	At time.Time `json:"at"`
	// Days is the number of whole days left (negative once expired).
	Days int `json:"days"`
	// Expired is set when At is past.
	Expired bool `json:"expired,omitempty"`
}

// Empty reports whether the diff has nothing to report but the two builds' names (a size
// change of zero included).
func (d *Diff) Empty() bool {
	if d == nil {
		return true
	}
	sizeChanged := d.Size != nil && (d.Size.Download.Change != 0 || d.Size.Install != nil && d.Size.Install.Change != 0 || len(d.Size.Components) > 0)
	return !sizeChanged && d.BundleID == nil && d.VersionBackwards == nil && d.BuildBackwards == nil &&
		len(d.Files) == 0 && d.Permissions == nil && d.Entitlements == nil && d.MinOS == nil &&
		d.TargetSDK == nil && d.Architectures == nil && d.Signing == nil
}

// Compare returns what changed from old to new with the default options at the current time.
func Compare(old, new *Snapshot) *Diff { return Options{}.Diff(old, new) }

// Diff returns what changed from old to new. With no old build (new's first release), only what
// concerns new alone is reported: its profile's expiry. A nil new gives an empty Diff.
func (o Options) Diff(old, new *Snapshot) *Diff {
	o = o.withDefaults()
	d := &Diff{}
	if new == nil {
		return d
	}
	d.New = ref(new)
	if old != nil {
		d.Old = ref(old)
		if old.BundleID != new.BundleID {
			d.BundleID = &Change{Old: old.BundleID, New: new.BundleID}
		}
		if c, ok := compareVersions(new.ReleaseVersion, old.ReleaseVersion); ok && c < 0 {
			d.VersionBackwards = &Change{Old: old.ReleaseVersion, New: new.ReleaseVersion, Direction: "down"}
		}
		if c, ok := compareVersions(new.BuildVersion, old.BuildVersion); ok && c < 0 && numericDotted(new.BuildVersion) && numericDotted(old.BuildVersion) {
			d.BuildBackwards = &Change{Old: old.BuildVersion, New: new.BuildVersion, Direction: "down"}
		}
		d.MinOS = versionChange(old.MinOS, new.MinOS)
		d.TargetSDK = versionChange(old.TargetSDK, new.TargetSDK)
		d.Permissions = setChange(old.Permissions, new.Permissions)
		d.Architectures = setChange(old.Architectures, new.Architectures)
		d.Entitlements = entitlementChanges(old.Entitlements, new.Entitlements)
		d.Size = sizeDiff(old.Sizes, new.Sizes)
		if old.Sizes.listed() && new.Sizes.listed() {
			d.Files, d.FilesOmitted = fileChanges(old.Sizes, new.Sizes, o)
		}
	}
	d.Signing = signingDiff(old, new, o)
	return d
}

func ref(s *Snapshot) Ref {
	return Ref{Platform: s.Platform, BundleID: s.BundleID, ReleaseVersion: s.ReleaseVersion, BuildVersion: s.BuildVersion}
}

// versionChange is the change from old to new, nil when equal.
func versionChange(old, new string) *Change {
	if old == new {
		return nil
	}
	c := &Change{Old: old, New: new}
	if old != "" && new != "" {
		if n, ok := compareVersions(new, old); ok && n > 0 {
			c.Direction = "up"
		} else if ok && n < 0 {
			c.Direction = "down"
		}
	}
	return c
}

// setChange is what new adds to and removes from old, nil when nothing.
func setChange(old, new []string) *SetChange {
	in := func(s []string) map[string]bool {
		m := make(map[string]bool, len(s))
		for _, v := range s {
			m[v] = true
		}
		return m
	}
	o, n := in(old), in(new)
	c := &SetChange{}
	for v := range n {
		if !o[v] {
			c.Added = append(c.Added, v)
		}
	}
	for v := range o {
		if !n[v] {
			c.Removed = append(c.Removed, v)
		}
	}
	if len(c.Added)+len(c.Removed) == 0 {
		return nil
	}
	slices.Sort(c.Added)
	slices.Sort(c.Removed)
	return c
}

// entitlementChanges compares two entitlement sets, nil when equal.
func entitlementChanges(old, new map[string]string) *EntitlementChanges {
	c := &EntitlementChanges{}
	for k, v := range new {
		ov, ok := old[k]
		switch {
		case !ok:
			c.Added = append(c.Added, Entitlement{Key: k, Value: v, Capability: Capability(k)})
		case ov != v:
			c.Changed = append(c.Changed, EntitlementChange{Key: k, Old: ov, New: v, Capability: Capability(k)})
		}
	}
	for k, v := range old {
		if _, ok := new[k]; !ok {
			c.Removed = append(c.Removed, Entitlement{Key: k, Value: v, Capability: Capability(k)})
		}
	}
	if len(c.Added)+len(c.Removed)+len(c.Changed) == 0 {
		return nil
	}
	byKey := func(a, b Entitlement) int { return cmp.Compare(a.Key, b.Key) }
	slices.SortFunc(c.Added, byKey)
	slices.SortFunc(c.Removed, byKey)
	slices.SortFunc(c.Changed, func(a, b EntitlementChange) int { return cmp.Compare(a.Key, b.Key) })
	return c
}

// delta is the change from old to new.
func delta(old, new int64) Delta {
	d := Delta{Old: old, New: new, Change: new - old}
	if old > 0 {
		p := math.Round(float64(new-old)/float64(old)*10000) / 100
		if !math.IsInf(p, 0) && !math.IsNaN(p) {
			d.Percent = &p
		}
	}
	return d
}

// sizeDiff compares two breakdowns, nil when either is unknown.
func sizeDiff(old, new *Sizes) *SizeDiff {
	if old == nil || new == nil {
		return nil
	}
	d := &SizeDiff{Download: delta(old.Download, new.Download)}
	if old.Install > 0 && new.Install > 0 {
		in := delta(old.Install, new.Install)
		d.Install = &in
	}
	if !old.listed() || !new.listed() {
		return d
	}
	type key struct{ name, kind string }
	sizes := func(cs []Component) map[key]Component {
		m := make(map[key]Component, len(cs))
		for _, c := range cs {
			k := key{c.Name, c.Kind}
			if prev, dup := m[k]; dup { // a stored snapshot is not trusted to have none
				c.Download, c.Install = prev.Download+c.Download, prev.Install+c.Install
			}
			m[k] = c
		}
		return m
	}
	o, n := sizes(old.Components), sizes(new.Components)
	for k, nc := range n {
		oc, ok := o[k]
		status := StatusChanged
		if !ok {
			status = StatusAdded
		} else if oc.Download == nc.Download && oc.Install == nc.Install {
			continue
		}
		d.Components = append(d.Components, ComponentChange{Name: k.name, Kind: k.kind, Status: status,
			Download: delta(oc.Download, nc.Download), Install: delta(oc.Install, nc.Install)})
	}
	for k, oc := range o {
		if _, ok := n[k]; !ok {
			d.Components = append(d.Components, ComponentChange{Name: k.name, Kind: k.kind, Status: StatusRemoved,
				Download: delta(oc.Download, 0), Install: delta(oc.Install, 0)})
		}
	}
	slices.SortFunc(d.Components, func(a, b ComponentChange) int {
		return cmp.Or(cmp.Compare(abs(b.Download.Change), abs(a.Download.Change)), cmp.Compare(abs(b.Install.Change), abs(a.Install.Change)),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	return d
}

// listed reports whether the breakdown lists the package's content (a zip's does, with at least
// its overhead component; another format's has Download alone, and its files are unknown rather
// than absent).
func (s *Sizes) listed() bool { return s != nil && len(s.Components) > 0 }

// fileChanges compares two lists of largest files.
func fileChanges(old, new *Sizes, o Options) ([]FileChange, int) {
	files := func(s *Sizes) (map[string]File, bool, int64) {
		m := make(map[string]File, len(s.Largest))
		for _, f := range s.Largest {
			if _, dup := m[f.Path]; !dup {
				m[f.Path] = f
			}
		}
		// A list shorter than the package's files was cut at its last (smallest) entry.
		var last int64
		if n := len(s.Largest); n > 0 {
			last = s.Largest[n-1].Install
		}
		return m, len(s.Largest) < s.Files, last
	}
	of, oldCut, oldLast := files(old)
	nf, newCut, newLast := files(new)
	var out []FileChange
	for p, n := range nf {
		fo, ok := of[p]
		switch {
		case !ok:
			// When the old list was cut, the file may have been there, no larger than its last.
			if oldCut && n.Install-oldLast < o.GrowthBytes {
				continue
			}
			out = append(out, FileChange{Path: p, Status: StatusAdded, Download: delta(0, n.Download), Install: delta(0, n.Install), Uncertain: oldCut})
		case past(fo.Install, n.Install, o):
			status := StatusGrown
			if n.Install < fo.Install {
				status = StatusShrunk
			}
			out = append(out, FileChange{Path: p, Status: status, Download: delta(fo.Download, n.Download), Install: delta(fo.Install, n.Install)})
		}
	}
	for p, fo := range of {
		if _, ok := nf[p]; ok {
			continue
		}
		if newCut && fo.Install-newLast < o.GrowthBytes {
			continue
		}
		out = append(out, FileChange{Path: p, Status: StatusRemoved, Download: delta(fo.Download, 0), Install: delta(fo.Install, 0), Uncertain: newCut})
	}
	slices.SortFunc(out, func(a, b FileChange) int {
		return cmp.Or(cmp.Compare(abs(b.Install.Change), abs(a.Install.Change)), cmp.Compare(abs(b.Download.Change), abs(a.Download.Change)), cmp.Compare(a.Path, b.Path))
	})
	if len(out) > o.MaxFileChanges {
		return out[:o.MaxFileChanges], len(out) - o.MaxFileChanges
	}
	return out, 0
}

// past reports whether a file's install size went from old to new by at least the threshold,
// relative and absolute.
func past(old, new int64, o Options) bool {
	ch := abs(new - old)
	if ch == 0 || ch < o.GrowthBytes {
		return false
	}
	if old <= 0 {
		return true
	}
	return float64(ch)/float64(old)*100 >= o.GrowthPercent
}

// signingDiff compares the builds' profiles and looks at new's expiry; nil when nothing to say.
func signingDiff(old, new *Snapshot, o Options) *SigningDiff {
	d := &SigningDiff{}
	if old != nil && (old.Signing != nil || new.Signing != nil) {
		was, is := old.Signing, new.Signing
		if was == nil {
			was = &Signing{}
		}
		if is == nil {
			is = &Signing{}
		}
		if was.TeamID != is.TeamID || was.TeamID == "" && was.TeamName != is.TeamName {
			d.Team = &Change{Old: was.TeamID, New: is.TeamID}
			if was.TeamID == is.TeamID {
				d.Team = &Change{Old: was.TeamName, New: is.TeamName}
			}
			d.TeamNames = &Change{Old: was.TeamName, New: is.TeamName}
		}
		if was.Type != is.Type {
			d.Type = &Change{Old: was.Type, New: is.Type}
		}
		if was.Devices != is.Devices {
			dv := delta(int64(was.Devices), int64(is.Devices))
			d.Devices = &dv
		}
	}
	if s := new.Signing; s != nil && s.ExpiresAt != nil && validTime(*s.ExpiresAt) {
		left := s.ExpiresAt.Sub(o.Now)
		if left < o.ExpiryWarning || left <= 0 {
			days := int(left / (24 * time.Hour))
			if left < 0 && left%(24*time.Hour) != 0 {
				days-- // whole days, rounded toward the past: 1 hour ago is day -1
			}
			d.Expires = &Expiry{At: s.ExpiresAt.UTC(), Days: days, Expired: left <= 0}
		}
	}
	if *d == (SigningDiff{}) {
		return nil
	}
	return d
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// validTime reports whether t is a date a profile can carry and JSON can hold: not zero, a year
// from 1 to 9999.
func validTime(t time.Time) bool {
	y := t.UTC().Year()
	return !t.IsZero() && y >= 1 && y <= 9999
}
