package e2e_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/mailpit"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestDistributeToManyTestersBench measures distributing a build to a group of testers (issue 33's
// benchmark; docs/benchmarks.md, "Distribution to testers"): the upload's answer, for groups of
// 0, 1,000 and 10,000 testers (the mail is queued in the upload's transaction, so the answer must
// not grow with the mail), the time until the relay (a real Mailpit) has every mail, and the
// server's peak RSS. It asserts no time; it only runs when SLIPWAY_BENCH_TESTERS is set:
//
//	SLIPWAY_BENCH_TESTERS=10000 bash test/with-services.sh go test -count=1 -run TestDistributeToManyTestersBench -v ./test/e2e/
func TestDistributeToManyTestersBench(t *testing.T) {
	max := os.Getenv("SLIPWAY_BENCH_TESTERS")
	if max == "" {
		t.Skip("a benchmark: set SLIPWAY_BENCH_TESTERS (e.g. 10000) to run it")
	}
	var n int
	if _, err := fmt.Sscan(max, &n); err != nil || n < 1000 {
		t.Fatalf("SLIPWAY_BENCH_TESTERS=%q: give a number of at least 1000", max)
	}
	relay := mailpit.Start(t, mailpit.Options{TLS: mailpit.NoTLS})
	h := e2e.New(t, e2e.Options{NoRace: true, Env: []string{"SLIPWAY_SMTP_URL=smtp+insecure://" + relay.SMTPAddr,
		"SLIPWAY_MAIL_FROM=Slipway <builds@slipway.example>", "SLIPWAY_MAIL_RATE=1000", "SLIPWAY_MAIL_POLL_INTERVAL=200ms"}})
	s := h.Start(t)
	admin := h.CreateToken(t, "admin", "admin")
	token := h.CreateToken(t, "ci", "upload")
	auth := []string{"Authorization", "Token " + admin, "Content-Type", "application/json"}
	post := func(path, body string) {
		t.Helper()
		if r := s.Do(t, "POST", path, strings.NewReader(body), auth...); r.Status/100 != 2 {
			t.Fatalf("POST %s: %d %.300s", path, r.Status, r.Body)
		}
	}
	sizes := []int{0, 1000, n}
	for _, size := range sizes {
		alias := fmt.Sprintf("g%d", size)
		post("/api/groups", fmt.Sprintf(`{"alias":%q}`, alias))
		for i := 0; i < size; i += 999 {
			var emails []string
			for j := i; j < min(i+999, size); j++ {
				emails = append(emails, fmt.Sprintf(`"t%d.%d@testers.example"`, size, j))
			}
			post("/api/groups/"+alias+"/testers", `{"emails":[`+strings.Join(emails, ",")+`]}`)
		}
		app := s.Do(t, "POST", "/api/apps", strings.NewReader(fmt.Sprintf(`{"name":"Bench %d"}`, size)), auth...).Map(t)
		scheme := s.Do(t, "POST", fmt.Sprintf("/api/apps/%v/schemes", app["id"]), strings.NewReader(`{"name":"Beta"}`), auth...).Map(t)
		post(fmt.Sprintf("/api/schemes/%v/channels", scheme["id"]), fmt.Sprintf(`{"name":"iOS","slug":"bench-%d","device_type":"ios"}`, size))
	}
	for _, size := range sizes {
		// The channel's groups are set by PATCH (creation takes the channel's own fields).
		cid := h.QueryInt(t, `SELECT id FROM channels WHERE slug = $1`, fmt.Sprintf("bench-%d", size))
		if r := s.Do(t, "PATCH", fmt.Sprintf("/api/channels/%d", cid), strings.NewReader(fmt.Sprintf(`{"tester_groups":["g%d"]}`, size)), auth...); r.Status != 200 {
			t.Fatalf("PATCH channel: %d %s", r.Status, r.Body)
		}
	}
	for _, size := range sizes {
		sentBefore := h.QueryInt(t, `SELECT count(*) FROM mail_outbox WHERE state = 'sent'`)
		ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Bench", BundleID: fmt.Sprintf("com.example.bench%d", size), Version: "1.0", Build: "1"})
		start := time.Now()
		r := uploadTo(t, s, token, "bench.ipa", ipa, "channel_key", fmt.Sprintf("bench-%d", size))
		answered := time.Since(start)
		if r.Status != 201 {
			t.Fatalf("upload to a group of %d: %d %.300s", size, r.Status, r.Body)
		}
		testkit.Eventually(t, 30*time.Minute, "every mail handed to the relay", func() bool {
			return h.QueryInt(t, `SELECT count(*) FROM mail_outbox WHERE state = 'sent'`)-sentBefore >= int64(size)
		})
		t.Logf("group of %6d testers: upload answered in %v, every mail handed to the relay after %v", size,
			answered.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	t.Logf("server peak RSS %d MiB", testkit.PeakRSS(t, s.PID)>>20)
}

// uploadTo posts a package with form fields (name, value pairs) to the upload API.
func uploadTo(t *testing.T, s *e2e.Server, token, filename string, data []byte, fields ...string) *e2e.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	fw, _ := mw.CreateFormFile("file", filename)
	_, _ = fw.Write(data)
	_ = mw.Close()
	return s.Do(t, "POST", "/api/apps/upload", &body, "Content-Type", mw.FormDataContentType(), "Authorization", "Token "+token)
}
