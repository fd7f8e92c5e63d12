package uploads

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// memDB is the database of an upload in memory: the rows UploadTx and DebugFileTx touch. A
// transaction runs alone (the whole database is its lock) on a copy of the rows, which replaces
// them when fn returns nil, so a refused upload leaves the rows as they were, as Postgres's
// rollback does. Every call is logged in steps, so that a test can also see what was never asked.
type memDB struct {
	mu    sync.Mutex
	rows  memRows
	steps []string
	// ledger is the objects ledger the transactions claim from and mark deleted in.
	ledger *memLedger
	// raceKey makes KeepKey find its key taken by a concurrent upload of this release.
	raceKey int64
}

type memRows struct {
	nextID     int64
	apps       map[int64]App
	schemes    map[int64]Scheme
	channels   map[int64]Channel
	versions   map[int64]int // channel id → last version
	releases   map[int64]Release
	devices    map[int64][]string
	insights   map[int64][]byte
	keys       map[[2]any]int64 // (token, idempotency key) → release
	debugFiles map[int64]DebugFile
	metadata   map[int64][]DebugFileMetadata
	outbox     []Event
	claimed    []string
	deleted    []string
}

func newMemDB(l *memLedger) *memDB {
	return &memDB{ledger: l, rows: memRows{apps: map[int64]App{}, schemes: map[int64]Scheme{}, channels: map[int64]Channel{},
		versions: map[int64]int{}, releases: map[int64]Release{}, devices: map[int64][]string{}, insights: map[int64][]byte{},
		keys: map[[2]any]int64{}, debugFiles: map[int64]DebugFile{}, metadata: map[int64][]DebugFileMetadata{}}}
}

func (r memRows) clone() memRows {
	r.apps, r.schemes, r.channels, r.versions = maps.Clone(r.apps), maps.Clone(r.schemes), maps.Clone(r.channels), maps.Clone(r.versions)
	r.releases, r.devices, r.insights, r.keys = maps.Clone(r.releases), maps.Clone(r.devices), maps.Clone(r.insights), maps.Clone(r.keys)
	r.debugFiles, r.metadata = maps.Clone(r.debugFiles), maps.Clone(r.metadata)
	r.outbox, r.claimed, r.deleted = slices.Clone(r.outbox), slices.Clone(r.claimed), slices.Clone(r.deleted)
	return r
}

func (db *memDB) id() int64 { db.rows.nextID++; return db.rows.nextID }

func (db *memDB) step(s string) { db.steps = append(db.steps, s) }

// in runs fn as a transaction: on a copy of the rows, kept when fn returns nil. The ledger's
// claims and deletions are applied only then, as a commit would.
func (db *memDB) in(fn func() error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	saved := db.rows.clone()
	db.rows.claimed, db.rows.deleted = nil, nil
	db.step("begin")
	if err := fn(); err != nil {
		db.rows = saved
		db.step("rollback")
		return err
	}
	for _, k := range db.rows.claimed {
		db.ledger.claim(k)
	}
	for _, k := range db.rows.deleted {
		db.ledger.mark(k, "deleted")
	}
	db.rows.claimed, db.rows.deleted = saved.claimed, saved.deleted
	db.step("commit")
	return nil
}

func (db *memDB) InUploadTx(_ context.Context, fn func(tx UploadTx) error) error {
	return db.in(func() error { return fn(memTx{db}) })
}

func (db *memDB) InDebugFileTx(_ context.Context, fn func(tx DebugFileTx) error) error {
	return db.in(func() error { return fn(memTx{db}) })
}

func (db *memDB) GetRelease(_ context.Context, id int64) (*ReleaseContext, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.release(id)
}

func (db *memDB) release(id int64) (*ReleaseContext, error) {
	r, ok := db.rows.releases[id]
	if !ok {
		return nil, errs.New(errs.NotFound, "release %d not found", id)
	}
	c := db.rows.channels[r.ChannelID]
	s := db.rows.schemes[c.SchemeID]
	return &ReleaseContext{Release: r, Channel: c, Scheme: s, App: db.rows.apps[s.AppID]}, nil
}

// channel records a channel (with its app and scheme) outside any upload, as the API would.
func (db *memDB) channel(app, scheme string, c Channel) Channel {
	a := App{ID: db.id(), Name: app}
	db.rows.apps[a.ID] = a
	s := Scheme{ID: db.id(), AppID: a.ID, Name: scheme}
	db.rows.schemes[s.ID] = s
	c.ID, c.SchemeID = db.id(), s.ID
	db.rows.channels[c.ID] = c
	return c
}

// memTx is a transaction of memDB (the caller holds its lock).
type memTx struct{ db *memDB }

