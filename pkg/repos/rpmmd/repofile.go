package rpmmd

import (
	"fmt"
	"strings"
)

// RepoFile is what a machine's /etc/yum.repos.d/<slug>.repo holds for a channel's repository.
type RepoFile struct {
	// Slug is the channel's: the repository's id is slipway-<slug>. Name is its description.
	Slug, Name string
	// BaseURL is the repository (…/channels/<slug>/rpm); KeyURL the installation's public key
	// (…/keys/slipway.asc).
	BaseURL, KeyURL string
	// Protected adds the username and a password placeholder (the channel's feed token).
	Protected bool
	// Signed says every package the repository lists carries an OpenPGP signature: gpgcheck=1.
	// Otherwise gpgcheck=0, with a comment on what covers the packages (decisions.md).
	Signed bool
}

// ID is the repository's id on the machine (dnf --repo, the section's name).
func (f RepoFile) ID() string { return "slipway-" + f.Slug }

// Path is where the file goes on the machine.
func (f RepoFile) Path() string { return "/etc/yum.repos.d/" + f.Slug + ".repo" }

// String renders the file. Values are single lines (a line break would start a new setting).
func (f RepoFile) String() string {
	line := func(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }
	var b strings.Builder
	fmt.Fprintf(&b, "[%s]\nname=%s\nbaseurl=%s\nenabled=1\nrepo_gpgcheck=1\n", line(f.ID()), line(f.Name), line(f.BaseURL))
	if f.Signed {
		b.WriteString("gpgcheck=1\n")
	} else {
		b.WriteString("# The packages are not signed: repo_gpgcheck=1 and the SHA-256 of each package in the\n" +
			"# signed metadata cover them. Sign them with rpmsign and set gpgcheck=1 (docs/repositories.md).\n" +
			"gpgcheck=0\n")
	}
	fmt.Fprintf(&b, "gpgkey=%s\nmetadata_expire=300\n", line(f.KeyURL))
	if f.Protected {
		b.WriteString("username=slipway\npassword=FEED-TOKEN\n")
	}
	return b.String()
}
