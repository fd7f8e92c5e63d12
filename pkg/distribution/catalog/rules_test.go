package catalog

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// ruleStore records what the management rules ask of the database; every method a rule is not
// expected to call panics (the embedded nil interfaces).
type ruleStore struct {
	AppStore
	ReleaseStore
	scheme   Scheme
	channel  ChannelContext
	release  ReleaseContext
	releases int

	savedScheme  *Scheme
	savedChannel *Channel
	savedRelease *Release
}

func (s *ruleStore) GetScheme(context.Context, int64) (*Scheme, error) {
	sc := s.scheme
	return &sc, nil
}
func (s *ruleStore) CreateScheme(_ context.Context, sc *Scheme) (*Scheme, error) {
	s.savedScheme = sc
	return sc, nil
}
func (s *ruleStore) UpdateScheme(_ context.Context, sc *Scheme) (*Scheme, error) {
	s.savedScheme = sc
	return sc, nil
}
func (s *ruleStore) ChannelContextByID(context.Context, int64) (*ChannelContext, error) {
	cc := s.channel
	return &cc, nil
}
func (s *ruleStore) CountReleases(context.Context, int64) (int, error) { return s.releases, nil }
func (s *ruleStore) CreateChannel(_ context.Context, c *Channel) (*Channel, error) {
	s.savedChannel = c
	return c, nil
}
func (s *ruleStore) UpdateChannel(_ context.Context, c *Channel) (*Channel, error) {
	s.savedChannel = c
	return c, nil
}
func (s *ruleStore) GetRelease(context.Context, int64) (*ReleaseContext, error) {
	rc := s.release
	return &rc, nil
}
func (s *ruleStore) UpdateRelease(_ context.Context, r *Release) (*ReleaseContext, error) {
	s.savedRelease = r
	return &ReleaseContext{Release: *r}, nil
}

func str(s string) *string { return &s }

// Schemes: a name is required and trimmed, retained_builds bounded, new_build_callout on by
// default; an update changes only what is sent, and nothing is saved when a field is refused.
func TestSchemeRules(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	st := &ruleStore{scheme: Scheme{ID: 3, AppID: 1, Name: "Adhoc", NewBuildCallout: true, RetainedBuilds: 4}}
	s := &Apps{Store: st}
	if _, err := s.CreateScheme(ctx, 1, SchemeChanges{}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("no name: %v", err)
	}
	sc, err := s.CreateScheme(ctx, 1, SchemeChanges{Name: str("  Beta  ")})
	if err != nil || sc.Name != "Beta" || !sc.NewBuildCallout || sc.RetainedBuilds != 0 || sc.AppID != 1 {
		t.Fatalf("create: %+v %v", sc, err)
	}
	for _, bad := range []SchemeChanges{
		{Name: str(" ")}, {Name: str(strings.Repeat("é", 256))}, {Name: str("a\xffb")},
		{RetainedBuilds: new(-1)}, {RetainedBuilds: new(maxRetainedBuilds + 1)},
	} {
		st.savedScheme = nil
		if _, err := s.UpdateScheme(ctx, 3, bad); errs.KindOf(err) != errs.Invalid || st.savedScheme != nil {
			t.Errorf("%+v: %v (saved %v)", bad, err, st.savedScheme)
		}
	}
	off := false
	sc, err = s.UpdateScheme(ctx, 3, SchemeChanges{NewBuildCallout: &off})
	if err != nil || sc.Name != "Adhoc" || sc.NewBuildCallout || sc.RetainedBuilds != 4 {
		t.Fatalf("partial update: %+v %v", sc, err)
	}
}

