package uploads

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The rules of recording an upload (record, DebugFiles.record and replace), against the database
// in memory (memDB): what is found, what is made, what is refused, and that a refusal records
// nothing. The same rules under real concurrency, on Postgres, are pkg/httpapi's
// TestConcurrentUploads*.

// memEvents makes one event per write, remembering the release or debug file it was made from.
type memEvents struct {
	releases []ReleaseContext
	debug    []DebugFile
}

func (m *memEvents) ReleaseEvents(kind string, _ int64) EventFunc {
	return func(rc *ReleaseContext) ([]Event, error) {
		m.releases = append(m.releases, *rc)
		return []Event{{ID: fmt.Sprintf("evt_%d", rc.ID), Kind: kind, AppID: rc.App.ID, ChannelID: rc.Channel.ID}}, nil
	}
}

func (m *memEvents) DebugFileEvents(d *DebugFile) ([]Event, error) {
	m.debug = append(m.debug, *d)
	return []Event{{ID: fmt.Sprintf("evt_debug_%d", d.ID), Kind: "debug_file.created", AppID: d.AppID}}, nil
}

type uploadEnv struct {
	db      *memDB
	objects *Objects
	ledger  *memLedger
	backend *memBackend
	events  *memEvents
	builds  *Builds
	debug   *DebugFiles
}

func newUploadEnv() *uploadEnv {
	o, l, b := newObjects(64 << 20)
	e := &uploadEnv{db: newMemDB(l), objects: o, ledger: l, backend: b, events: &memEvents{}}
	e.builds = &Builds{Store: e.db, Channels: e.db, Objects: o, Effects: Effects{Events: e.events}}
	e.debug = &DebugFiles{Store: e.db, Channels: e.db, Objects: o, Events: e.events}
	return e
}

// apk is a synthetic APK of com.example.app ("Example"); filler makes it that much larger.
func apk(build int, filler string) []byte {
	o := androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.app", VersionCode: build,
		VersionName: "1.0", Label: "Example"}}
	if filler != "" {
		o.Entries = []androidtest.AndroidEntry{{Name: "assets/filler", Data: []byte(filler)}}
	}
	return androidtest.BuildAPK(o)
}

// upload stores pkg as an upload does and records it.
func (e *uploadEnv) upload(t *testing.T, pkg []byte, f ReleaseForm, token int64, key string) (*ReleaseContext, *StoredObject, error) {
	t.Helper()
	obj, err := e.objects.StoreUpload(WithActor(context.Background(), SystemActor("test")), PackagePrefix, bytes.NewReader(pkg), "app.apk")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := e.builds.CreateRelease(WithActor(context.Background(), SystemActor("test")), obj, f, token, key)
	return rc, obj, err
}

// steps returns the steps of the last transaction.
func (e *uploadEnv) steps() []string {
	last := 0
	for j, s := range e.db.steps {
		if s == "begin" {
			last = j
		}
	}
	return e.db.steps[last:]
}

