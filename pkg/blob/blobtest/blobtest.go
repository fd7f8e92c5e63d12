// Package blobtest is the conformance suite every blob.Backend passes, so the filesystem
// used in development and the S3 backend used in production behave the same: the same keys, the
// same ranges, the same "nothing stored" after a failed or cancelled upload.
package blobtest

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// LargeSize spans more than three parts of S3's smallest part size (5 MiB), so backends configured
// with that part size run a real multipart upload. Tests of S3 should use 5 MiB parts.
const LargeSize = 3*(5<<20) + 12345

// Run runs the suite. newBackend returns an empty backend (or an isolated prefix of one) for one
// subtest; subtests run in parallel (newBackend itself is called from one goroutine). Run returns when every subtest has finished, so the caller
// can check the backend's own state afterwards (e.g. that no multipart upload was left behind).
func Run(t *testing.T, newBackend func(t *testing.T) blob.Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b blob.Backend)
	}{
		{"RoundTrip", testRoundTrip},
		{"Observe", testObserve},
		{"Multipart", testMultipart},
		{"Ranges", testRanges},
		{"Stat", testStat},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"Overwrite", testOverwrite},
		{"FailingReader", testFailingReader},
		{"Cancel", testCancel},
		{"ConcurrentPuts", testConcurrentPuts},
		{"Keys", testKeys},
		{"InvalidKeys", testInvalidKeys},
		{"Ping", testPing},
		{"Presign", testPresign},
		{"OpenFile", testOpenFile},
		{"ReaderAtZip", testReaderAtZip},
		{"List", testList},
		{"ListUploads", testListUploads},
	}
	t.Run("conformance", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := newBackend(t) // before Parallel: newBackend need not be safe for concurrent use
				t.Parallel()
				tt.fn(t, b)
			})
		}
	})
}

func testRoundTrip(t *testing.T, b blob.Backend) {
	for _, size := range []int{0, 1, 1000, 5<<20 - 1, 5 << 20, LargeSize} {
		key := fmt.Sprintf("roundtrip/%d.bin", size)
		data := Random(size, uint64(size))
		put(t, b, key, data)
		if got := get(t, b, key, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("%s: read back %d bytes (sha256 %x), want %d bytes (sha256 %x)",
				key, len(got), sha256.Sum256(got), len(data), sha256.Sum256(data))
		}
	}
}

// testObserve: PutOptions.Observe sees every byte of the stream once, in order, before Put
// returns, whatever the size (one small write, one part, many parts), and the object is intact.
func testObserve(t *testing.T, b blob.Backend) {
	for _, size := range []int{1, 1000, 5<<20 - 1, 5 << 20, LargeSize} {
		key := fmt.Sprintf("observe/%d.bin", size)
		data := Random(size, uint64(size)+7)
		var seen bytes.Buffer
		n, err := b.Put(context.Background(), key, bytes.NewReader(data), blob.PutOptions{Observe: func(p []byte) { seen.Write(p) }})
		if err != nil || n != int64(size) {
			t.Fatalf("%s: put %d, %v", key, n, err)
		}
		if !bytes.Equal(seen.Bytes(), data) {
			t.Errorf("%s: observed %d bytes (sha256 %x), want %d (sha256 %x)", key, seen.Len(), sha256.Sum256(seen.Bytes()), size, sha256.Sum256(data))
		}
		if got := get(t, b, key, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("%s: read back differs", key)
		}
	}
}