func (t memTx) ReleaseForKey(_ context.Context, tokenID int64, key string) (int64, error) {
	t.db.step("ReleaseForKey")
	return t.db.rows.keys[[2]any{tokenID, key}], nil
}

func (t memTx) KeepKey(_ context.Context, tokenID int64, key string, releaseID int64) (int64, error) {
	t.db.step("KeepKey")
	if t.db.raceKey != 0 {
		return t.db.raceKey, nil
	}
	if first, ok := t.db.rows.keys[[2]any{tokenID, key}]; ok {
		return first, nil
	}
	t.db.rows.keys[[2]any{tokenID, key}] = releaseID
	return 0, nil
}

func (t memTx) LockChannel(_ context.Context, slug string) (*Channel, int64, error) {
	t.db.step("LockChannel")
	for _, c := range t.db.rows.channels {
		if c.Slug == slug {
			return &c, t.db.rows.schemes[c.SchemeID].AppID, nil
		}
	}
	return nil, 0, errs.New(errs.NotFound, "channel not found: check channel_key")
}

func (t memTx) LockAppByID(_ context.Context, appID int64) (string, error) {
	t.db.step(fmt.Sprintf("LockAppByID %d", appID))
	a, ok := t.db.rows.apps[appID]
	if !ok {
		return "", errs.New(errs.NotFound, "there is no app %d", appID)
	}
	return a.Name, nil
}

func (t memTx) LockAppName(_ context.Context, name string) error {
	t.db.step("LockAppName " + name)
	return nil
}

func (t memTx) AppNamed(_ context.Context, name string) (int64, error) {
	t.db.step("AppNamed " + name)
	var found int64
	for id, a := range t.db.rows.apps {
		if a.Name == name && (found == 0 || id < found) {
			found = id
		}
	}
	return found, nil
}

func (t memTx) CreateApp(_ context.Context, name string) (int64, error) {
	t.db.step("CreateApp " + name)
	a := App{ID: t.db.id(), Name: name}
	t.db.rows.apps[a.ID] = a
	return a.ID, nil
}

func (t memTx) EnsureScheme(_ context.Context, appID int64, name string) (int64, error) {
	t.db.step("EnsureScheme " + name)
	for _, s := range t.db.rows.schemes {
		if s.AppID == appID && s.Name == name {
			return s.ID, nil
		}
	}
	s := Scheme{ID: t.db.id(), AppID: appID, Name: name, NewBuildCallout: true}
	t.db.rows.schemes[s.ID] = s
	return s.ID, nil
}

func (t memTx) ChannelFor(_ context.Context, schemeID int64, deviceType string) (*Channel, error) {
	t.db.step("ChannelFor " + deviceType)
	var found *Channel
	for _, c := range t.db.rows.channels {
		if c.SchemeID == schemeID && c.DeviceType == deviceType && (found == nil || c.ID < found.ID) {
			found = &c
		}
	}
	return found, nil
}

func (t memTx) CreateChannel(_ context.Context, c *Channel) (*Channel, error) {
	t.db.step("CreateChannel " + c.Name)
	out := *c
	out.ID = t.db.id()
	if out.Slug == "" {
		out.Slug = fmt.Sprintf("key%d", out.ID)
	}
	t.db.rows.channels[out.ID] = out
	return &out, nil
}

func (t memTx) LearnApp(_ context.Context, channelID int64, bundleID string) error {
	t.db.step("LearnApp " + bundleID)
	c := t.db.rows.channels[channelID]
	if c.AppBundleID == "" {
		c.AppBundleID = bundleID
	}
	t.db.rows.channels[channelID] = c
	return nil
}

func (t memTx) SetPassword(_ context.Context, channelID int64, hash string) error {
	t.db.step("SetPassword")
	c := t.db.rows.channels[channelID]
	c.PasswordHash = &hash
	t.db.rows.channels[channelID] = c
	return nil
}

func (t memTx) NewestRelease(_ context.Context, channelID int64) (*Release, []byte, error) {
	t.db.step("NewestRelease")
	var newest *Release
	for _, r := range t.db.rows.releases {
		if r.ChannelID == channelID && (newest == nil || r.Version > newest.Version) {
			newest = &r
		}
	}
	if newest == nil {
		return nil, nil, nil
	}
	return newest, t.db.rows.insights[newest.ID], nil
}

func (t memTx) NextVersion(_ context.Context, channelID int64) (int, error) {
	t.db.step("NextVersion")
	t.db.rows.versions[channelID]++
	return t.db.rows.versions[channelID], nil
}

func (t memTx) InsertRelease(_ context.Context, r *Release, profileDevices []string) (int64, error) {
	t.db.step("InsertRelease")
	out := *r
	out.ID = t.db.id()
	t.db.rows.releases[out.ID] = out
	t.db.rows.devices[out.ID] = profileDevices
	return out.ID, nil
}

