package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// loadResult is one endpoint's load test.
type loadResult struct {
	Name     string
	Path     string
	Requests int64
	Errors   int64 // transport errors and non-200 answers
	Elapsed  time.Duration
	RPS      float64
	P50, P99 time.Duration
	Max      time.Duration
}

// maxLoadRequests bounds one load test whatever its duration.
const maxLoadRequests = 2_000_000

// loadTest sends GET url from conns keep-alive connections, each one request at a time, for dur
// (after a short warm-up that is not counted), and reports throughput and latency percentiles.
func loadTest(ctx context.Context, name, base, path string, conns int, dur time.Duration) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	url := base + path
	get := func() (time.Duration, bool) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("User-Agent", "slipway-bench")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return time.Since(start), false
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start), err == nil && resp.StatusCode == http.StatusOK
	}

	// Warm-up: open the connections and let the server's caches fill.
	warm, cancelWarm := context.WithTimeout(ctx, time.Second)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for warm.Err() == nil {
				get()
			}
		})
	}
	wg.Wait()
	cancelWarm()

	var (
		count, errors atomic.Int64
		mu            sync.Mutex
		all           []time.Duration
	)
	deadline := time.Now().Add(dur)
	start := time.Now()
	for range conns {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1<<14)
			for time.Now().Before(deadline) && ctx.Err() == nil && count.Add(1) <= maxLoadRequests {
				d, ok := get()
				if !ok {
					errors.Add(1)
				}
				lat = append(lat, d)
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	r := loadResult{Name: name, Path: path, Requests: int64(len(all)), Errors: errors.Load(), Elapsed: elapsed}
	if len(all) > 0 {
		r.RPS = float64(len(all)) / elapsed.Seconds()
		r.P50, r.P99, r.Max = percentile(all, 0.50), percentile(all, 0.99), all[len(all)-1]
	}
	return r
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