// PutPart uploads one part of a multipart upload the way a client of the backend does: through
// the service (PartWriter) or with a PUT to a presigned URL (PartPresigner). It returns the HTTP
// status of a presigned PUT (200 for PartWriter) and any error.
func PutPart(t *testing.T, b blob.Backend, key, uploadID string, number int, data []byte, declared int64) (int, error) {
	t.Helper()
	switch p := b.(type) {
	case blob.PartWriter:
		_, err := p.PutPart(t.Context(), key, uploadID, number, bytes.NewReader(data), declared)
		if err != nil {
			return 0, err
		}
		return http.StatusOK, nil
	case blob.PartPresigner:
		u, err := p.PresignPart(t.Context(), key, uploadID, number, declared, time.Minute)
		if err != nil {
			return 0, err
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, u, bytes.NewReader(data))
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	t.Fatalf("%T takes parts neither itself nor by presigned URL", b)
	return 0, nil
}

// testMultipart: parts uploaded in any order (one replaced) are listed and assembled in order; a
// part of another size than declared is refused; abort and deleting the key leave nothing.
func testMultipart(t *testing.T, b blob.Backend) {
	mp, ok := b.(blob.Multipart)
	if !ok {
		t.Skipf("%T has no multipart uploads", b)
	}
	ctx := t.Context()
	const partSize = 5 << 20
	data := Random(2*partSize+1234, 77)
	chunks := [][]byte{data[:partSize], data[partSize : 2*partSize], data[2*partSize:]}
	key := "multipart/whole.bin"
	id, err := mp.CreateMultipart(ctx, key, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	// Out of order, and part 1 first with the wrong bytes, then replaced.
	uploads := []struct {
		n    int
		data []byte
	}{{3, chunks[2]}, {1, Random(partSize, 9)}, {2, chunks[1]}, {1, chunks[0]}}
	for _, u := range uploads {
		if status, err := PutPart(t, b, key, id, u.n, u.data, int64(len(u.data))); err != nil || status/100 != 2 {
			t.Fatalf("part %d: %d %v", u.n, status, err)
		}
	}
	if status, err := PutPart(t, b, key, id, 2, chunks[1][:100], int64(len(chunks[1]))); err == nil && status/100 == 2 {
		t.Fatal("a part shorter than declared was accepted")
	}
	parts, err := mp.ListParts(ctx, key, id)
	if err != nil || len(parts) != 3 || parts[0].Number != 1 || parts[2].Size != 1234 {
		t.Fatalf("list: %+v %v", parts, err)
	}
	if err := mp.CompleteMultipart(ctx, key, id, parts); err != nil {
		t.Fatal(err)
	}
	if got := get(t, b, key, 0, -1); !bytes.Equal(got, data) {
		t.Fatalf("assembled object differs (%d bytes, want %d)", len(got), len(data))
	}

	// Abort, and Delete of the key (what the collector does for an expired session).
	for i, end := range []func(key, id string) error{
		func(key, id string) error { return mp.AbortMultipart(ctx, key, id) },
		func(key, _ string) error { return b.Delete(ctx, key) },
	} {
		key := fmt.Sprintf("multipart/ended-%d.bin", i)
		id, err := mp.CreateMultipart(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if status, err := PutPart(t, b, key, id, 1, chunks[2], int64(len(chunks[2]))); err != nil || status/100 != 2 {
			t.Fatalf("part: %d %v", status, err)
		}
		if err := end(key, id); err != nil {
			t.Fatal(err)
		}
		if parts, err := mp.ListParts(ctx, key, id); err == nil && len(parts) > 0 {
			t.Fatalf("ended upload %d still lists %d parts", i, len(parts))
		}
		if err := mp.AbortMultipart(ctx, key, id); err != nil {
			t.Fatalf("aborting an ended upload: %v", err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("an ended upload made an object: %v", err)
		}
	}
}

// testList: List hands over every whole object, in byte order of the keys (folders and
// punctuation mixed as S3 orders them), pages of at most blob.ListPageSize, with sizes; not
// the parts of an unfinished multipart upload; and stops at fn's error.
func testList(t *testing.T, b blob.Backend) {
	l, ok := b.(blob.Lister)
	if !ok {
		t.Skipf("%T cannot list", b)
	}
	ctx := t.Context()
	want := map[string]int{}
	for i, key := range []string{"list/a/b", "list/a-c/1", "list/a.b", "list/a0", "list/Z", "list/a/deep/er/x.bin",
		"list/\u00e9t\u00e9", "list/~", "list/a/b-c", "other"} {
		put(t, b, key, Random(i*7, uint64(i)))
		want[key] = i * 7
	}
	// Enough objects for two pages, put a few at a time.
	var wg sync.WaitGroup
	keys := make(chan string)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				put(t, b, k, []byte("x"))
			}
		}()
	}
	for i := range blob.ListPageSize + 3 {
		k := fmt.Sprintf("list/many/%05d", i)
		want[k] = 1
		keys <- k
	}
	close(keys)
	wg.Wait()
	if mp, ok := b.(blob.Multipart); ok {
		id, err := mp.CreateMultipart(ctx, "list/unfinished", "")
		if err != nil {
			t.Fatal(err)
		}
		if status, err := PutPart(t, b, "list/unfinished", id, 1, []byte("part"), 4); err != nil || status/100 != 2 {
			t.Fatalf("part: %d %v", status, err)
		}
		t.Cleanup(func() { _ = mp.AbortMultipart(context.Background(), "list/unfinished", id) })
	}

	var got []string
	pages := 0
	err := l.List(ctx, func(page []blob.Object) error {
		pages++
		if len(page) == 0 || len(page) > blob.ListPageSize {
			t.Errorf("page %d has %d objects", pages, len(page))
		}
		for _, o := range page {
			if size, ok := want[o.Key]; !ok {
				t.Errorf("listed %q, which was never put", o.Key)
			} else if o.Size != int64(size) {
				t.Errorf("%s: size %d, want %d", o.Key, o.Size, size)
			}
			if o.ModTime.IsZero() {
				t.Errorf("%s: no modification time", o.Key)
			}
			got = append(got, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("listed %d objects, want %d", len(got), len(want))
	}
	if pages < 2 {
		t.Errorf("%d objects came in %d page(s)", len(got), pages)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1] >= got[i] {
			t.Errorf("out of byte order: %q listed before %q", got[i-1], got[i])
		}
	}

	stop := errors.New("stop")
	calls := 0
	if err := l.List(ctx, func([]blob.Object) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("List after fn's error: %v, %d calls", err, calls)
	}
}

// testListUploads: ListUploads finds an unfinished multipart upload (by its key and id, or, on a
// store that cannot name the key, by a path holding the id), not whole objects, and RemoveUpload
// ends it: its parts are gone and it is listed no more.
func testListUploads(t *testing.T, b blob.Backend) {
	ul, ok := b.(blob.UploadLister)
	mp, ok2 := b.(blob.Multipart)
	if !ok || !ok2 {
		t.Skipf("%T cannot list unfinished uploads", b)
	}
	ctx := t.Context()
	put(t, b, "uploads/whole", []byte("whole"))
	key := "uploads/unfinished"
	id, err := mp.CreateMultipart(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, err := PutPart(t, b, key, id, 1, []byte("part"), 4); err != nil || status/100 != 2 {
		t.Fatalf("part: %d %v", status, err)
	}
	find := func() []blob.Upload {
		var found []blob.Upload
		err := ul.ListUploads(ctx, func(page []blob.Upload) error {
			for _, u := range page {
				if u.Key == "uploads/whole" || strings.HasSuffix(u.ID, "uploads/whole") {
					t.Errorf("a whole object listed as unfinished: %+v", u)
				}
				if (u.Key == key && u.ID == id) || (u.Key == "" && strings.Contains(u.ID, id)) {
					if u.Started.IsZero() {
						t.Errorf("%+v has no time", u)
					}
					found = append(found, u)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	found := find()
	if len(found) != 1 {
		t.Fatalf("ListUploads found %d entries of the unfinished upload, want 1: %+v", len(found), found)
	}
	if err := ul.RemoveUpload(ctx, found[0]); err != nil {
		t.Fatal(err)
	}
	if parts, err := mp.ListParts(ctx, key, id); err == nil && len(parts) > 0 {
		t.Errorf("a removed upload still lists %d parts", len(parts))
	}
	if again := find(); len(again) != 0 {
		t.Errorf("a removed upload is still listed: %+v", again)
	}
	if err := ul.RemoveUpload(ctx, found[0]); err != nil {
		t.Errorf("removing it again: %v", err)
	}
	if got := get(t, b, "uploads/whole", 0, -1); string(got) != "whole" {
		t.Errorf("the whole object now reads %q", got)
	}
}

func testRanges(t *testing.T, b blob.Backend) {
	const size = 300_000
	data := Random(size, 2)
	put(t, b, "ranges.bin", data)
	for _, c := range []struct {
		name   string
		off, n int64
		want   []byte
	}{
		{"start", 0, 10, data[:10]},
		{"middle", 123_456, 70_000, data[123_456:193_456]},
		{"end", size - 10, 10, data[size-10:]},
		{"to end", 250_000, -1, data[250_000:]},
		{"whole", 0, -1, data},
		{"one byte", 77, 1, data[77:78]},
		{"empty", 100, 0, nil},
		{"past end", size - 5, 10, data[size-5:]},
		{"at end", size, 10, nil},
		{"after end", size + 100, 10, nil},
		{"after end to end", size + 100, -1, nil},
	} {
		got := get(t, b, "ranges.bin", c.off, c.n)
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s: GetRange(%d, %d) returned %d bytes, want %d", c.name, c.off, c.n, len(got), len(c.want))
		}
	}
	if rc, err := b.GetRange(t.Context(), "ranges.bin", -1, 10); err == nil {
		rc.Close()
		t.Error("GetRange at a negative offset succeeded")
	}
}

func testStat(t *testing.T, b blob.Backend) {
	before := time.Now().Add(-10 * time.Minute) // tolerate a server clock a little off
	data := Random(12_345, 3)
	put(t, b, "stat/obj", data)
	info, err := b.Stat(t.Context(), "stat/obj")
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("Stat size = %d, want %d", info.Size, len(data))
	}
	if info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(10*time.Minute)) {
		t.Errorf("Stat mod time = %v, want about now", info.ModTime)
	}
}

func testNotFound(t *testing.T, b blob.Backend) {
	ctx := t.Context()
	put(t, b, "present/obj", []byte("x"))
	for _, key := range []string{"absent", "absent/nested/obj", "present", "present/obj/below"} {
		if _, err := b.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%q) = %v, want ErrNotFound", key, err)
		}
		if rc, err := b.GetRange(ctx, key, 0, -1); !errors.Is(err, blob.ErrNotFound) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("GetRange(%q) = %v, want ErrNotFound", key, err)
		}
		if rc, err := b.GetRange(ctx, key, 5, 10); !errors.Is(err, blob.ErrNotFound) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("GetRange(%q, 5, 10) = %v, want ErrNotFound", key, err)
		}
		if err := b.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) of an absent object = %v, want nil", key, err)
		}
	}
	if _, err := b.Stat(ctx, "present/obj"); err != nil {
		t.Errorf("deleting absent keys disturbed a present one: %v", err)
	}
}

