package uploads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/blobtest"
	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// memLedger is the object ledger in memory: key → "pending" or "deleted".
type memLedger struct {
	mu     sync.Mutex
	states map[string]string
}

func newLedger() *memLedger { return &memLedger{states: map[string]string{}} }

func (l *memLedger) MarkPending(_ context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states[key] = "pending"
	return nil
}
func (l *memLedger) Forget(_ context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.states, key)
	return nil
}
func (l *memLedger) Abandon(_ context.Context, keys ...string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var doomed []string
	for _, k := range keys {
		if l.states[k] == "pending" {
			l.states[k] = "deleted"
			doomed = append(doomed, k)
		}
	}
	return doomed, nil
}

// claim is what the transaction recording an object's owner does at its commit.
func (l *memLedger) claim(key string) { _ = l.Forget(context.Background(), key) }

func (l *memLedger) mark(key, state string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states[key] = state
}

func (l *memLedger) state(key string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.states[key]
}

// memBackend is the in-memory backend; deletes fail while failDelete is set.
type memBackend struct {
	*blobtest.Memory
	failDelete atomic.Bool
}

func newBackend() *memBackend { return &memBackend{Memory: blobtest.NewMemory()} }

func (b *memBackend) Delete(ctx context.Context, key string) error {
	if b.failDelete.Load() {
		return errors.New("storage is down")
	}
	return b.Memory.Delete(ctx, key)
}

func newObjects(max int64) (*Objects, *memLedger, *memBackend) {
	l, b := newLedger(), newBackend()
	return &Objects{Ledger: l, Storage: b, MaxUploadBytes: max, Log: slog.New(slog.DiscardHandler)}, l, b
}

// An upload is recorded as pending before a byte is stored, hashed on the way, and kept under a
// key of its own (the client's file name is kept for downloads, never in the key).
func TestStoreUpload(t *testing.T) {
	o, l, b := newObjects(1 << 20)
	body := "a package"
	obj, err := o.StoreUpload(context.Background(), PackagePrefix, strings.NewReader(body), `C:\ci\"My" App.ipa`)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if obj.SHA256 != hex.EncodeToString(sum[:]) || obj.Size != int64(len(body)) || obj.MD5 != "" {
		t.Errorf("object %+v", obj)
	}
	if !strings.HasPrefix(obj.Key, PackagePrefix+"/") || strings.Contains(obj.Key, "App") || obj.Filename != "My App.ipa" {
		t.Errorf("key %q, file name %q", obj.Key, obj.Filename)
	}
	if l.state(obj.Key) != "pending" || !b.Has(obj.Key) {
		t.Errorf("stored object: ledger %q, in storage %v", l.state(obj.Key), b.Has(obj.Key))
	}
	df, err := o.StoreUpload(context.Background(), DebugFilePrefix, strings.NewReader(body), "d.zip")
	if err != nil || df.MD5 == "" {
		t.Fatalf("debug files are hashed with MD5 too: %+v %v", df, err)
	}
}

// An upload over the limit, or an empty one, is refused and leaves nothing: no object, no ledger
// row.
func TestRefusedUploadsLeaveNothing(t *testing.T) {
	for name, c := range map[string]struct {
		body string
		kind errs.Kind
	}{"over the limit": {strings.Repeat("x", 11), errs.TooLarge}, "empty": {"", errs.Invalid}} {
		o, l, b := newObjects(10)
		if _, err := o.StoreUpload(context.Background(), PackagePrefix, strings.NewReader(c.body), "a.ipa"); errs.KindOf(err) != c.kind {
			t.Errorf("%s: %v", name, err)
		}
		if len(l.states) != 0 || len(b.Keys()) != 0 {
			t.Errorf("%s: left ledger %v, objects %d", name, l.states, len(b.Keys()))
		}
	}
}

// Discarding a failed upload deletes only objects still pending: one claimed by a committed
// transaction is kept. One that cannot be deleted now stays recorded for the collector.
func TestDiscard(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	o, l, b := newObjects(1 << 20)
	claimed, _ := o.StoreUpload(ctx, PackagePrefix, strings.NewReader("claimed"), "a.ipa")
	failed, _ := o.StoreUpload(ctx, PackagePrefix, strings.NewReader("failed"), "b.ipa")
	l.claim(claimed.Key)
	o.Discard(ctx, claimed.Key, failed.Key, "")
	if !b.Has(claimed.Key) || b.Has(failed.Key) || l.state(failed.Key) != "" {
		t.Fatalf("claimed kept %v, failed gone %v (ledger %q)", b.Has(claimed.Key), !b.Has(failed.Key), l.state(failed.Key))
	}
	stuck, _ := o.StoreUpload(ctx, PackagePrefix, strings.NewReader("stuck"), "c.ipa")
	b.failDelete.Store(true)
	o.Discard(ctx, stuck.Key)
	if l.state(stuck.Key) != "deleted" {
		t.Fatalf("an object storage would not delete: ledger %q, want deleted (the collector's)", l.state(stuck.Key))
	}
}

