package insights

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxSummaryComponents bounds the component lines of a Summary.
const maxSummaryComponents = 3

// maxMarkdownRows bounds the rows of each Markdown table.
const maxMarkdownRows = 20

// Summary says a diff in short lines for chat messages, webhooks and the tester page, the most
// alarming first: a version or build that went backwards, another bundle identifier, the size
// change ("+3.2 MB (+4.1%)"), components added or removed ("new framework:
// Frameworks/Lottie.framework (+1.2 MB)"), permissions and entitlements, minimum OS ("minimum iOS
// 15.0 → 16.0") and target SDK, architectures, signing, the profile's expiry, and a count of the
// files changed. It returns nil when the diff is empty.
func Summary(d *Diff) []string {
	if d == nil {
		return nil
	}
	head, size, findings, files := lines(d)
	var out []string
	for _, part := range [][]string{head, size, findings, files} {
		out = append(out, part...)
	}
	return out
}

// Group is one kind of change of a diff, as the console's build page lists them.
type Group struct {
	Title string
	Lines []string
}

// Groups says a diff as Summary does, in groups, the most important first: identity and version,
// signing, permissions and entitlements, size and files, the platform (minimum OS, SDK,
// architectures). Empty groups are left out.
func Groups(d *Diff) []Group {
	if d == nil {
		return nil
	}
	l := lineGroups(d)
	var out []Group
	for _, g := range []Group{{"Identity and version", l.head}, {"Signing", l.signing}, {"Permissions and entitlements", l.permissions},
		{"Size and files", append(append([]string(nil), l.size...), l.files...)}, {"Platform", l.platform}} {
		if len(g.Lines) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// lines says a diff in four groups of lines: what is wrong with the builds' identity, the size
// (total and components added or removed), the other findings, and the files.
func lines(d *Diff) (head, size, findings, files []string) {
	l := lineGroups(d)
	findings = append(append(append(findings, l.permissions...), l.platform...), l.signing...)
	return l.head, l.size, findings, l.files
}

// diffLines are a diff's lines by kind.
type diffLines struct {
	head, size, permissions, platform, signing, files []string
}

func lineGroups(d *Diff) diffLines {
	var l diffLines
	head, size, files := &l.head, &l.size, &l.files
	add := func(to *[]string, format string, args ...any) { *to = append(*to, fmt.Sprintf(format, args...)) }
	if c := d.VersionBackwards; c != nil {
		add(head, "version went backwards: %s → %s", text(c.Old), text(c.New))
	}
	if c := d.BuildBackwards; c != nil {
		add(head, "build went backwards: %s → %s", text(c.Old), text(c.New))
	}
	if c := d.BundleID; c != nil {
		add(head, "bundle id changed: %s → %s", orNone(c.Old), orNone(c.New))
	}
	if s := d.Size; s != nil {
		if s.Download.Change != 0 {
			add(size, "%s", signedDelta(s.Download))
		} else if s.Install != nil && s.Install.Change != 0 {
			add(size, "installed size %s", signedDelta(*s.Install))
		}
		n := 0
		for _, c := range s.Components {
			if c.Status == StatusChanged || c.Kind == "overhead" {
				continue
			}
			if n == maxSummaryComponents {
				add(size, "and more components added or removed")
				break
			}
			n++
			verb := "new"
			if c.Status == StatusRemoved {
				verb = "removed"
			}
			add(size, "%s %s: %s (%s)", verb, kindNoun(c.Kind), text(c.Name), signedBytes(c.Download.Change))
		}
	}
	if p := d.Permissions; p != nil {
		for _, v := range p.Added {
			add(&l.permissions, "new permission: %s", text(v))
		}
		for _, v := range p.Removed {
			add(&l.permissions, "removed permission: %s", text(v))
		}
	}
	if e := d.Entitlements; e != nil {
		for _, v := range e.Added {
			add(&l.permissions, "new entitlement: %s%s", text(v.Key), capabilityNote(v.Capability))
		}
		for _, v := range e.Removed {
			add(&l.permissions, "removed entitlement: %s%s", text(v.Key), capabilityNote(v.Capability))
		}
		for _, v := range e.Changed {
			add(&l.permissions, "entitlement %s: %s → %s", text(v.Key), orNone(v.Old), orNone(v.New))
		}
	}
	if c := d.MinOS; c != nil {
		add(&l.platform, "minimum %s %s → %s", platformName(d.New.Platform), orNone(c.Old), orNone(c.New))
	}
	if c := d.TargetSDK; c != nil {
		add(&l.platform, "target SDK %s → %s", orNone(c.Old), orNone(c.New))
	}
	if a := d.Architectures; a != nil {
		for _, v := range a.Added {
			add(&l.platform, "new architecture: %s", text(v))
		}
		for _, v := range a.Removed {
			add(&l.platform, "dropped architecture: %s", text(v))
		}
	}
	if s := d.Signing; s != nil {
		if s.Team != nil {
			add(&l.signing, "signing team changed: %s → %s", team(s.Team.Old, s.TeamNames, true), team(s.Team.New, s.TeamNames, false))
		}
		if s.Type != nil {
			add(&l.signing, "profile type: %s → %s", orNone(s.Type.Old), orNone(s.Type.New))
		}
		if s.Devices != nil {
			add(&l.signing, "provisioned devices: %d → %d", s.Devices.Old, s.Devices.New)
		}
		if x := s.Expires; x != nil {
			day := x.At.Format("2006-01-02")
			switch {
			case x.Expired:
				add(&l.signing, "profile expired on %s", day)
			case x.Days == 0:
				add(&l.signing, "profile expires today (%s)", day)
			case x.Days == 1:
				add(&l.signing, "profile expires tomorrow (%s)", day)
			default:
				add(&l.signing, "profile expires in %d days (%s)", x.Days, day)
			}
		}
	}
	if len(d.Files) > 0 {
		counts := map[string]int{}
		for _, f := range d.Files {
			counts[f.Status]++
		}
		var parts []string
		for _, st := range []string{StatusAdded, StatusRemoved, StatusGrown, StatusShrunk} {
			if counts[st] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
			}
		}
		more := ""
		if d.FilesOmitted > 0 {
			more = fmt.Sprintf(" (and %d more)", d.FilesOmitted)
		}
		add(files, "files: %s%s", strings.Join(parts, ", "), more)
	}
	return l
}

// Markdown renders a diff as a report for a pull-request comment: a heading naming the builds,
// what is wrong with their identity, the size table (download and install, before, after,
// change), the components that changed, the other findings as a list (as Summary says them),
// and the files that changed. Every text that comes from a package is escaped, so a crafted file
// name cannot break out of the report.
func Markdown(d *Diff) string {
	var b strings.Builder
	if d == nil {
		d = &Diff{}
	}
	head, _, findings, _ := lines(d)
	newName := buildName(d.New)
	if d.Old == (Ref{}) {
		fmt.Fprintf(&b, "### %s: first build\n\n", md(newName))
	} else {
		fmt.Fprintf(&b, "### What changed since %s\n\n", md(buildName(d.Old)))
		fmt.Fprintf(&b, "%s, compared with %s.\n\n", md(newName), md(buildName(d.Old)))
	}
	for _, l := range head {
		fmt.Fprintf(&b, "**%s**\n\n", md(l))
	}
	if s := d.Size; s != nil {
		b.WriteString("| Size | Before | After | Change |\n|---|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| Download | %s | %s | %s |\n", bytesText(s.Download.Old), bytesText(s.Download.New), signedDelta(s.Download))
		if in := s.Install; in != nil {
			fmt.Fprintf(&b, "| Install | %s | %s | %s |\n", bytesText(in.Old), bytesText(in.New), signedDelta(*in))
		}
		b.WriteString("\n")
		if len(s.Components) > 0 {
			b.WriteString("| Component | Kind | Status | Download | Install |\n|---|---|---|---:|---:|\n")
			for i, c := range s.Components {
				if i == maxMarkdownRows {
					fmt.Fprintf(&b, "| and %d more | | | | |\n", len(s.Components)-i)
					break
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", md(c.Name), md(c.Kind), c.Status, signedDelta(c.Download), signedDelta(c.Install))
			}
			b.WriteString("\n")
		}
	}
	if len(findings) > 0 {
		for _, l := range findings {
			fmt.Fprintf(&b, "- %s\n", md(l))
		}
		b.WriteString("\n")
	}
	if len(d.Files) > 0 {
		b.WriteString("| File | Status | Download | Install |\n|---|---|---:|---:|\n")
		for i, f := range d.Files {
			if i == maxMarkdownRows {
				break
			}
			status := f.Status
			if f.Uncertain {
				status += " (or changed past the threshold)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", md(f.Path), status, signedDelta(f.Download), signedDelta(f.Install))
		}
		if more := len(d.Files) - min(len(d.Files), maxMarkdownRows) + d.FilesOmitted; more > 0 {
			fmt.Fprintf(&b, "\nand %d more files changed.\n", more)
		}
		b.WriteString("\n")
	}
	if d.Empty() && d.Old != (Ref{}) {
		b.WriteString("No changes.\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// buildName names a build: "1.4 (87)", "1.4" when the build is the version, "?" when unknown.
func buildName(r Ref) string {
	switch {
	case r.ReleaseVersion == "" && r.BuildVersion == "":
		return "?"
	case r.BuildVersion == "" || r.BuildVersion == r.ReleaseVersion:
		return text(r.ReleaseVersion)
	case r.ReleaseVersion == "":
		return text(r.BuildVersion)
	}
	return text(r.ReleaseVersion) + " (" + text(r.BuildVersion) + ")"
}

// kindNoun names a component kind in a sentence.
func kindNoun(kind string) string {
	switch kind {
	case "framework", "extension", "module":
		return kind
	case "native":
		return "native libraries"
	case "executable":
		return "executable"
	case "localization":
		return "localizations"
	}
	return "component"
}

// platformName is how a platform is named before a version ("minimum iOS 16.0").
func platformName(p string) string {
	switch p {
	case "ios":
		return "iOS"
	case "macos":
		return "macOS"
	case "android":
		return "Android API"
	case "harmonyos":
		return "HarmonyOS"
	case "windows":
		return "Windows"
	case "linux":
		return "Linux"
	}
	return "OS"
}

// team names a team for the summary: "Name (ID)" when the names are known, else the ID.
func team(id string, names *Change, old bool) string {
	name := ""
	if names != nil {
		name = names.New
		if old {
			name = names.Old
		}
	}
	switch {
	case id == "" && name == "":
		return "none"
	case name == "" || name == id:
		return text(id)
	case id == "":
		return text(name)
	}
	return text(name) + " (" + text(id) + ")"
}

func capabilityNote(c string) string {
	if c == "" {
		return ""
	}
	return " (" + c + ")"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return text(s)
}

// signedDelta says a size change: "+3.2 MB (+4.1%)", "-512 B", "0 B".
func signedDelta(d Delta) string {
	s := signedBytes(d.Change)
	if d.Percent != nil && d.Change != 0 {
		p := strconv.FormatFloat(math.Abs(*d.Percent), 'f', 1, 64)
		if d.Change > 0 {
			p = "+" + p
		} else {
			p = "-" + p
		}
		s += " (" + p + "%)"
	}
	return s
}

// signedBytes says a byte count with its sign: "+3.2 MB", "-12 B", "0 B".
func signedBytes(n int64) string {
	switch {
	case n > 0:
		return "+" + bytesText(n)
	case n < 0:
		if n == -n { // the most negative int64
			return "-" + bytesText(1<<63-1)
		}
		return "-" + bytesText(-n)
	}
	return "0 B"
}

// bytesText says a byte count in decimal units, as app stores show sizes: "512 B", "3.2 MB".
func bytesText(n int64) string {
	if n < 0 {
		return signedBytes(n)
	}
	const unit = 1000
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), 0
	units := []string{"kB", "MB", "GB", "TB", "PB", "EB"}
	for v /= unit; v >= unit && i < len(units)-1; v /= unit {
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// text makes a value from a package safe for one line: no control characters, at most 200
// bytes.
func text(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > 200 {
		cut := 200
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// md escapes text for Markdown (GitHub Flavored), table cells included: the characters that
// open or close markup (emphasis, code, links, HTML, headings, tables, strikethrough, entities)
// are backslash-escaped, and the result is one line.
func md(s string) string {
	s = text(s)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_{}[]<>#|~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Bytes says a byte count in decimal units, as Summary does: "512 B", "3.2 MB".
func Bytes(n int64) string { return bytesText(n) }