func testDelete(t *testing.T, b blob.Backend) {
	ctx := t.Context()
	put(t, b, "del/a/obj", []byte("hello"))
	put(t, b, "del/a/sibling", []byte("stays"))
	for range 2 {
		if err := b.Delete(ctx, "del/a/obj"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := b.Stat(ctx, "del/a/obj"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("Stat after Delete = %v, want ErrNotFound", err)
		}
	}
	if got := get(t, b, "del/a/sibling", 0, -1); string(got) != "stays" {
		t.Errorf("sibling = %q after deleting its neighbour", got)
	}
	// The key can be written again after its folder may have been pruned.
	put(t, b, "del/a/obj", []byte("again"))
	if got := get(t, b, "del/a/obj", 0, -1); string(got) != "again" {
		t.Errorf("re-put = %q", got)
	}
}

func testOverwrite(t *testing.T, b blob.Backend) {
	first, second := Random(LargeSize, 4), Random(1000, 5)
	put(t, b, "over/obj", first)
	put(t, b, "over/obj", second)
	if got := get(t, b, "over/obj", 0, -1); !bytes.Equal(got, second) {
		t.Errorf("after overwrite read %d bytes, want the second object's %d", len(got), len(second))
	}
	info, err := b.Stat(t.Context(), "over/obj")
	if err != nil || info.Size != int64(len(second)) {
		t.Errorf("Stat after overwrite = %+v, %v; want size %d", info, err, len(second))
	}
}

var errBoom = errors.New("boom: the client went away")

func testFailingReader(t *testing.T, b blob.Backend) {
	ctx := t.Context()
	old := []byte("the previous object")
	for _, size := range []int{0, 1000, 5<<20 + 1, LargeSize} {
		for _, fail := range []error{errBoom, io.ErrUnexpectedEOF} {
			key := fmt.Sprintf("fail/%d-%v/obj", size, fail == errBoom)
			r := &failingReader{r: chunky(Random(size, 6)), err: fail}
			if _, err := b.Put(ctx, key, r, blob.PutOptions{}); !errors.Is(err, fail) {
				t.Errorf("Put of %d bytes then %q returned %v, want that error", size, fail, err)
			}
			if _, err := b.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("after a failed Put of %d bytes, Stat = %v, want ErrNotFound", size, err)
			}
			// A failed overwrite leaves the previous object whole.
			put(t, b, key, old)
			r = &failingReader{r: chunky(Random(size, 6)), err: fail}
			if _, err := b.Put(ctx, key, r, blob.PutOptions{}); err == nil {
				t.Errorf("failing overwrite of %d bytes succeeded", size)
			}
			if got := get(t, b, key, 0, -1); !bytes.Equal(got, old) {
				t.Errorf("after a failed overwrite of %d bytes the object is %d bytes, want the previous %d", size, len(got), len(old))
			}
		}
	}
}

