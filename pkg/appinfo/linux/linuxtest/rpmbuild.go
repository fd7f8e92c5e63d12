package linuxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SpecOptions describes a package for rpmbuild (RPMBuild): a real .rpm made by rpm's own tools.
type SpecOptions struct {
	Name, Version, Release string // defaults "demo", "1.0", "1"
	Epoch                  int    // written when > 0
	Arch                   string // BuildArch; default noarch
	Summary                string // default "Demo built with rpmbuild"
	Description            string // default two lines
	// Deps are further preamble lines: "Requires: foo >= 1", "Provides: bar = 2", …
	Deps []string
	// Files is how many files the package holds besides /usr/bin/<name> (under /usr/share/<name>).
	Files int
}

// RPMBuild writes a spec for o under dir and builds it with rpmbuild -bb (xz payload, build time
// and host fixed), returning the path of the .rpm. It fails when rpmbuild is missing.
func RPMBuild(dir string, o SpecOptions) (string, error) {
	if _, err := exec.LookPath("rpmbuild"); err != nil {
		return "", err
	}
	name, version, release := or(o.Name, "demo"), or(o.Version, "1.0"), or(o.Release, "1")
	var spec strings.Builder
	fmt.Fprintf(&spec, "Name: %s\nVersion: %s\nRelease: %s\nSummary: %s\nLicense: MIT\nURL: https://example.org/%s\nBuildArch: %s\n",
		name, version, release, or(o.Summary, "Demo built with rpmbuild"), name, or(o.Arch, "noarch"))
	if o.Epoch > 0 {
		fmt.Fprintf(&spec, "Epoch: %d\n", o.Epoch)
	}
	for _, d := range o.Deps {
		spec.WriteString(d + "\n")
	}
	fmt.Fprintf(&spec, "\n%%description\n%s\n\n", or(o.Description, "A package built by the tests.\nIts second line."))
	fmt.Fprintf(&spec, "%%install\nmkdir -p %%{buildroot}/usr/bin %%{buildroot}/usr/share/%s\nprintf '#!/bin/sh\\necho %s %s\\n' > %%{buildroot}/usr/bin/%s\nchmod 755 %%{buildroot}/usr/bin/%s\n",
		name, name, version, name, name)
	if o.Files > 0 {
		fmt.Fprintf(&spec, "for i in $(seq 1 %d); do echo $i > %%{buildroot}/usr/share/%s/file-with-a-longer-name-$i.txt; done\n", o.Files, name)
	}
	fmt.Fprintf(&spec, "\n%%files\n/usr/bin/%s\n", name)
	if o.Files > 0 {
		fmt.Fprintf(&spec, "/usr/share/%s\n", name)
	}
	top, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(top, 0o755); err != nil {
		return "", err
	}
	specPath := filepath.Join(top, name+"-"+version+"-"+release+".spec")
	if err := os.WriteFile(specPath, []byte(spec.String()), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("rpmbuild", "-bb", "--quiet",
		"--define", "_topdir "+filepath.Join(top, "rpmbuild"),
		"--define", "_binary_payload w6.xzdio",
		"--define", "_buildhost slipway-test",
		"--define", "use_source_date_epoch_as_buildtime 1",
		"--define", "_build_id_links none",
		specPath)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("rpmbuild: %v\n%s", err, out)
	}
	matches, _ := filepath.Glob(filepath.Join(top, "rpmbuild", "RPMS", "*", name+"-"+version+"-"+release+".*.rpm"))
	if len(matches) != 1 {
		return "", fmt.Errorf("rpmbuild made %q", matches)
	}
	return matches[0], nil
}