func hasStep(steps []string, prefix string) bool {
	return slices.ContainsFunc(steps, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// order fails unless each of prefixes is a step after the one before.
func order(t *testing.T, steps []string, prefixes ...string) {
	t.Helper()
	at := -1
	for _, p := range prefixes {
		i := slices.IndexFunc(steps, func(s string) bool { return strings.HasPrefix(s, p) })
		if i <= at {
			t.Fatalf("steps %v: want %v in this order", steps, prefixes)
		}
		at = i
	}
}

// gone checks that a refused upload's object was discarded: not stored, not in the ledger.
func (e *uploadEnv) gone(t *testing.T, obj *StoredObject) {
	t.Helper()
	if e.backend.Has(obj.Key) || e.ledger.state(obj.Key) != "" {
		t.Errorf("object %s: in storage %v, ledger %q; want it discarded", obj.Key, e.backend.Has(obj.Key), e.ledger.state(obj.Key))
	}
}

// live checks that a recorded upload's object was claimed: stored, off the ledger.
func (e *uploadEnv) live(t *testing.T, key string) {
	t.Helper()
	if !e.backend.Has(key) || e.ledger.state(key) != "" {
		t.Errorf("object %s: in storage %v, ledger %q; want it live", key, e.backend.Has(key), e.ledger.state(key))
	}
}

// An upload without a channel key finds its app by name, its scheme by release type and its
// channel by platform, creating each that is missing, after taking the name's lock; the next
// upload of the name finds all three and takes the next version.
func TestUploadFindsOrCreatesItsChannel(t *testing.T) {
	e := newUploadEnv()
	first, obj, err := e.upload(t, apk(1, ""), ReleaseForm{}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	order(t, e.steps(), "LockAppName Example", "AppNamed Example", "CreateApp Example", "EnsureScheme Adhoc",
		"ChannelFor android", "CreateChannel android", "NextVersion", "InsertRelease", "Claim", "commit")
	if first.App.Name != "Example" || first.Scheme.Name != "Adhoc" || first.Channel.DeviceType != "android" ||
		first.Channel.Name != "android" || first.Channel.BundleID != "*" || first.Version != 1 || first.Channel.Slug == "" {
		t.Fatalf("first upload: app %q, scheme %q, channel %+v, version %d", first.App.Name, first.Scheme.Name, first.Channel, first.Version)
	}
	e.live(t, obj.Key)

	second, _, err := e.upload(t, apk(2, ""), ReleaseForm{}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if steps := e.steps(); hasStep(steps, "CreateApp") || hasStep(steps, "CreateChannel") {
		t.Errorf("the second upload made rows again: %v", steps)
	}
	if second.App.ID != first.App.ID || second.Scheme.ID != first.Scheme.ID || second.Channel.ID != first.Channel.ID || second.Version != 2 {
		t.Fatalf("second upload: app %d scheme %d channel %d version %d; want %d %d %d 2",
			second.App.ID, second.Scheme.ID, second.Channel.ID, second.Version, first.App.ID, first.Scheme.ID, first.Channel.ID)
	}
	if len(e.db.rows.apps) != 1 || len(e.db.rows.schemes) != 1 || len(e.db.rows.channels) != 1 || len(e.db.rows.releases) != 2 {
		t.Fatalf("rows: %d apps, %d schemes, %d channels, %d releases", len(e.db.rows.apps), len(e.db.rows.schemes),
			len(e.db.rows.channels), len(e.db.rows.releases))
	}
	// Each release keeps its insights snapshot; the second was compared with the first.
	if e.db.rows.insights[first.ID] == nil || e.db.rows.insights[second.ID] == nil || second.News == nil || second.News.Against != first.ID {
		t.Errorf("insights: recorded %v %v, news %+v", e.db.rows.insights[first.ID] != nil, e.db.rows.insights[second.ID] != nil, second.News)
	}

	// Another release type goes into a scheme of its own, in the same app.
	third, _, err := e.upload(t, apk(3, ""), ReleaseForm{ReleaseType: "release"}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if third.App.ID != first.App.ID || third.Scheme.Name != "Release" || third.Channel.ID == first.Channel.ID || third.Version != 1 {
		t.Fatalf("a release build: app %d scheme %q channel %d version %d", third.App.ID, third.Scheme.Name, third.Channel.ID, third.Version)
	}
}

// An upload into an app (the console's upload box on an app's page) finds or creates its scheme
// and channel in that app, whatever the package names itself, and never makes an app; an app
// gone meanwhile records nothing.
func TestUploadIntoAnApp(t *testing.T) {
	e := newUploadEnv()
	harbor := e.db.channel("Harbor", "Adhoc", Channel{Name: "iOS", Slug: "ios-key", DeviceType: "ios", BundleID: "*"})
	appID := e.db.rows.schemes[harbor.SchemeID].AppID
	rc, obj, err := e.upload(t, apk(1, ""), ReleaseForm{AppID: appID}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	order(t, e.steps(), fmt.Sprintf("LockAppByID %d", appID), "LockAppName Harbor", "EnsureScheme Adhoc", "ChannelFor android",
		"CreateChannel android", "NextVersion", "InsertRelease", "commit")
	if steps := e.steps(); hasStep(steps, "AppNamed") || hasStep(steps, "CreateApp") {
		t.Errorf("an upload into an app looked for or made one: %v", steps)
	}
	if rc.App.ID != appID || rc.Scheme.ID != harbor.SchemeID || rc.Channel.DeviceType != "android" || rc.Channel.ID == harbor.ID {
		t.Fatalf("into app %d: app %d scheme %d channel %+v", appID, rc.App.ID, rc.Scheme.ID, rc.Channel)
	}
	e.live(t, obj.Key)
	if len(e.db.rows.apps) != 1 {
		t.Errorf("%d apps, want the one", len(e.db.rows.apps))
	}
	_, obj, err = e.upload(t, apk(2, ""), ReleaseForm{AppID: 999}, 1, "")
	if errs.KindOf(err) != errs.NotFound {
		t.Errorf("into an app that is gone: %v, want NotFound", err)
	}
	e.gone(t, obj)
	// A channel key wins over an app: the upload goes where the key says.
	_, _, err = e.upload(t, apk(3, ""), ReleaseForm{AppID: appID, ChannelKey: "ios-key"}, 1, "")
	if errs.KindOf(err) != errs.Invalid {
		t.Errorf("an Android build into the iOS channel named by its key: %v, want Invalid", err)
	}
}

// An upload naming a channel by its key goes into it only if the channel takes the package's
// platform and bundle id; its app's row is locked, not its name. A refused one records nothing and
// discards its object.
func TestUploadIntoANamedChannel(t *testing.T) {
	e := newUploadEnv()
	ios := e.db.channel("Example", "Adhoc", Channel{Name: "iOS", Slug: "ios-key", DeviceType: "ios", BundleID: "*"})
	other := e.db.channel("Other", "Adhoc", Channel{Name: "Android", Slug: "other-key", DeviceType: "android", BundleID: "com.other.*"})
	ours := e.db.channel("Ours", "Beta", Channel{Name: "Android", Slug: "our-key", DeviceType: "android", BundleID: "com.example.*"})
	for key, kind := range map[string]errs.Kind{ios.Slug: errs.Invalid, other.Slug: errs.Invalid, "no-such-key": errs.NotFound} {
		before := len(e.db.steps)
		_, obj, err := e.upload(t, apk(1, ""), ReleaseForm{ChannelKey: key}, 1, "")
		if errs.KindOf(err) != kind {
			t.Errorf("channel %s: %v, want %v", key, err, kind)
		}
		// Refused in the transaction (rolled back), or before one (an unknown key).
		if steps := e.db.steps[before:]; hasStep(steps, "InsertRelease") || hasStep(steps, "NextVersion") ||
			len(steps) > 0 && steps[len(steps)-1] != "rollback" {
			t.Errorf("channel %s: %v", key, steps)
		}
		e.gone(t, obj)
	}
	if len(e.db.rows.releases) != 0 || len(e.db.rows.outbox) != 0 || len(e.db.rows.apps) != 3 {
		t.Fatalf("refused uploads left %d releases, %d events, %d apps", len(e.db.rows.releases), len(e.db.rows.outbox), len(e.db.rows.apps))
	}

	rc, obj, err := e.upload(t, apk(1, ""), ReleaseForm{ChannelKey: ours.Slug}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if steps := e.steps(); !hasStep(steps, "LockChannel") || hasStep(steps, "LockAppName") || hasStep(steps, "CreateApp") {
		t.Errorf("steps %v", steps)
	}
	if rc.Channel.ID != ours.ID || rc.App.Name != "Ours" || rc.Version != 1 {
		t.Fatalf("into channel %d: %+v", ours.ID, rc.Channel)
	}
	e.live(t, obj.Key)
}

// A retried upload (the same token and idempotency key) records nothing and answers the first
// release, also when the retry raced the first and lost at the key; another token's key is its own.
func TestUploadReplaysItsIdempotencyKey(t *testing.T) {
	e := newUploadEnv()
	first, _, err := e.upload(t, apk(1, ""), ReleaseForm{}, 7, "key-1")
	if err != nil {
		t.Fatal(err)
	}
	again, obj, err := e.upload(t, apk(1, ""), ReleaseForm{}, 7, "key-1")
	if err != nil || again.ID != first.ID {
		t.Fatalf("retry: %+v %v, want release %d", again, err, first.ID)
	}
	if steps := e.steps(); hasStep(steps, "LockAppName") || hasStep(steps, "InsertRelease") {
		t.Errorf("a replay went on: %v", steps)
	}
	e.gone(t, obj)

	// The retry that loses the race: its key is taken between its look-up and its own record.
	e.db.raceKey = first.ID
	again, obj, err = e.upload(t, apk(2, ""), ReleaseForm{}, 7, "key-2")
	e.db.raceKey = 0
	if err != nil || again.ID != first.ID {
		t.Fatalf("raced retry: %+v %v, want release %d", again, err, first.ID)
	}
	if e.steps()[len(e.steps())-1] != "rollback" || len(e.db.rows.releases) != 1 || e.db.rows.versions[first.Channel.ID] != 1 {
		t.Fatalf("the raced retry kept something: %d releases, version %d", len(e.db.rows.releases), e.db.rows.versions[first.Channel.ID])
	}
	e.gone(t, obj)

	other, _, err := e.upload(t, apk(1, ""), ReleaseForm{}, 8, "key-1")
	if err != nil || other.ID == first.ID || other.Version != 2 {
		t.Fatalf("another token's key: %+v %v", other, err)
	}
}

// A channel that enforces its size budget refuses a build that crosses it before anything is
// recorded: no version taken, no password set, no release, no event, the object discarded. One
// that does not enforce it records the build with the warning, and its event carries it.
func TestUploadOverAnEnforcedBudgetRecordsNothing(t *testing.T) {
	e := newUploadEnv()
	limit := int64(100)
	enforced := e.db.channel("Example", "Adhoc", Channel{Name: "Android", Slug: "strict", DeviceType: "android", BundleID: "*",
		Budget: SizeBudget{MaxBytes: &limit, Enforce: true}})
	_, obj, err := e.upload(t, apk(1, ""), ReleaseForm{ChannelKey: enforced.Slug, Password: "secret"}, 1, "")
	if errs.KindOf(err) != errs.Invalid || !strings.Contains(err.Error(), "size budget") {
		t.Fatalf("over an enforced budget: %v", err)
	}
	steps := e.steps()
	order(t, steps, "LockChannel", "NewestRelease", "rollback")
	if hasStep(steps, "NextVersion") || hasStep(steps, "InsertRelease") || hasStep(steps, "WriteEvents") {
		t.Errorf("steps after the refusal: %v", steps)
	}
	if c := e.db.rows.channels[enforced.ID]; c.PasswordHash != nil || e.db.rows.versions[enforced.ID] != 0 ||
		len(e.db.rows.releases) != 0 || len(e.db.rows.outbox) != 0 || len(e.db.rows.insights) != 0 {
		t.Fatalf("a refused upload left: password %v, version %d, %d releases, %d events", c.PasswordHash != nil,
			e.db.rows.versions[enforced.ID], len(e.db.rows.releases), len(e.db.rows.outbox))
	}
	e.gone(t, obj)

	warned := e.db.channel("Warned", "Adhoc", Channel{Name: "Android", Slug: "lenient", DeviceType: "android", BundleID: "*",
		Budget: SizeBudget{MaxBytes: &limit}})
	rc, _, err := e.upload(t, apk(1, ""), ReleaseForm{ChannelKey: warned.Slug}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if rc.News == nil || len(rc.News.BudgetWarnings) != 1 {
		t.Fatalf("news: %+v", rc.News)
	}
	if made := e.events.releases[len(e.events.releases)-1]; made.ID != rc.ID || made.News == nil || len(made.News.BudgetWarnings) != 1 {
		t.Fatalf("the event was made from %+v", made.News)
	}
}

// An upload's password becomes its channel's (bcrypt), in the upload's transaction.
func TestUploadSetsTheChannelPassword(t *testing.T) {
	e := newUploadEnv()
	rc, _, err := e.upload(t, apk(1, ""), ReleaseForm{Password: "s3cret"}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	order(t, e.steps(), "CreateChannel", "SetPassword", "InsertRelease", "commit")
	c := e.db.rows.channels[rc.Channel.ID]
	if c.PasswordHash == nil || bcrypt.CompareHashAndPassword([]byte(*c.PasswordHash), []byte("s3cret")) != nil {
		t.Fatalf("channel password: %v", c.PasswordHash)
	}
	if _, _, err := e.upload(t, apk(2, ""), ReleaseForm{}, 1, ""); err != nil || e.db.rows.channels[rc.Channel.ID].PasswordHash == nil {
		t.Fatalf("an upload without a password cleared the channel's: %v", err)
	}
}

// The release.created event is made from the release as recorded (its id, version, channel and
// news) and written in the upload's transaction; without an event maker there is none.
func TestUploadMakesItsEvents(t *testing.T) {
	e := newUploadEnv()
	rc, _, err := e.upload(t, apk(1, ""), ReleaseForm{}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	order(t, e.steps(), "InsertRelease", "Release", "WriteEvents", "commit")
	if len(e.db.rows.outbox) != 1 || e.db.rows.outbox[0].Kind != "release.created" || e.db.rows.outbox[0].ChannelID != rc.Channel.ID {
		t.Fatalf("outbox %+v", e.db.rows.outbox)
	}
	if made := e.events.releases[0]; made.ID != rc.ID || made.Version != 1 || made.App.Name != "Example" || made.News == nil {
		t.Fatalf("made from %+v", made)
	}
	e.builds.Effects.Events = nil
	if _, _, err := e.upload(t, apk(2, ""), ReleaseForm{}, 1, ""); err != nil || len(e.db.rows.outbox) != 1 || hasStep(e.steps(), "WriteEvents") {
		t.Fatalf("without events: %v, outbox %d", err, len(e.db.rows.outbox))
	}
}

// An upload whose object the collector took meanwhile (its ledger row is gone) is refused and
// records nothing: the release would point at nothing.
func TestUploadOfACollectedObjectRecordsNothing(t *testing.T) {
	e := newUploadEnv()
	obj, err := e.objects.StoreUpload(WithActor(context.Background(), SystemActor("test")), PackagePrefix, bytes.NewReader(apk(1, "")), "app.apk")
	if err != nil {
		t.Fatal(err)
	}
	e.ledger.mark(obj.Key, "deleted") // the collector's
	if _, err := e.builds.CreateRelease(WithActor(context.Background(), SystemActor("test")), obj, ReleaseForm{}, 1, ""); errs.KindOf(err) != errs.Unavailable {
		t.Fatalf("a collected object: %v", err)
	}
	if len(e.db.rows.releases) != 0 || len(e.db.rows.apps) != 0 || len(e.db.rows.outbox) != 0 {
		t.Fatalf("left %d releases, %d apps, %d events", len(e.db.rows.releases), len(e.db.rows.apps), len(e.db.rows.outbox))
	}
}

// mappingArchive is an Android mapping archive with this mapping file.
func mappingArchive(t *testing.T, mapping string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("mapping.txt")
	if err == nil {
		_, err = w.Write([]byte(mapping))
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func (e *uploadEnv) storeDebug(t *testing.T, data []byte) *StoredObject {
	t.Helper()
	obj, err := e.objects.StoreUpload(WithActor(context.Background(), SystemActor("test")), DebugFilePrefix, bytes.NewReader(data), "mapping.zip")
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// A debug file is recorded with its metadata and its event under its app's lock, and its object
// claimed; the same content again for the app is a conflict that records nothing. Replacing one
// moves it to the new object and hands the old one to deletion; content another debug file of
// the app has is refused there too. An app destroyed meanwhile is not found.
func TestDebugFileRules(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	e := newUploadEnv()
	ch := e.db.channel("Example", "Adhoc", Channel{Name: "Android", Slug: "android-key", DeviceType: "android", BundleID: "*"})
	form := DebugFileForm{ChannelKey: ch.Slug, ReleaseVersion: "1.0", BuildVersion: "1"}
	first := e.storeDebug(t, mappingArchive(t, "a -> b:\n"))
	df, err := e.debug.UploadDebugFile(ctx, first, form)
	if err != nil {
		t.Fatal(err)
	}
	order(t, e.steps(), "LockApp", "InsertDebugFile", "ReplaceMetadata", "WriteEvents", "Claim", "commit")
	if df.ReleaseVersion != "1.0" || len(df.Metadata) != 1 || df.Metadata[0].Type != "proguard" || df.ObjectKey != first.Key {
		t.Fatalf("debug file %+v", df)
	}
	if len(e.db.rows.outbox) != 1 || e.events.debug[0].ID != df.ID {
		t.Fatalf("events: %+v", e.db.rows.outbox)
	}
	e.live(t, first.Key)

	twin := e.storeDebug(t, mappingArchive(t, "a -> b:\n"))
	if _, err := e.debug.UploadDebugFile(ctx, twin, form); errs.KindOf(err) != errs.Conflict || !strings.Contains(err.Error(), fmt.Sprint(df.ID)) {
		t.Fatalf("the same content again: %v", err)
	}
	if len(e.db.rows.debugFiles) != 1 || len(e.db.rows.outbox) != 1 {
		t.Fatalf("a refused debug file left %d rows, %d events", len(e.db.rows.debugFiles), len(e.db.rows.outbox))
	}
	e.gone(t, twin)

	second, err := e.debug.UploadDebugFile(ctx, e.storeDebug(t, mappingArchive(t, "c -> d:\n")), form)
	if err != nil {
		t.Fatal(err)
	}
	newer := e.storeDebug(t, mappingArchive(t, "e -> f:\n"))
	replaced, err := e.debug.ReplaceDebugFile(ctx, df.ID, newer, DebugFileForm{ChannelKey: ch.Slug, ReleaseVersion: "1.1", BuildVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	order(t, e.steps(), "LockApp", "LockDebugFile", "UpdateDebugFile", "ReplaceMetadata", "MarkDeleted", "Claim", "commit")
	if replaced.ID != df.ID || replaced.ObjectKey != newer.Key || replaced.ReleaseVersion != "1.1" {
		t.Fatalf("replaced: %+v", replaced)
	}
	e.live(t, newer.Key)
	if e.backend.Has(first.Key) || e.ledger.state(first.Key) != "" {
		t.Errorf("the replaced object is still stored (%v) or recorded (%q)", e.backend.Has(first.Key), e.ledger.state(first.Key))
	}
	clash := e.storeDebug(t, mappingArchive(t, "c -> d:\n")) // second's content
	if _, err := e.debug.ReplaceDebugFile(ctx, df.ID, clash, form); errs.KindOf(err) != errs.Conflict || !strings.Contains(err.Error(), fmt.Sprint(second.ID)) {
		t.Fatalf("replacing with another debug file's content: %v", err)
	}
	if got := e.db.rows.debugFiles[df.ID]; got.ObjectKey != newer.Key {
		t.Fatalf("a refused replacement changed the row: %+v", got)
	}
	e.gone(t, clash)

	// The app is destroyed between the channel's look-up and the transaction.
	late := e.storeDebug(t, mappingArchive(t, "g -> h:\n"))
	e.debug.Channels = destroyedApp{e.db}
	if _, err := e.debug.UploadDebugFile(ctx, late, form); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("into a destroyed app: %v", err)
	}
	e.gone(t, late)
}

// destroyedApp finds a channel, then destroys its app, as a concurrent deletion would.
type destroyedApp struct{ db *memDB }

func (d destroyedApp) Channel(ctx context.Context, key string) (*ChannelContext, error) {
	cc, err := d.db.Channel(ctx, key)
	if err == nil {
		d.db.mu.Lock()
		delete(d.db.rows.apps, cc.App.ID)
		d.db.mu.Unlock()
	}
	return cc, err
}

// Whether Slipway signs a build is decided in the upload's transaction: a macOS package without a
// signature, in a channel with Sparkle signing on, by an actor the policy lets have it signed. An
// upload token (it reaches every app) and a channel with signing off get nothing marked, and so
// does a package that came with its own signature.
func TestUploadMarksForSigning(t *testing.T) {
	e := newUploadEnv()
	e.builds.Policy = &policy.Policy{}
	signing := e.db.channel("Desk", "Release", Channel{Name: "Mac", Slug: "signing", DeviceType: "macos", BundleID: "*", SparkleSigning: true})
	plain := e.db.channel("Desk2", "Release", Channel{Name: "Mac", Slug: "plain", DeviceType: "macos", BundleID: "*"})
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0", Build: "1", MinOS: "12.0"})
	sig := base64.StdEncoding.EncodeToString(make([]byte, 64))
	admin := Actor{Kind: ActorToken, TokenID: 1, Name: "admin", Scope: ScopeAdmin}
	upload := Actor{Kind: ActorToken, TokenID: 2, Name: "ci", Scope: ScopeUpload}
	for _, c := range []struct {
		name  string
		actor Actor
		form  ReleaseForm
		want  bool
	}{
		{"an admin token, signing on", admin, ReleaseForm{ChannelKey: signing.Slug}, true},
		{"an upload token, signing on", upload, ReleaseForm{ChannelKey: signing.Slug}, false},
		{"an admin token, signing off", admin, ReleaseForm{ChannelKey: plain.Slug}, false},
		{"an admin token, its own signature", admin, ReleaseForm{ChannelKey: signing.Slug, EdSignature: sig}, false},
	} {
		ctx := WithActor(context.Background(), c.actor)
		obj, err := e.objects.StoreUpload(ctx, PackagePrefix, bytes.NewReader(zip), "Desk.zip")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := e.builds.CreateRelease(ctx, obj, c.form, c.actor.TokenID, "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rc.SparkleSign != c.want {
			t.Errorf("%s: marked for signing %v, want %v", c.name, rc.SparkleSign, c.want)
		}
	}
}