func testCancel(t *testing.T, b blob.Backend) {
	for _, c := range []struct{ size, cancelAt int }{
		{1000, 500},
		{LargeSize, 100},
		{LargeSize, 7 << 20},
		{LargeSize, LargeSize - 1},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		key := fmt.Sprintf("cancel/%d-%d", c.size, c.cancelAt)
		r := &cancellingReader{r: chunky(Random(c.size, 7)), at: c.cancelAt, cancel: cancel}
		_, err := b.Put(ctx, key, r, blob.PutOptions{})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Put cancelled at byte %d of %d returned %v, want context.Canceled", c.cancelAt, c.size, err)
		}
		if _, err := b.Stat(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("after a cancelled Put (%d of %d bytes), Stat = %v, want ErrNotFound", c.cancelAt, c.size, err)
		}
	}
}

func testConcurrentPuts(t *testing.T, b blob.Backend) {
	sizes := []int{0, 1, 4096, 300_000, 300_001, 1 << 20, 5<<20 + 7, 6 << 20}
	var wg sync.WaitGroup
	for i, size := range sizes {
		wg.Go(func() {
			key := fmt.Sprintf("conc/%d/obj", i)
			data := Random(size, uint64(100+i))
			if n, err := b.Put(t.Context(), key, chunky(data), blob.PutOptions{}); err != nil || n != int64(size) {
				t.Errorf("Put %s = %d, %v; want %d", key, n, err, size)
			}
		})
	}
	wg.Wait()
	for i, size := range sizes {
		key := fmt.Sprintf("conc/%d/obj", i)
		if got := get(t, b, key, 0, -1); !bytes.Equal(got, Random(size, uint64(100+i))) {
			t.Errorf("%s: read back %d bytes, want %d", key, len(got), size)
		}
	}
}

