package reliability

import (
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestUploadBurst is a fleet of CI jobs finishing at once: 40 uploads at the same moment to one
// replica with default settings (16 slots, 12 of them for the fleet's one token, the rest in
// line; one 128 MiB buffer pool). Zealot's clients never retry, so every one must be a 201: none
// refused, distinct versions in the one channel, and the replica's peak memory within what
// docs/deploy.md promises for the defaults.
func TestUploadBurst(t *testing.T) {
	t.Parallel()
	// Built without -race even under -race: the race detector multiplies memory.
	e := newEnv(t, e2e.Options{Storage: e2e.S3, NoRace: true}, 1)
	s := e.servers[0]
	seed := decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.burst", "0", 0)))

	// Big enough to go through S3 multipart (over one 8 MiB part), small enough for a shared CI box.
	// Each package is written while it is sent (streamUpload), so the test holds a few buffers,
	// not 40 packages and 40 request bodies: a client process that spends seconds in garbage
	// collection would not be a fleet of CI jobs.
	const uploads, filler = 40, 20 << 20
	var wg sync.WaitGroup
	results := make([]*response, uploads)
	errs := make([]error, uploads)
	start := make(chan struct{})
	for i := range uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = streamUpload(s, e.upload, ipaOptions("com.example.burst", strconv.Itoa(i+1), filler),
				"channel_key", seed.Channel.Slug)
		}()
	}
	close(start)
	wg.Wait()

	var versions []int
	for i := range uploads {
		if errs[i] != nil {
			t.Fatalf("upload %d: %v", i, errs[i])
		}
		versions = append(versions, decodeRelease(t, results[i]).Version)
	}
	slices.Sort(versions)
	for i, v := range versions {
		if v != i+2 { // the seed is version 1
			t.Fatalf("versions %v are not 2..%d, each once", versions, uploads+1)
		}
	}

	// Peak memory: the default settings' memory limit (40 MiB for the process, the 128 MiB buffer
	// budget, 3 MiB for each of the 16 uploads received at once, and a quarter more for the
	// garbage collector: docs/deploy.md), plus the executable's own pages, which no Go limit covers.
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	bound := cfg.MemorySoftLimit() + 32<<20
	peak := testkit.PeakRSS(t, s.PID)
	t.Logf("%d concurrent uploads of %d MiB: peak RSS %d MiB (bound %d MiB)", uploads, filler>>20, peak>>20, bound>>20)
	if peak > bound {
		t.Errorf("peak RSS %d MiB exceeds %d MiB", peak>>20, bound>>20)
	}
	noServerErrors(t, s)
	checkConsistent(t, e)
}