// Channels: every device type Zealot knows and no other; keys, bundle id patterns and repository
// addresses checked; a password hashed, an empty one clearing it; the device type frozen once the
// channel holds releases.
func TestChannelRules(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	hash := "old"
	st := &ruleStore{channel: ChannelContext{Channel: Channel{ID: 7, SchemeID: 3, Name: "iOS", Slug: "k", DeviceType: "ios", BundleID: "*",
		PasswordHash: &hash, DownloadFilenameType: "original"}}}
	s := &Apps{Store: st}
	for _, dt := range DeviceTypes {
		if _, err := s.CreateChannel(ctx, 3, ChannelChanges{Name: str("c"), DeviceType: str(strings.ToUpper(dt))}); err != nil {
			t.Errorf("device type %s: %v", dt, err)
		}
	}
	c, err := s.CreateChannel(ctx, 3, ChannelChanges{Name: str("c"), DeviceType: str("ios")})
	if err != nil || c.BundleID != "*" || c.DownloadFilenameType != "original" || c.Slug != "" || c.PasswordHash != nil {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for name, ch := range map[string]ChannelChanges{
		"no name":        {DeviceType: str("ios")},
		"no device type": {Name: str("c")},
		"symbian":        {Name: str("c"), DeviceType: str("symbian")},
		"blank name":     {Name: str(" "), DeviceType: str("ios")},
	} {
		st.savedChannel = nil
		if _, err := s.CreateChannel(ctx, 3, ch); errs.KindOf(err) != errs.Invalid || st.savedChannel != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	good := map[string]ChannelChanges{
		"slug":             {Slug: str("Zealot_key-1")},
		"pattern":          {BundleID: str("com.example.*")},
		"empty bundle id":  {BundleID: str("")},
		"https repository": {GitURL: str("https://github.com/example/app")},
		"scp repository":   {GitURL: str("git@gitlab.example.com:team/app.git")},
		"ssh repository":   {GitURL: str("ssh://git@host.example.com:2222/team/app.git")},
		"no repository":    {GitURL: str("")},
		"filename type":    {DownloadFilenameType: str("version_datetime")},
	}
	for name, ch := range good {
		if _, err := s.UpdateChannel(ctx, 7, ch); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]ChannelChanges{
		"slug with a space":     {Slug: str("a b")},
		"slug too long":         {Slug: str(strings.Repeat("a", 65))},
		"bundle id with spaces": {BundleID: str("com example")},
		"javascript repository": {GitURL: str("javascript:alert(1)")},
		"repository no path":    {GitURL: str("https://github.com")},
		"filename type":         {DownloadFilenameType: str("nice")},
		"long password":         {Password: str(strings.Repeat("p", 73))},
	}
	for name, ch := range bad {
		st.savedChannel = nil
		if _, err := s.UpdateChannel(ctx, 7, ch); errs.KindOf(err) != errs.Invalid || st.savedChannel != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	c, err = s.UpdateChannel(ctx, 7, ChannelChanges{Password: str("s3cret")})
	if err != nil || c.PasswordHash == nil || bcrypt.CompareHashAndPassword([]byte(*c.PasswordHash), []byte("s3cret")) != nil {
		t.Fatalf("password: %+v %v", c, err)
	}
	if c, err = s.UpdateChannel(ctx, 7, ChannelChanges{Password: str("")}); err != nil || c.PasswordHash != nil || c.HasPassword() {
		t.Fatalf("clearing the password: %+v %v", c, err)
	}
	if c, err = s.UpdateChannel(ctx, 7, ChannelChanges{Name: str("iPhone")}); err != nil || c.PasswordHash == nil || *c.PasswordHash != "old" {
		t.Fatalf("an update without password keeps it: %+v %v", c, err)
	}
	st.releases = 3
	if _, err := s.UpdateChannel(ctx, 7, ChannelChanges{DeviceType: str("android")}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("device type change with releases: %v", err)
	}
	if _, err := s.UpdateChannel(ctx, 7, ChannelChanges{DeviceType: str("ios")}); err != nil {
		t.Fatalf("the same device type with releases: %v", err)
	}
	st.releases = 0
	if c, err := s.UpdateChannel(ctx, 7, ChannelChanges{DeviceType: str("android")}); err != nil || c.DeviceType != "android" {
		t.Fatalf("device type change of an empty channel: %+v %v", c, err)
	}
}

// Release edits: an admin token any release, an upload token only its own, never one whose
// uploader is unknown (the policy); the upload's rules apply; nothing is saved on a refusal.
func TestReleaseEditRules(t *testing.T) {
	st := &ruleStore{release: ReleaseContext{Release: Release{ID: 9, UploadedBy: 5, ReleaseVersion: "1.0", BuildVersion: "1", Source: "api",
		Changelog: []ChangelogEntry{{Message: "old"}}}}}
	s := &Releases{Store: st, Policy: &policy.Policy{}}
	as := func(tok *Token) context.Context { return WithActor(context.Background(), TokenActor(tok)) }
	admin, owner, other := as(&Token{ID: 1, Scope: ScopeAdmin}), as(&Token{ID: 5, Scope: ScopeUpload}), as(&Token{ID: 6, Scope: ScopeUpload})
	if _, err := s.UpdateRelease(other, 9, ReleaseChanges{Changelog: str("x")}); errs.KindOf(err) != errs.Forbidden || st.savedRelease != nil {
		t.Fatalf("another upload token: %v", err)
	}
	if _, err := s.UpdateRelease(owner, 9, ReleaseChanges{Pinned: boolp(true)}); errs.KindOf(err) != errs.Forbidden || st.savedRelease != nil {
		t.Fatalf("an upload token pinning its own release: %v", err)
	}
	st.release.UploadedBy = 0
	if _, err := s.UpdateRelease(as(&Token{ID: 0, Scope: ScopeUpload}), 9, ReleaseChanges{Changelog: str("x")}); errs.KindOf(err) != errs.Forbidden || st.savedRelease != nil {
		t.Fatalf("an upload token edits a release of unknown origin: %v", err)
	}
	st.release.UploadedBy = 5
	rc, err := s.UpdateRelease(owner, 9, ReleaseChanges{Branch: str("origin/main"), Changelog: str("- a\n* b"), Source: str("")})
	if err != nil || rc.Branch != "main" || len(rc.Changelog) != 2 || rc.Changelog[1].Message != "b" || rc.Source != "api" || rc.ReleaseVersion != "1.0" {
		t.Fatalf("owner edit: %+v %v", rc, err)
	}
	for name, ch := range map[string]ReleaseChanges{
		"blank release version": {ReleaseVersion: str(" ")},
		"blank build version":   {BuildVersion: str("")},
		"ci_url":                {CIURL: str("javascript:x")},
		"release type":          {ReleaseType: str("two words")},
		"changelog":             {Changelog: str(`[{"message":1}]`)},
		"custom fields":         {CustomFields: str(`{"name":"x"}`)},
		"long branch":           {Branch: str(strings.Repeat("b", 256))},
	} {
		st.savedRelease = nil
		if _, err := s.UpdateRelease(admin, 9, ch); errs.KindOf(err) != errs.Invalid || st.savedRelease != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func boolp(b bool) *bool { return &b }