// ValidKeys are keys every backend stores: nesting, Unicode and characters that URLs escape.
var ValidKeys = []string{
	"a/b/c/d/e/f.ipa",
	"packages/01HZX7Q9/Ünïcødé 名前 (1).ipa",
	"sp ace/plus+and%25percent?q=1#hash&amp;.apk",
	"emoji/🚀 build.aab",
	"dots/.hidden/..more/x...y",
	"long/" + strings.Repeat("n", 200),
}

// InvalidKeys are keys every backend refuses with blob.ErrInvalidKey.
var InvalidKeys = []string{
	"", "/abs", "/", "..", ".", "../up", "a/../../up", "a/./b", "a//b", "a/", "a/..",
	`a\..\..\up`, `..\up`, "nul\x00byte", "new\nline", "\xff\xfe", strings.Repeat("k", 1025),
}

func testKeys(t *testing.T, b blob.Backend) {
	ctx := t.Context()
	for i, key := range ValidKeys {
		data := Random(100+i, uint64(i))
		put(t, b, key, data)
		if got := get(t, b, key, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("%q: read back %q", key, got)
		}
		if info, err := b.Stat(ctx, key); err != nil || info.Size != int64(len(data)) {
			t.Errorf("Stat(%q) = %+v, %v", key, info, err)
		}
	}
	for _, key := range ValidKeys {
		if err := b.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) = %v", key, err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%q) after Delete = %v", key, err)
		}
	}
}

