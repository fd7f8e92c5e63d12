package reliability

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestReplicasUnderConcurrentUploads runs three replicas against one database and one bucket and
// spreads concurrent clients across them.
func TestReplicasUnderConcurrentUploads(t *testing.T) {
	t.Parallel()
	// The cap is raised so that all 50 uploads are accepted at once (17 per replica).
	e := newEnv(t, e2e.Options{Storage: e2e.S3}, 3, "SLIPWAY_MAX_CONCURRENT_UPLOADS=64")

	// 50 concurrent uploads to one channel: all 201, with distinct versions, every object stored.
	t.Run("one channel", func(t *testing.T) {
		first := decodeRelease(t, mustUpload(t, e.server(0), e.upload, ipa("com.example.busy", "0", 0)))
		const n = 50
		pkgs := make([][]byte, n)
		for i := range pkgs {
			pkgs[i] = ipa("com.example.busy", fmt.Sprint(i+1), 0)
		}
		res, errs := parallel(n, func(i int) (*response, error) {
			return uploadApp(e.server(i), e.upload, pkgs[i], "channel_key", first.Channel.Slug)
		})
		versions := []int{first.Version}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("upload %d: %v", i, errs[i])
			}
			versions = append(versions, decodeRelease(t, res[i]).Version)
		}
		slices.Sort(versions)
		for i, v := range versions {
			if v != i+1 {
				t.Fatalf("versions %v: want 1..%d, each once", versions, n+1)
			}
		}
		if got := queryInt(t, e.db, `SELECT count(*) FROM releases r JOIN channels c ON c.id = r.channel_id WHERE c.slug = $1`,
			first.Channel.Slug); got != n+1 {
			t.Errorf("%d releases in the channel, want %d", got, n+1)
		}
		checkConsistent(t, e)
	})

	// 20 concurrent uploads that auto-create one new app: one app, one scheme, one channel.
	t.Run("auto-create one app", func(t *testing.T) {
		const n = 20
		res, errs := parallel(n, func(i int) (*response, error) {
			return uploadApp(e.server(i), e.upload, ipa("com.example.fresh", fmt.Sprint(i), 0), "name", "Fresh")
		})
		slugs, apps, versions := map[string]bool{}, map[int64]bool{}, []int{}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("upload %d: %v", i, errs[i])
			}
			rel := decodeRelease(t, res[i])
			slugs[rel.Channel.Slug], apps[rel.App.ID] = true, true
			versions = append(versions, rel.Version)
		}
		slices.Sort(versions)
		if len(slugs) != 1 || len(apps) != 1 || versions[0] != 1 || versions[n-1] != n {
			t.Errorf("responses name %d channels, %d apps, versions %v; want 1, 1, 1..%d", len(slugs), len(apps), versions, n)
		}
		if got := queryInt(t, e.db, `SELECT count(*) FROM apps WHERE name = 'Fresh'`); got != 1 {
			t.Errorf("%d apps named Fresh, want 1", got)
		}
		if got := queryInt(t, e.db, `SELECT count(*) FROM schemes s JOIN apps a ON a.id = s.app_id WHERE a.name = 'Fresh'`); got != 1 {
			t.Errorf("%d schemes in Fresh, want 1", got)
		}
		if got := queryInt(t, e.db, `SELECT count(*) FROM channels c JOIN schemes s ON s.id = c.scheme_id
			JOIN apps a ON a.id = s.app_id WHERE a.name = 'Fresh'`); got != 1 {
			t.Errorf("%d channels in Fresh, want 1", got)
		}
		checkConsistent(t, e)
	})

	// An app destroyed while uploads to it are in flight: some held in the middle of their
	// body (they must fail with 404 and keep nothing), others racing the destroy (201 before it
	// and destroyed with the app, or 404 after). No release outlives its app; after gc, no object
	// of the app is left.
	t.Run("destroy while uploading", func(t *testing.T) {
		first := decodeRelease(t, mustUpload(t, e.server(0), e.upload, ipa("com.example.doomed", "0", 0), "name", "Doomed"))
		slug := first.Channel.Slug

		const held = 6
		var holding []*stream
		for i := range held {
			pkg := ipa("com.example.doomed", fmt.Sprint(100+i), 6<<20)
			st := uploadStream(t, e.server(i), e.upload, pkg, false, "channel_key", slug)
			if err := st.send(len(pkg) / 2); err != nil {
				t.Fatal(err)
			}
			holding = append(holding, st)
		}

		const racing = 24
		var wg sync.WaitGroup
		racingRes, racingErrs := make([]*response, racing), make([]error, racing)
		for i := range racing {
			wg.Add(1)
			go func() {
				defer wg.Done()
				racingRes[i], racingErrs[i] = uploadApp(e.server(i), e.upload, ipa("com.example.doomed", fmt.Sprint(i+1), 256<<10), "channel_key", slug)
			}()
		}
		// Destroy once some racing uploads have been recorded, while others are still arriving.
		testkit.Eventually(t, requestTimeout, "a few racing uploads to be recorded", func() bool {
			return queryInt(t, e.db, `SELECT count(*) FROM releases r JOIN channels c ON c.id = r.channel_id WHERE c.slug = $1`, slug) >= 4
		})
		del := call(t, http.MethodDelete, fmt.Sprintf("%s/api/apps/%d", e.server(1).URL, first.App.ID), nil, "Authorization", "Token "+e.admin)
		if del.Status != http.StatusOK {
			t.Fatalf("destroying the app: %s", del)
		}
		wg.Wait()
		for _, st := range holding {
			st.pump()
		}

		created, gone := 0, 0
		for i := range racing {
			switch {
			case racingErrs[i] != nil:
				t.Errorf("racing upload %d: %v", i, racingErrs[i])
			case racingRes[i].Status == http.StatusCreated:
				created++
			case racingRes[i].Status == http.StatusNotFound:
				expectError(t, "racing upload after destroy", racingRes[i], http.StatusNotFound)
				gone++
			default:
				t.Errorf("racing upload %d: %s, want 201 or 404", i, racingRes[i])
			}
		}
		for i, st := range holding {
			r, err := st.wait(t)
			if err != nil {
				t.Errorf("held upload %d: %v", i, err)
				continue
			}
			expectError(t, "upload held across the destroy", r, http.StatusNotFound)
		}
		t.Logf("racing uploads: %d recorded before the destroy, %d refused after it", created, gone)
		if n := queryInt(t, e.db, `SELECT count(*) FROM apps WHERE id = $1`, first.App.ID); n != 0 {
			t.Errorf("the destroyed app is still there")
		}
		if n := queryInt(t, e.db, `SELECT count(*) FROM releases WHERE bundle_id = 'com.example.doomed'`); n != 0 {
			t.Errorf("%d releases of the destroyed app remain", n)
		}
		checkConsistent(t, e)
	})
	noServerErrors(t, e.servers...)
}

// mustUpload uploads pkg and fails the test when no response comes.
func mustUpload(t *testing.T, s *e2e.Server, token string, pkg []byte, fields ...string) *response {
	t.Helper()
	r, err := uploadApp(s, token, pkg, fields...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
