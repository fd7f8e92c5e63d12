package links

import "testing"

func TestGitLinks(t *testing.T) {
	cases := []struct{ git, repo string }{
		{"git@github.com:org/repo.git", "https://github.com/org/repo"},
		{"github.com:org/repo", "https://github.com/org/repo"},
		{"ssh://git@gitlab.example.com:2222/group/sub/repo.git", "https://gitlab.example.com/group/sub/repo"},
		{"https://github.com/org/repo.git", "https://github.com/org/repo"},
		{"https://user:secret@git.example.com/org/repo/", "https://git.example.com/org/repo"},
		{"http://git.local/org/repo?x=1#y", "http://git.local/org/repo"},
		{"  git@github.com:org/repo.git  ", "https://github.com/org/repo"},
		// Never linked:
		{"javascript:alert(1)", ""},
		{"javascript:alert(1)//github.com/a/b", ""},
		{"javascript://github.com/%0aalert(1)", ""},
		{"JavaScript://github.com/a", ""},
		{"data:text/html,<script>alert(1)</script>", ""},
		{"ftp://example.com/org/repo", ""},
		{"file:///etc/passwd", ""},
		{"https://github.com", ""},
		{"https://github.com/\"onmouseover=x", ""},
		{"", ""},
		{"repo", ""},
	}
	for _, c := range cases {
		if got := GitRepo(c.git); got != c.repo {
			t.Errorf("GitRepo(%q) = %q, want %q", c.git, got, c.repo)
		}
	}
	const g = "git@github.com:org/repo.git"
	if got := GitCommit(g, "0123abc"); got != "https://github.com/org/repo/commit/0123abc" {
		t.Errorf("GitCommit: %q", got)
	}
	if got := GitBranch(g, "feature/new ui"); got != "https://github.com/org/repo/tree/feature/new%20ui" {
		t.Errorf("GitBranch: %q", got)
	}
	if GitCommit("javascript:x", "abc") != "" || GitBranch(g, "") != "" || GitCommit(g, "") != "" {
		t.Error("unlinkable commit or branch got a link")
	}
}

func TestWebURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://ci.example.com/b/1": "https://ci.example.com/b/1",
		"http://ci.local:8080/x":     "http://ci.local:8080/x",
		"javascript:alert(1)":        "",
		"data:text/html,x":           "",
		"//ci.example.com/b":         "",
		"ci.example.com/b":           "",
	} {
		if got := WebURL(in); got != want {
			t.Errorf("WebURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPageLinks(t *testing.T) {
	l := Links{Base: "https://slipway.example.com/base"}
	if got := l.ChannelPage("abc", 1); got != "https://slipway.example.com/base/channels/abc" {
		t.Errorf("ChannelPage 1: %q", got)
	}
	if got := l.ChannelPage("abc", 3); got != "https://slipway.example.com/base/channels/abc?page=3" {
		t.Errorf("ChannelPage 3: %q", got)
	}
	if got := l.Static("/fontawesome/css/all.min.css"); got != "https://slipway.example.com/base/static/fontawesome/css/all.min.css" {
		t.Errorf("Static: %q", got)
	}
}