func testInvalidKeys(t *testing.T, b blob.Backend) {
	ctx := t.Context()
	for _, key := range InvalidKeys {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, blob.ErrInvalidKey) {
				t.Errorf("%s(%q) = %v, want ErrInvalidKey", op, key, err)
			}
		}
		_, err := b.Put(ctx, key, strings.NewReader("x"), blob.PutOptions{})
		check("Put", err)
		rc, err := b.GetRange(ctx, key, 0, -1)
		if err == nil {
			rc.Close()
		}
		check("GetRange", err)
		_, err = b.Stat(ctx, key)
		check("Stat", err)
		check("Delete", b.Delete(ctx, key))
		if p, ok := b.(blob.Presigner); ok {
			_, err := p.PresignGet(ctx, key, time.Minute, blob.GetOptions{})
			check("PresignGet", err)
		}
		if o, ok := b.(blob.FileOpener); ok {
			f, err := o.OpenFile(ctx, key)
			if err == nil {
				f.Close()
			}
			check("OpenFile", err)
		}
	}
}

func testPing(t *testing.T, b blob.Backend) {
	if err := b.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testPresign(t *testing.T, b blob.Backend) {
	p, ok := b.(blob.Presigner)
	if !ok {
		t.Skip("not a storage.Presigner")
	}
	data := Random(200_000, 8)
	put(t, b, "presign/01J/build.ipa", data)
	for _, name := range []string{"Build.ipa", `My "quoted" App ü 名前.ipa`, ""} {
		u, err := p.PresignGet(t.Context(), "presign/01J/build.ipa", 5*time.Minute,
			blob.GetOptions{Filename: name, ContentType: "application/x-slipway-test"})
		if err != nil {
			t.Fatalf("PresignGet: %v", err)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET presigned URL: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET presigned URL: %s, %v: %.200s", resp.Status, err, body)
		}
		if !bytes.Equal(body, data) {
			t.Errorf("presigned GET returned %d bytes, want %d", len(body), len(data))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-slipway-test" {
			t.Errorf("Content-Type = %q", ct)
		}
		cd := resp.Header.Get("Content-Disposition")
		if name == "" {
			continue
		}
		if want := blob.ContentDisposition(name); cd != want {
			t.Errorf("Content-Disposition = %q, want %q", cd, want)
		}
		if _, params, err := mime.ParseMediaType(cd); err != nil || params["filename"] != name {
			t.Errorf("Content-Disposition %q decodes to %q (%v), want %q", cd, params["filename"], err, name)
		}
	}
	if _, err := p.PresignGet(t.Context(), "presign/01J/build.ipa", -time.Second, blob.GetOptions{}); err == nil {
		t.Error("PresignGet with a negative lifetime succeeded")
	}
}

func testOpenFile(t *testing.T, b blob.Backend) {
	o, ok := b.(blob.FileOpener)
	if !ok {
		t.Skip("not a storage.FileOpener")
	}
	data := Random(70_000, 9)
	put(t, b, "open/obj", data)
	f, err := o.OpenFile(t.Context(), "open/obj")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("OpenFile content: %d bytes, %v; want %d bytes", len(got), err, len(data))
	}
	if _, err := o.OpenFile(t.Context(), "open/absent"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("OpenFile(absent) = %v, want ErrNotFound", err)
	}
	if _, err := o.OpenFile(t.Context(), "open"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("OpenFile(folder) = %v, want ErrNotFound", err)
	}
}

