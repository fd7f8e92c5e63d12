package web_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/slipwayhq/slipway/test/apptest"
)

// Issue 20, finding 3 (the UDID limiter): device answers are counted before they are read, under
// one lock, so 60 sent at once from one address get at most the minute's 20 past the limiter;
// the others are 429 with Retry-After. Forged X-Forwarded-For headers do not help (finding 7).
func TestUDIDCallbacksAtOnce(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	statuses := map[int]int{}
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, e.URL+"/udid/callback", strings.NewReader("not a signed answer"))
			req.Header.Set("X-Forwarded-For", "203.0.113."+string(rune('1'+i%9)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				t.Error("a 429 without Retry-After")
			}
		}()
	}
	wg.Wait()
	if n := 60 - statuses[http.StatusTooManyRequests]; n > 20 {
		t.Errorf("%d of 60 simultaneous device answers from one address passed the limiter: %v", n, statuses)
	}
}