func (t memTx) InsertInsights(_ context.Context, releaseID int64, snapshot []byte) error {
	t.db.step("InsertInsights")
	t.db.rows.insights[releaseID] = snapshot
	return nil
}

func (t memTx) Release(_ context.Context, id int64) (*ReleaseContext, error) {
	t.db.step("Release")
	return t.db.release(id)
}

// Claim refuses, as the store does, a key the ledger no longer holds pending (collected).
func (t memTx) Claim(_ context.Context, keys ...string) error {
	t.db.step("Claim")
	for _, k := range keys {
		if t.db.ledger.state(k) != "pending" || slices.Contains(t.db.rows.claimed, k) {
			return errs.New(errs.Unavailable, "the upload took longer than the collector's grace period and its object was collected; retry")
		}
	}
	t.db.rows.claimed = append(t.db.rows.claimed, keys...)
	return nil
}

func (t memTx) MarkDeleted(_ context.Context, keys ...string) error {
	t.db.step("MarkDeleted")
	t.db.rows.deleted = append(t.db.rows.deleted, keys...)
	return nil
}

func (t memTx) WriteEvents(_ context.Context, evs []Event) error {
	t.db.step("WriteEvents")
	t.db.rows.outbox = append(t.db.rows.outbox, evs...)
	return nil
}

func (t memTx) LockApp(_ context.Context, appID int64) error {
	t.db.step("LockApp")
	if _, ok := t.db.rows.apps[appID]; !ok {
		return errs.New(errs.NotFound, "the app was deleted")
	}
	return nil
}

func (t memTx) InsertDebugFile(_ context.Context, d *DebugFile) (int64, bool, error) {
	t.db.step("InsertDebugFile")
	for _, o := range t.db.rows.debugFiles {
		if o.AppID == d.AppID && o.SHA256 == d.SHA256 {
			return o.ID, false, nil
		}
	}
	out := *d
	out.ID = t.db.id()
	t.db.rows.debugFiles[out.ID] = out
	return out.ID, true, nil
}

func (t memTx) LockDebugFile(_ context.Context, id int64) (string, error) {
	t.db.step("LockDebugFile")
	d, ok := t.db.rows.debugFiles[id]
	if !ok {
		return "", errs.New(errs.NotFound, "debug file %d not found", id)
	}
	return d.ObjectKey, nil
}

func (t memTx) UpdateDebugFile(_ context.Context, d *DebugFile) (int64, error) {
	t.db.step("UpdateDebugFile")
	for _, o := range t.db.rows.debugFiles {
		if o.ID != d.ID && o.AppID == d.AppID && o.SHA256 == d.SHA256 {
			return o.ID, nil
		}
	}
	t.db.rows.debugFiles[d.ID] = *d
	return 0, nil
}

func (t memTx) ReplaceMetadata(_ context.Context, fileID int64, meta []DebugFileMetadata) error {
	t.db.step("ReplaceMetadata")
	t.db.rows.metadata[fileID] = meta
	return nil
}

// GetDebugFile and the other reads of DebugFileStore, for the debug files' use cases.
func (db *memDB) GetDebugFile(_ context.Context, id int64) (*DebugFile, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	d, ok := db.rows.debugFiles[id]
	if !ok {
		return nil, errs.New(errs.NotFound, "debug file %d not found", id)
	}
	d.Metadata = db.rows.metadata[id]
	return &d, nil
}

func (db *memDB) ListDebugFiles(context.Context, int64, string, Page) ([]DebugFile, error) {
	panic("not used by these tests")
}
func (db *memDB) DebugFileVersions(context.Context, int64, string, string, string) ([]DebugFileVersion, error) {
	panic("not used by these tests")
}
func (db *memDB) FindDebugFile(context.Context, DebugFileQuery) (*DebugFile, error) {
	panic("not used by these tests")
}
func (db *memDB) DeleteDebugFile(context.Context, int64) (string, error) {
	panic("not used by these tests")
}
func (db *memDB) ReleaseBundleIDs(context.Context, int64, string) ([]string, error) {
	return nil, nil
}

// Channel finds a channel by its key, with its scheme and app (ChannelFinder).
func (db *memDB) Channel(_ context.Context, key string) (*ChannelContext, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, c := range db.rows.channels {
		if c.Slug == key {
			s := db.rows.schemes[c.SchemeID]
			return &ChannelContext{Channel: c, Scheme: s, App: db.rows.apps[s.AppID]}, nil
		}
	}
	return nil, errs.New(errs.NotFound, "channel not found")
}

// Distribution: the in-memory store has no testers (Builds.Testers is nil in these tests).
func (t memTx) Distribution() DistributionTx { return nil }
