package reliability

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/test/e2e"
)

// readCacheTTL is the TTL of the replicas of TestReadCacheAcrossReplicas: short, so that the
// guarantee it bounds can be checked, and long against the few milliseconds NOTIFY takes.
const readCacheTTL = 3 * time.Second

// TestReadCacheAcrossReplicas: three replicas each cache channel views (docs/operations.md, "The
// read cache") while uploads land on all of them at once. No replica answers without a release it
// acknowledged itself (read-your-writes), no replica answers without a release acknowledged
// anywhere more than the TTL before the question, changes travel by Postgres NOTIFY, and a change
// whose notification is lost (made with the triggers off) is healed by the TTL.
func TestReadCacheAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, e2e.Options{Storage: e2e.S3}, 3, "SLIPWAY_READ_CACHE_TTL="+readCacheTTL.String())
	seed := decodeRelease(t, mustUpload(t, e.server(0), e.upload, ipa("com.example.cache", "0", 0)))
	slug := seed.Channel.Slug
	versionsOf := func(s *e2e.Server) (map[int]bool, error) {
		r, err := request(http.MethodGet, s.URL+"/api/apps/versions?per_page=100&channel_key="+slug, nil)
		if err != nil {
			return nil, err
		}
		var l struct {
			Releases []struct{ Version int }
		}
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &l) != nil {
			return nil, fmt.Errorf("versions: %s", r)
		}
		seen := map[int]bool{}
		for _, rel := range l.Releases {
			seen[rel.Version] = true
		}
		return seen, nil
	}
	for i := range 3 { // every replica caches the channel
		if _, err := versionsOf(e.server(i)); err != nil {
			t.Fatal(err)
		}
	}

	type ack struct {
		version, replica int
		at               time.Time
	}
	type read struct {
		replica int
		start   time.Time
		seen    map[int]bool
	}
	var (
		mu    sync.Mutex
		acks  []ack
		reads []read
		wg    sync.WaitGroup
		done  = make(chan struct{})
	)
	// Readers ask every replica, over and over, while the uploads land.
	for reader := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				replica := (reader + i) % 3
				start := time.Now()
				seen, err := versionsOf(e.server(replica))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				reads = append(reads, read{replica, start, seen})
				mu.Unlock()
			}
		})
	}
	var uploads sync.WaitGroup
	for i := range 12 {
		uploads.Go(func() {
			replica := i % 3
			r, err := uploadApp(e.server(replica), e.upload, ipa("com.example.cache", strconv.Itoa(i+1), 0), "channel_key", slug)
			if err != nil {
				t.Error(err)
				return
			}
			at := time.Now()
			rel := decodeRelease(t, r)
			// Read-your-writes: the replica that took the upload answers with it at once.
			seen, err := versionsOf(e.server(replica))
			if err != nil || !seen[rel.Version] {
				t.Errorf("replica %d acknowledged version %d, then answered without it (%v)", replica, rel.Version, err)
			}
			mu.Lock()
			acks = append(acks, ack{rel.Version, replica, at})
			mu.Unlock()
		})
	}
	uploads.Wait()
	// Let the readers run past the TTL, so every upload is due everywhere.
	time.Sleep(readCacheTTL + time.Second)
	close(done)
	wg.Wait()

	due := 0
	for _, rd := range reads {
		for _, a := range acks {
			if rd.start.After(a.at.Add(readCacheTTL)) {
				due++
				if !rd.seen[a.version] {
					t.Errorf("replica %d answered without version %d, acknowledged by replica %d %s before the question (TTL %s)",
						rd.replica, a.version, a.replica, rd.start.Sub(a.at).Round(time.Millisecond), readCacheTTL)
				}
			}
		}
	}
	if due == 0 {
		t.Fatal("no read came after the TTL: the check checked nothing")
	}
	t.Logf("%d reads, %d (read, upload) pairs past the TTL checked", len(reads), due)

	// The changes travelled by NOTIFY: every replica dropped views on others' writes.
	for i := range 3 {
		if n := metricValue(t, e.server(i), `slipway_read_cache_invalidations_total{source="notify"}`); n < 1 {
			t.Errorf("replica %d acted on no change notification", i)
		}
	}

	// A change whose notification is lost: an edit made with the triggers off. A replica holding
	// the channel may answer the old changelog until its view expires, and not after.
	for i := range 3 {
		if _, err := versionsOf(e.server(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.db.Exec(t.Context(), `DO $$ BEGIN
		SET LOCAL session_replication_role = replica;
		UPDATE releases SET changelog = '[{"message":"edited behind the cache"}]' WHERE id = `+strconv.FormatInt(seed.ID, 10)+`;
		END $$`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(readCacheTTL + 500*time.Millisecond)
	for i := range 3 {
		r := call(t, http.MethodGet, e.server(i).URL+"/api/apps/versions?per_page=100&channel_key="+url.QueryEscape(slug), nil)
		if !strings.Contains(string(r.Body), "edited behind the cache") {
			t.Errorf("replica %d still answers the old changelog a TTL after a change without notification", i)
		}
	}
	noServerErrors(t, e.servers...)
}

// metricValue reads one sample of a replica's /metrics (0 when absent).
func metricValue(t *testing.T, s *e2e.Server, name string) float64 {
	t.Helper()
	r := call(t, http.MethodGet, s.URL+"/metrics", nil)
	for _, line := range strings.Split(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	return 0
}
