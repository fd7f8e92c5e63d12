package distribution

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// ruleStore records what the management rules ask of the database; every method a rule is not
// expected to call panics (the embedded nil Store).
type ruleStore struct {
	Store
	scheme   Scheme
	channel  ChannelContext
	release  ReleaseContext
	releases int

	savedScheme  *Scheme
	savedChannel *Channel
	savedRelease *Release
	savedDevice  *Device
	query        *DebugFileQuery
	queries      []DebugFileQuery
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
func (s *ruleStore) UpsertDevice(_ context.Context, d *Device) (*Device, bool, error) {
	s.savedDevice = d
	return d, true, nil
}
func (s *ruleStore) FindDebugFile(_ context.Context, q DebugFileQuery) (*DebugFile, error) {
	s.queries = append(s.queries, q)
	return nil, errs.New(errs.NotFound, "none")
}

func str(s string) *string { return &s }

// Schemes: a name is required and trimmed, retained_builds bounded, new_build_callout on by
// default; an update changes only what is sent, and nothing is saved when a field is refused.
func TestSchemeRules(t *testing.T) {
	ctx := context.Background()
	st := &ruleStore{scheme: Scheme{ID: 3, AppID: 1, Name: "Adhoc", NewBuildCallout: true, RetainedBuilds: 4}}
	s := &Service{Store: st}
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
	ctx := context.Background()
	hash := "old"
	st := &ruleStore{channel: ChannelContext{Channel: Channel{ID: 7, SchemeID: 3, Name: "iOS", Slug: "k", DeviceType: "ios", BundleID: "*",
		PasswordHash: &hash, DownloadFilenameType: "original"}}}
	s := &Service{Store: st}
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
// uploader is unknown; the upload's rules apply; nothing is saved on a refusal.
func TestReleaseEditRules(t *testing.T) {
	ctx := context.Background()
	st := &ruleStore{release: ReleaseContext{Release: Release{ID: 9, UploadedBy: 5, ReleaseVersion: "1.0", BuildVersion: "1", Source: "api",
		Changelog: []ChangelogEntry{{Message: "old"}}}}}
	s := &Service{Store: st}
	admin, owner, other := &Token{ID: 1, Scope: ScopeAdmin}, &Token{ID: 5, Scope: ScopeUpload}, &Token{ID: 6, Scope: ScopeUpload}
	if !CanEditRelease(admin, &st.release.Release) || !CanEditRelease(owner, &st.release.Release) || CanEditRelease(other, &st.release.Release) {
		t.Fatal("CanEditRelease matrix")
	}
	if CanEditRelease(&Token{ID: 0, Scope: ScopeUpload}, &Release{UploadedBy: 0}) {
		t.Fatal("an upload token edits a release of unknown origin")
	}
	if _, err := s.UpdateRelease(ctx, other, 9, ReleaseChanges{Changelog: str("x")}); errs.KindOf(err) != errs.Forbidden || st.savedRelease != nil {
		t.Fatalf("another upload token: %v", err)
	}
	rc, err := s.UpdateRelease(ctx, owner, 9, ReleaseChanges{Branch: str("origin/main"), Changelog: str("- a\n* b"), Source: str("")})
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
		if _, err := s.UpdateRelease(ctx, admin, 9, ch); errs.KindOf(err) != errs.Invalid || st.savedRelease != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// UDIDs: Apple's three shapes, stored in Apple's case; a device needs a name.
func TestUDIDRules(t *testing.T) {
	for in, want := range map[string]string{
		"00008030-001a2b3c4d5e6f70":            "00008030-001A2B3C4D5E6F70",
		strings.Repeat("AB", 20):               strings.Repeat("ab", 20),
		"a1b2c3d4-e5f6-a7b8-c9d0-e1f2a3b4c5d6": "A1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6",
		" 00008030-001A2B3C4D5E6F70 ":          "00008030-001A2B3C4D5E6F70",
	} {
		if got, err := NormalizeUDID(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "00008030-001A", strings.Repeat("g", 40), "00008030_001A2B3C4D5E6F70", strings.Repeat("a", 41)} {
		if _, err := NormalizeUDID(bad); errs.KindOf(err) != errs.Invalid {
			t.Errorf("%q accepted", bad)
		}
	}
	st := &ruleStore{}
	s := &Service{Store: st}
	if _, _, err := s.SyncDevice(context.Background(), "00008030-001A2B3C4D5E6F70", DeviceChanges{Model: "iPhone"}); errs.KindOf(err) != errs.Invalid || st.savedDevice != nil {
		t.Fatalf("device without name: %v", err)
	}
	if _, _, err := s.SyncDevice(context.Background(), "00008030-001A2B3C4D5E6F70", DeviceChanges{Name: "x", Status: "EN\x01"}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("control character in status: %v", err)
	}
	if d, _, err := s.SyncDevice(context.Background(), "00008030-001a2b3c4d5e6f70", DeviceChanges{Name: " QA "}); err != nil || d.Name != "QA" || d.Source != "api" {
		t.Fatalf("sync: %+v %v", d, err)
	}
}

// Tokens: a name and a scope of upload (the default) or admin; authentication refuses a missing
// secret and a scope too narrow.
func TestTokenRules(t *testing.T) {
	s := &Service{Store: &ruleStore{}}
	for name, c := range map[string][2]string{"no name": {" ", "upload"}, "long name": {strings.Repeat("n", 256), "upload"}, "scope": {"ci", "root"}} {
		if _, _, err := s.CreateToken(context.Background(), c[0], c[1]); errs.KindOf(err) != errs.Invalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.Authenticate(context.Background(), "", ScopeUpload); errs.KindOf(err) != errs.Unauthenticated {
		t.Fatalf("empty secret: %v", err)
	}
	upload := &Token{Scope: ScopeUpload}
	if upload.Allows(ScopeAdmin) || !upload.Allows(ScopeUpload) || !(&Token{Scope: ScopeAdmin}).Allows(ScopeUpload) {
		t.Fatal("Allows")
	}
}

// Debug-file lookups: an MD5 or SHA-256 goes to the matching column, a UUID is tried in dSYM case
// (upper) then mapping case (lower), and malformed ones never reach the database.
func TestDebugFileLookupRules(t *testing.T) {
	ctx := context.Background()
	st := &ruleStore{}
	s := &Service{Store: st}
	md5hex, shahex := strings.Repeat("AB", 16), strings.Repeat("cd", 32)
	_, _ = s.DebugFileByChecksum(ctx, md5hex)
	_, _ = s.DebugFileByChecksum(ctx, shahex)
	_, _ = s.DebugFileByUUID(ctx, "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9")
	want := []DebugFileQuery{{MD5: strings.ToLower(md5hex)}, {SHA256: shahex},
		{UUID: "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9"}, {UUID: "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"}}
	if len(st.queries) != len(want) {
		t.Fatalf("queries %+v", st.queries)
	}
	for i := range want {
		if st.queries[i] != want[i] {
			t.Errorf("query %d: %+v, want %+v", i, st.queries[i], want[i])
		}
	}
	st.queries = nil
	for _, bad := range []string{"", "xyz", strings.Repeat("a", 33)} {
		if _, err := s.DebugFileByChecksum(ctx, bad); errs.KindOf(err) != errs.Invalid {
			t.Errorf("checksum %q: %v", bad, err)
		}
		if _, err := s.DebugFileByUUID(ctx, bad); errs.KindOf(err) != errs.Invalid {
			t.Errorf("uuid %q: %v", bad, err)
		}
	}
	if len(st.queries) != 0 {
		t.Fatalf("malformed lookups reached the database: %+v", st.queries)
	}
	if _, err := s.DebugFileByVersion(ctx, &ChannelContext{}, "1.0", ""); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("version without build: %v", err)
	}
}
