package rpmmd

import (
	"strings"
	"testing"
)

func TestRepoFile(t *testing.T) {
	f := RepoFile{Slug: "tools", Name: "Tools (tools)\nx=1", BaseURL: "https://s.example/channels/tools/rpm", KeyURL: "https://s.example/keys/slipway.asc", Signed: true}
	want := "[slipway-tools]\nname=Tools (tools) x=1\nbaseurl=https://s.example/channels/tools/rpm\nenabled=1\nrepo_gpgcheck=1\ngpgcheck=1\n" +
		"gpgkey=https://s.example/keys/slipway.asc\nmetadata_expire=300\n"
	if got := f.String(); got != want {
		t.Errorf("signed, open:\n%s\nwant\n%s", got, want)
	}
	f.Signed, f.Protected = false, true
	got := f.String()
	if !strings.Contains(got, "\ngpgcheck=0\n") || !strings.Contains(got, "# The packages are not signed") || !strings.HasSuffix(got, "username=slipway\npassword=FEED-TOKEN\n") ||
		strings.Contains(got, "gpgcheck=1") && !strings.Contains(got, "repo_gpgcheck=1") {
		t.Errorf("unsigned, protected:\n%s", got)
	}
	if f.Path() != "/etc/yum.repos.d/tools.repo" {
		t.Errorf("path %s", f.Path())
	}
}