// testReaderAtZip reads a stored zip the way the upload path does: the directory from the seeded
// tail, one entry with a prefetch, in few requests.
func testReaderAtZip(t *testing.T, b blob.Backend) {
	zipData, entries := Zip(t, 2000, 3<<20)
	put(t, b, "zip/app.ipa", zipData)
	tail := blob.NewTail(1 << 20)
	tail.Write(zipData)

	ra := blob.NewReaderAt(t.Context(), b, "zip/app.ipa", int64(len(zipData)))
	ra.Seed(tail.Total()-int64(len(tail.Bytes())), tail.Bytes())
	a, err := zipread.Open(ra, int64(len(zipData)))
	if err != nil {
		t.Fatal(err)
	}
	if st := ra.Stats(); st.GETs != 0 {
		t.Errorf("opening the zip from a seeded tail made %d GETs, want 0", st.GETs)
	}
	for _, name := range []string{"Payload/App.app/big.bin", "Payload/App.app/file-0007.txt"} {
		got, err := a.ReadName(name, 10<<20)
		if err != nil || !bytes.Equal(got, entries[name]) {
			t.Errorf("entry %s: %d bytes, %v; want %d bytes", name, len(got), err, len(entries[name]))
		}
	}
	st := ra.Stats()
	if st.GETs > 4 || st.Bytes > int64(len(zipData))/2+(1<<20) {
		t.Errorf("reading two entries took %d GETs and %d bytes of a %d-byte zip", st.GETs, st.Bytes, len(zipData))
	}
	t.Logf("zip of %d bytes: %d GETs, %d bytes fetched", len(zipData), st.GETs, st.Bytes)
}

// Zip builds a zip resembling an IPA: n small deflated text entries and one stored entry of
// bigSize random bytes, returning the archive and each entry's content.
func Zip(t testing.TB, n, bigSize int) ([]byte, map[string][]byte) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	entries := map[string][]byte{}
	add := func(name string, method uint16, data []byte) {
		f, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err == nil {
			_, err = f.Write(data)
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[name] = data
	}
	add("Payload/App.app/big.bin", zip.Store, Random(bigSize, 10))
	for i := range n {
		add(fmt.Sprintf("Payload/App.app/file-%04d.txt", i), zip.Deflate,
			[]byte(strings.Repeat(fmt.Sprintf("line %d of a resource file\n", i), 20)))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), entries
}

// Random returns n reproducible pseudo-random bytes.
func Random(n int, seed uint64) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	b := make([]byte, n)
	r.Read(b)
	return b
}

func put(t *testing.T, b blob.Backend, key string, data []byte) {
	t.Helper()
	n, err := b.Put(t.Context(), key, chunky(data), blob.PutOptions{ContentType: "application/octet-stream"})
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
	if n != int64(len(data)) {
		t.Fatalf("Put(%q) wrote %d bytes, want %d", key, n, len(data))
	}
}

func get(t *testing.T, b blob.Backend, key string, off, n int64) []byte {
	t.Helper()
	rc, err := b.GetRange(t.Context(), key, off, n)
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): %v", key, off, n, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading GetRange(%q, %d, %d): %v", key, off, n, err)
	}
	return got
}

// chunky returns a reader of data that is neither seekable nor an io.WriterTo and returns
// irregular chunks, like a request body.
func chunky(data []byte) io.Reader {
	return &chunkyReader{data: data, rng: rand.New(rand.NewPCG(uint64(len(data)), 1))}
}

type chunkyReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *chunkyReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(100_000))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// failingReader reads r to its end, then fails with err instead of io.EOF.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// cancellingReader cancels the upload's context once `at` bytes have been read, and goes on
// delivering the rest: the backend must notice the cancellation on its own.
type cancellingReader struct {
	r      io.Reader
	at     int
	read   int
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	if c.read < c.at {
		p = p[:min(len(p), c.at-c.read)]
	}
	n, err := c.r.Read(p)
	c.read += n
	if c.read >= c.at {
		c.cancel()
	}
	return n, err
}

// Repeat returns a reader of n bytes cycling through block, without allocating: a cheap request
// body for benchmarks. It is neither seekable nor an io.WriterTo.
func Repeat(block []byte, n int64) io.Reader {
	return &repeatReader{block: block, left: n}
}

type repeatReader struct {
	block []byte
	pos   int
	left  int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.block[r.pos:])
		n += c
		r.pos = (r.pos + c) % len(r.block)
	}
	r.left -= int64(n)
	return n, nil
}

// ReadZip opens the zip in r with zipread, as the upload path does, and reads the named entries.
func ReadZip(r io.ReaderAt, size int64, names ...string) error {
	a, err := zipread.Open(r, size)
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, err := a.ReadName(name, 10<<20); err != nil {
			return err
		}
	}
	return nil
}