// Objects deleted after a commit are forgotten; those storage refuses stay recorded as deleted.
func TestDeleteObjects(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	o, l, b := newObjects(1 << 20)
	var keys []string
	for i := 0; i < 20; i++ {
		obj, _ := o.StoreUpload(ctx, PackagePrefix, strings.NewReader("x"), "a.ipa")
		l.states[obj.Key] = "deleted" // what the deleting transaction records
		keys = append(keys, obj.Key)
	}
	b.failDelete.Store(true)
	o.DeleteObjects(ctx, keys[:1])
	if l.state(keys[0]) != "deleted" || !b.Has(keys[0]) {
		t.Fatal("a failed deletion was forgotten")
	}
	b.failDelete.Store(false)
	o.DeleteObjects(ctx, keys)
	if len(l.states) != 0 || len(b.Keys()) != 0 {
		t.Fatalf("left: ledger %v, objects %d", l.states, len(b.Keys()))
	}
}

// A package that is not one, or a form refused before the package is read, records nothing and
// discards the object.
func TestRefusedBuildsAreDiscarded(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	for name, f := range map[string]ReleaseForm{
		"not a package":   {},
		"bad changelog":   {Changelog: `[{"message": 1}]`},
		"long password":   {Password: strings.Repeat("p", 73)},
		"javascript link": {CIURL: "javascript:alert(1)"},
	} {
		o, l, b := newObjects(1 << 20)
		obj, err := o.StoreUpload(ctx, PackagePrefix, strings.NewReader("PK\x03\x04 but no zip at all"), "a.ipa")
		if err != nil {
			t.Fatal(err)
		}
		builds := &Builds{Objects: o} // no store: nothing may be recorded
		if _, err := builds.CreateRelease(ctx, obj, f, 1, ""); errs.KindOf(err) != errs.Invalid {
			t.Errorf("%s: %v", name, err)
		}
		if len(l.states) != 0 || len(b.Keys()) != 0 {
			t.Errorf("%s: left ledger %v, objects %d", name, l.states, len(b.Keys()))
		}
	}
}

// Sessions split a file into parts of PartSize, the last one shorter, and take parts only while
// open and unexpired.
func TestSessionParts(t *testing.T) {
	sess := &UploadSession{Size: 10<<20 + 1, PartSize: 5 << 20, State: SessionOpen}
	if partCount(sess) != 3 || partSize(sess, 1) != 5<<20 || partSize(sess, 3) != 1 {
		t.Fatalf("parts: %d, sizes %d %d", partCount(sess), partSize(sess, 1), partSize(sess, 3))
	}
	for state, kind := range map[string]errs.Kind{SessionCompleting: errs.Conflict, SessionExpired: errs.NotFound, SessionAborted: errs.NotFound} {
		if err := usable(&UploadSession{State: state}); errs.KindOf(err) != kind {
			t.Errorf("%s: %v", state, err)
		}
	}
	if err := usable(sess); errs.KindOf(err) != errs.NotFound {
		t.Errorf("an open session past its expiry: %v", err)
	}
}

// Storage without multipart uploads takes no sessions; a session is refused before anything is
// stored when its file is empty, too large, or unnamed.
func TestSessionRefusals(t *testing.T) {
	ctx := WithActor(context.Background(), TokenActor(&Token{ID: 1, Scope: ScopeUpload}))
	ss := &Sessions{Storage: struct{ blob.Backend }{newBackend()}, Config: SessionConfig{MaxUploadBytes: 100}}
	if _, _, err := ss.StartSession(ctx, NewSession{Filename: "a.ipa", Size: 10}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("storage without multipart: %v", err)
	}
	ss.Storage = multipartBackend{blobtest.NewMemory()}
	for name, c := range map[string]struct {
		in   NewSession
		kind errs.Kind
	}{
		"kind":      {NewSession{Kind: "zip", Filename: "a", Size: 1}, errs.Invalid},
		"no name":   {NewSession{Size: 1}, errs.Invalid},
		"empty":     {NewSession{Filename: "a", Size: 0}, errs.Invalid},
		"too large": {NewSession{Filename: "a", Size: 101}, errs.TooLarge},
		"checksum":  {NewSession{Filename: "a", Size: 1, SHA256: "abc"}, errs.Invalid},
		"form":      {NewSession{Filename: "a", Size: 1, Fields: map[string]string{"ci_url": "ftp://x"}}, errs.Invalid},
	} {
		if _, _, err := ss.StartSession(ctx, c.in); errs.KindOf(err) != c.kind {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// multipartBackend takes multipart uploads, but none may be started in these tests.
type multipartBackend struct{ *blobtest.Memory }

func (multipartBackend) CreateMultipart(context.Context, string, string) (string, error) {
	panic("a refused session reached storage")
}

// lookupStore records the debug-file queries made; every other method panics.
type lookupStore struct {
	DebugFileStore
	queries []DebugFileQuery
}

func (s *lookupStore) FindDebugFile(_ context.Context, q DebugFileQuery) (*DebugFile, error) {
	s.queries = append(s.queries, q)
	return nil, errs.New(errs.NotFound, "none")
}

// Debug-file lookups: an MD5 or SHA-256 goes to the matching column, a UUID is tried in dSYM case
// (upper) then mapping case (lower), and malformed ones never reach the database.
func TestDebugFileLookupRules(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	st := &lookupStore{}
	s := &DebugFiles{Store: st}
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

func TestCleanFilename(t *testing.T) {
	if got := cleanFilename(`C:\builds\My "App".ipa`); got != "My App.ipa" {
		t.Errorf("cleanFilename = %q", got)
	}
	if got := cleanFilename("../../etc/passwd"); got != "passwd" {
		t.Errorf("cleanFilename traversal = %q", got)
	}
}
