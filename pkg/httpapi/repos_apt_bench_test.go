package httpapi_test

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestAPTIndexBench measures a channel of many .deb builds (docs/benchmarks.md, "APT
// repository"): the index's sizes, the time to build it (the first request after a change,
// which reads every release and signs), the time to serve it from the read cache, and apt-get
// update against it. It asserts no time; it runs only when SLIPWAY_BENCH_APT is set:
//
//	SLIPWAY_BENCH_APT=1000 bash test/with-services.sh go test -count=1 -run TestAPTIndexBench -v -timeout 30m ./pkg/httpapi/
func TestAPTIndexBench(t *testing.T) {
	var n int
	if v := os.Getenv("SLIPWAY_BENCH_APT"); v == "" {
		t.Skip("a benchmark: set SLIPWAY_BENCH_APT (e.g. 1000) to run it")
	} else if _, err := fmt.Sscan(v, &n); err != nil || n < 10 {
		t.Fatalf("SLIPWAY_BENCH_APT=%q: give a number of at least 10", v)
	}
	needAPT(t)
	key := testRepoKey(t)
	e := apptest.New(t, apptest.Options{Storage: apptest.S3, NoOpenAPICheck: true, Configure: func(c *config.Config) { c.RepoKey = key }})
	// 100 packages (fewer for a small n), n/100 versions each.
	pkgs := max(1, min(100, n/10))
	deb := func(i int) []byte {
		return linuxtest.BuildDeb(linuxtest.DebOptions{Package: fmt.Sprintf("bench-tool-%03d", i%pkgs), Version: fmt.Sprintf("1.%d-1", i/pkgs),
			Extra: []linuxtest.Field{{Name: "Depends", Value: "libc6 (>= 2.34), libssl3"}, {Name: "Section", Value: "utils"},
				{Name: "Installed-Size", Value: "1024"}, {Name: "Homepage", Value: "https://example.com/bench"}}})
	}
	first := e.UploadApp(t, "bench-0.deb", deb(0))
	slug := first["channel"].(map[string]any)["slug"].(string)
	chID := int64(first["channel"].(map[string]any)["id"].(float64))
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.Field("channel_key", slug), apptest.File(fmt.Sprintf("bench-%d.deb", i), deb(i)))
				if r.Status != http.StatusCreated {
					t.Errorf("upload %d: %d %.200s", i, r.Status, r.Body)
				}
			}
		}()
	}
	for i := 1; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("%d uploads in %s", n, time.Since(start).Round(time.Millisecond))
	packages := "/channels/" + slug + "/apt/dists/stable/main/binary-amd64/Packages"
	testkit.EventuallyOK(t, 10*time.Minute, "every build in the index", func() error {
		if got := strings.Count(string(e.Get(t, packages).Body), "\nPackage: ") + 1; got < n {
			return fmt.Errorf("%d listed", got)
		}
		return nil
	})

	// The first request after a change builds the whole index; then it is served from the cache.
	invalidate := func() { e.Service.Reads.Invalidate(distribution.Change{ChannelID: chID}) }
	var builds []time.Duration
	for i := 0; i < 5; i++ {
		invalidate()
		t0 := time.Now()
		if r := e.Get(t, "/channels/"+slug+"/apt/dists/stable/InRelease"); r.Status != 200 {
			t.Fatalf("InRelease: %d", r.Status)
		}
		builds = append(builds, time.Since(t0))
	}
	sizes := map[string]int{}
	for _, f := range []string{"InRelease", "main/binary-amd64/Packages", "main/binary-amd64/Packages.gz"} {
		sizes[f] = len(e.Get(t, "/channels/"+slug+"/apt/dists/stable/"+f).Body)
	}
	serve := map[string][]time.Duration{}
	for _, f := range []string{"InRelease", "main/binary-amd64/Packages.gz"} {
		for i := 0; i < 200; i++ {
			t0 := time.Now()
			e.Get(t, "/channels/"+slug+"/apt/dists/stable/"+f)
			serve[f] = append(serve[f], time.Since(t0))
		}
	}
	a := newAPTRoot(t, e.URL, slug, e.Get(t, "/keys/slipway.asc").Body)
	var updates []time.Duration
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		a.mustUpdate()
		updates = append(updates, time.Since(t0))
	}
	t.Logf("builds: %d (%d packages)", n, pkgs)
	t.Logf("sizes: InRelease %d B, Packages %d B, Packages.gz %d B", sizes["InRelease"], sizes["main/binary-amd64/Packages"], sizes["main/binary-amd64/Packages.gz"])
	t.Logf("build (first InRelease after a change, reads %d releases and signs): median %s of %v", n, median(builds), builds)
	for f, d := range serve {
		t.Logf("serve %s from the cache: median %s, p99 %s (200 requests, one connection)", f, median(d), pct(d, 0.99))
	}
	t.Logf("apt-get update from empty lists: median %s of %v", median(updates), updates)
	t.Logf("candidate of bench-tool-000: %s", a.candidate("bench-tool-000"))
}

func median(d []time.Duration) time.Duration { return pct(d, 0.5) }

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)].Round(10 * time.Microsecond)
}
