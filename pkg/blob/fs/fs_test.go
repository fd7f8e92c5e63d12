package fs_test

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/blobtest"
	"github.com/slipwayhq/slipway/pkg/blob/fs"
)

func newStore(t testing.TB) *fs.Store {
	s, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Backend {
		s := newStore(t)
		t.Cleanup(func() { assertNoTemp(t, s.Dir()) })
		return s
	})
}

// assertNoTemp fails if a temp file survived (failed and cancelled Puts must remove theirs).
func assertNoTemp(t *testing.T, dir string) {
	filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".slipway-tmp-") {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}

func TestSymlinkEscape(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Dir(), "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(s.Dir(), "secretlink")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"escape/secret", "secretlink", "escape/new"} {
		if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrInvalidKey) && !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%q) = %v, want ErrInvalidKey", key, err)
		} else if err == nil {
			t.Errorf("Stat(%q) reached outside the root", key)
		}
		if rc, err := s.GetRange(ctx, key, 0, -1); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("GetRange(%q) read %q outside the root", key, b)
		} else if !errors.Is(err, blob.ErrInvalidKey) {
			t.Logf("GetRange(%q) = %v", key, err)
		}
	}
	if _, err := s.Put(ctx, "escape/new", strings.NewReader("x"), blob.PutOptions{}); !errors.Is(err, blob.ErrInvalidKey) {
		t.Errorf("Put through a symlink out of the root = %v, want ErrInvalidKey", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("Put wrote outside the root")
	}
	// A symlink inside the root that stays inside is followed.
	if _, err := s.Put(ctx, "real/obj", strings.NewReader("inside"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(s.Dir(), "alias")); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(ctx, "alias/obj"); err != nil || info.Size != 6 {
		t.Errorf("Stat through an inner symlink = %+v, %v", info, err)
	}
}

func TestDeletePrunesEmptyFolders(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	for _, k := range []string{"packages/01A/app.ipa", "packages/01B/app.ipa"} {
		if _, err := s.Put(ctx, k, strings.NewReader("x"), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "packages/01A/app.ipa"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "packages", "01A")); !os.IsNotExist(err) {
		t.Errorf("empty folder packages/01A remains (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "packages", "01B", "app.ipa")); err != nil {
		t.Errorf("sibling removed: %v", err)
	}
	if _, err := os.Stat(s.Dir()); err != nil {
		t.Errorf("root removed: %v", err)
	}
}

func TestPingFailsWhenRootGone(t *testing.T) {
	s := newStore(t)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(s.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping succeeded after the folder was removed")
	}
}

func TestPutCancelledBeforeStart(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Put(ctx, "k", strings.NewReader("data"), blob.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context = %v", err)
	}
	assertNoTemp(t, s.Dir())
}

// BenchmarkPut measures streaming a 64 MiB upload to a local folder (including fsync).
func BenchmarkPut(b *testing.B) {
	s := newStore(b)
	const size = 64 << 20
	src := blobtest.Random(1<<20, 1)
	b.SetBytes(size)
	for b.Loop() {
		if _, err := s.Put(b.Context(), "bench/obj", blobtest.Repeat(src, size), blob.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPutBesideAPruningDelete replays a failure seen in TestUploadBadFixtures: a Put into a folder
// that exists when MkdirAll reaches it (EEXIST) but is pruned by a concurrent Delete before
// MkdirAll checks that it is a folder, which os.Root reports as "mkdirat: file exists". The Put
// must retry, as it does when the folder vanishes at any other step.
func TestPutBesideAPruningDelete(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	const rounds = 3000
	failures := 0
	var firstErr error
	for i := range rounds {
		if _, err := s.Put(ctx, "packages/d/a.ipa", strings.NewReader("a"), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		deleted := make(chan error, 1)
		go func() { deleted <- s.Delete(ctx, "packages/d/a.ipa") }()
		_, err := s.Put(ctx, "packages/d/b.ipa", strings.NewReader("b"), blob.PutOptions{})
		if derr := <-deleted; derr != nil {
			t.Fatalf("round %d: delete: %v", i, derr)
		}
		if err != nil {
			failures++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if err := s.Delete(ctx, "packages/d/b.ipa"); err != nil {
			t.Fatal(err)
		}
	}
	if failures > 0 {
		t.Fatalf("%d of %d puts beside a pruning delete failed; first: %v", failures, rounds, firstErr)
	}
}
