package httpapi_test

// Retention on Postgres with MinIO and the filesystem: every policy deletes exactly what the plan
// said, pinned builds survive, two replicas enforcing at once delete each build once, and nothing
// is left in storage after gc.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution/service"
	"github.com/slipwayhq/slipway/test/apptest"
)

// retentionEnv is a server whose own enforcement is off: the test enforces when it chooses.
func retentionEnv(t *testing.T, storage string) *mgmt {
	return newMgmt(t, apptest.Options{Storage: storage, Configure: func(c *config.Config) { c.RetentionInterval = 0 }})
}

// channelOf uploads n iOS builds (versions 1..n) to a new channel and returns the channel and the
// release ids, oldest first. Build i's profile expires expires(i) (zero: no profile).
func (m *mgmt) channelOf(name string, n int, expires func(i int) time.Time) (channel map[string]any, ids []int64) {
	m.t.Helper()
	app := m.want(m.call("POST", "/api/apps", m.e.AdminToken, `{"name":"`+name+`"}`), 201, "create app")
	scheme := m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/schemes", id(app)), m.e.AdminToken, `{"name":"Adhoc"}`), 201, "create scheme")
	channel = m.want(m.call("POST", fmt.Sprintf("/api/schemes/%d/channels", id(scheme)), m.e.AdminToken,
		`{"name":"iOS","slug":"`+name+`-ios","device_type":"ios"}`), 201, "create channel")
	for i := 1; i <= n; i++ {
		opts := appletest.IPAOptions{AppName: name, BundleID: "com.example." + name, Version: "1.0", Build: fmt.Sprint(i),
			Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}}
		if exp := expires(i); !exp.IsZero() {
			opts.Profile = &appletest.ProfileOptions{ExpiresAt: exp, CreatedAt: exp.AddDate(-1, 0, 0), AppID: "TEAM123456.com.example." + name}
		}
		rel := m.e.UploadApp(m.t, name+".ipa", appletest.BuildIPA(opts), apptest.Field("channel_key", name+"-ios"))
		ids = append(ids, id(rel))
	}
	return channel, ids
}

func noProfile(int) time.Time { return time.Time{} }

// planned returns the release ids of a plan answer, sorted.
func planned(t *testing.T, plan map[string]any) []int64 {
	t.Helper()
	var out []int64
	for _, r := range plan["releases"].([]any) {
		out = append(out, int64(r.(map[string]any)["release_id"].(float64)))
	}
	slices.Sort(out)
	return out
}

// remaining returns the ids of a channel's releases, sorted.
func (m *mgmt) remaining(channelID int64) []int64 {
	m.t.Helper()
	rows, err := m.e.DB.Pool.Query(context.Background(), `SELECT id FROM releases WHERE channel_id = $1 ORDER BY id`, channelID)
	if err != nil {
		m.t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			m.t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

func without(all, gone []int64) []int64 {
	var out []int64
	for _, id := range all {
		if !slices.Contains(gone, id) {
			out = append(out, id)
		}
	}
	return out
}

func TestRetentionPolicies(t *testing.T) {
	for _, storage := range []string{apptest.S3, apptest.FS} {
		t.Run(storage, func(t *testing.T) {
			m := retentionEnv(t, storage)
			admin, upload := m.e.AdminToken, m.e.UploadToken
			now := time.Now()
			expired := func(i int) time.Time {
				if i <= 2 {
					return now.AddDate(0, 0, -40) // builds 1 and 2: expired 40 days ago
				}
				return now.AddDate(1, 0, 0)
			}
			cases := []struct {
				name, policy string
				builds       int
				expires      func(int) time.Time
				prepare      func(ids []int64)
				wantGone     func(ids []int64) []int64
			}{
				{"keep builds", `{"keep_builds":2}`, 5, noProfile, nil,
					func(ids []int64) []int64 { return ids[:3] }},
				{"keep builds with a pinned one", `{"keep_builds":2}`, 5, noProfile,
					func(ids []int64) {
						m.want(m.call("PATCH", fmt.Sprintf("/api/releases/%d", ids[1]), upload, `{"pinned":true}`), 403, "pin with an upload token")
						r := m.want(m.call("PATCH", fmt.Sprintf("/api/releases/%d", ids[1]), admin, `{"pinned":true}`), 200, "pin")
						if r["pinned"] != true {
							t.Errorf("pinned release answers pinned=%v", r["pinned"])
						}
					},
					func(ids []int64) []int64 { return []int64{ids[0], ids[2]} }},
				{"max age", `{"max_age_days":30}`, 4, noProfile,
					func(ids []int64) {
						// Builds 1 and 2 were uploaded 45 and 31 days ago.
						m.exec(`UPDATE releases SET created_at = now() - interval '45 days' WHERE id = $1`, ids[0])
						m.exec(`UPDATE releases SET created_at = now() - interval '31 days' WHERE id = $1`, ids[1])
					},
					func(ids []int64) []int64 { return ids[:2] }},
				{"max bytes", "", 4, noProfile, nil, nil}, // policy and expectation from the sizes below
				{"expired profile", `{"expired_profile_days":30}`, 4, expired, nil,
					func(ids []int64) []int64 { return ids[:2] }},
			}
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					name := fmt.Sprintf("ret%d%s", i, storage)
					ch, ids := m.channelOf(name, c.builds, c.expires)
					chID := id(ch)
					if c.prepare != nil {
						c.prepare(ids)
					}
					policy, wantGone := c.policy, []int64(nil)
					if c.wantGone != nil {
						wantGone = c.wantGone(ids)
					} else {
						// Room for the newest two builds: the older two go.
						var two int64
						if err := m.e.DB.Pool.QueryRow(context.Background(), `SELECT sum(size) FROM releases WHERE id = ANY ($1)`, ids[2:]).Scan(&two); err != nil {
							t.Fatal(err)
						}
						policy, wantGone = fmt.Sprintf(`{"max_bytes":%d}`, two), ids[:2]
					}
					slices.Sort(wantGone)
					keys := map[int64][]string{}
					for _, rid := range ids {
						keys[rid] = releaseKeys(t, m.e, rid)
					}
					// The plan of the proposed policy, before it is saved, deletes nothing.
					preview := m.want(m.call("POST", fmt.Sprintf("/api/channels/%d/retention/plan", chID), upload, policy), 200, "preview")
					if got := planned(t, preview); !slices.Equal(got, wantGone) {
						t.Fatalf("preview plans %v, want %v", got, wantGone)
					}
					if got := m.remaining(chID); len(got) != c.builds {
						t.Fatalf("the preview deleted releases: %v left", got)
					}
					m.want(m.call("PUT", fmt.Sprintf("/api/channels/%d/retention", chID), admin, policy), 200, "set policy")
					plan := planned(t, m.want(m.call("GET", fmt.Sprintf("/api/channels/%d/retention/plan", chID), upload, ""), 200, "plan"))
					if !slices.Equal(plan, wantGone) {
						t.Fatalf("plan %v, want %v", plan, wantGone)
					}
					if _, err := m.e.Service.Retention.EnforceRetention(context.Background()); err != nil {
						t.Fatal(err)
					}
					if got, want := m.remaining(chID), without(ids, plan); !slices.Equal(got, want) {
						t.Fatalf("after enforcement %v remain, want %v (the plan was %v)", got, want, plan)
					}
					for _, rid := range plan {
						m.want(m.call("GET", fmt.Sprintf("/api/releases/%d", rid), upload, ""), 404, "deleted release")
						assertCollected(t, m.e, keys[rid])
					}
					objects := m.e.Objects(t)
					for _, rid := range without(ids, plan) {
						for _, k := range keys[rid] {
							if !slices.Contains(objects, k) {
								t.Errorf("object %s of kept release %d is gone", k, rid)
							}
						}
					}
					// Enforcing again deletes nothing more.
					if n, err := m.e.Service.Retention.EnforceRetention(context.Background()); err != nil || n != 0 {
						t.Errorf("a second run deleted %d (%v)", n, err)
					}
				})
			}
		})
	}
}

// The scheme's policy applies to its channels, the channel's wins over it, and bad values are
// refused with nothing changed.
func TestRetentionInheritanceAndRefusals(t *testing.T) {
	m := retentionEnv(t, apptest.FS)
	admin, upload := m.e.AdminToken, m.e.UploadToken
	ch, ids := m.channelOf("inherit", 4, noProfile)
	chID := id(ch)
	var schemeID int64
	if err := m.e.DB.Pool.QueryRow(context.Background(), `SELECT scheme_id FROM channels WHERE id = $1`, chID).Scan(&schemeID); err != nil {
		t.Fatal(err)
	}
	m.want(m.call("PUT", fmt.Sprintf("/api/schemes/%d/retention", schemeID), admin, `{"keep_builds":3,"max_age_days":90}`), 200, "scheme policy")
	scheme := m.want(m.call("GET", fmt.Sprintf("/api/schemes/%d", schemeID), upload, ""), 200, "scheme")
	if scheme["retained_builds"] != float64(3) {
		t.Errorf("the scheme's keep_builds is not its retained_builds: %v", scheme["retained_builds"])
	}
	got := m.want(m.call("GET", fmt.Sprintf("/api/channels/%d/retention", chID), upload, ""), 200, "channel policy")
	eff := got["effective"].(map[string]any)
	if eff["keep_builds"] != float64(3) || eff["max_age_days"] != float64(90) || got["keep_builds"] != nil {
		t.Errorf("effective %v, own keep_builds %v", eff, got["keep_builds"])
	}
	if plan := planned(t, m.want(m.call("GET", fmt.Sprintf("/api/channels/%d/retention/plan", chID), upload, ""), 200, "plan")); !slices.Equal(plan, ids[:1]) {
		t.Errorf("scheme policy plans %v, want %v", plan, ids[:1])
	}
	// The channel turns the inherited rule off with 0.
	m.want(m.call("PUT", fmt.Sprintf("/api/channels/%d/retention", chID), admin, `{"keep_builds":0}`), 200, "channel policy")
	if plan := planned(t, m.want(m.call("GET", fmt.Sprintf("/api/channels/%d/retention/plan", chID), upload, ""), 200, "plan")); len(plan) != 0 {
		t.Errorf("keep_builds 0 on the channel still plans %v", plan)
	}
	before := m.state()
	for _, c := range []struct{ method, path, token, body string }{
		{"PUT", fmt.Sprintf("/api/channels/%d/retention", chID), admin, `{"keep_builds":-1}`},
		{"PUT", fmt.Sprintf("/api/channels/%d/retention", chID), admin, `{"max_bytes":"lots"}`},
		{"PUT", fmt.Sprintf("/api/channels/%d/retention", chID), admin, `{"max_age_days":1.5}`},
		{"PUT", fmt.Sprintf("/api/channels/%d/retention", chID), admin, `{"keep_build":3}`},
		{"PUT", fmt.Sprintf("/api/schemes/%d/retention", schemeID), admin, `{"expired_profile_days":-3}`},
		{"POST", fmt.Sprintf("/api/channels/%d/retention/plan", chID), upload, `{"max_bytes":-1}`},
		{"PUT", fmt.Sprintf("/api/channels/%d/retention", chID), admin, `{"keep_builds":1000001}`},
	} {
		m.want(m.call(c.method, c.path, c.token, c.body), 422, c.method+" "+c.body)
	}
	// The ranges are the domain's rule, said in its words whichever edge asks (the console's form
	// gets the same sentence).
	for body, want := range map[string]string{`{"keep_builds":-1}`: "keep_builds must be a whole number from 0 (off) to 1000000, or null to inherit",
		`{"max_bytes":-1}`: "max_bytes must be 0 (off) or more, or null to inherit"} {
		if got := m.call("PUT", fmt.Sprintf("/api/channels/%d/retention", chID), admin, body).Error(t); got != want {
			t.Errorf("%s: %q, want the domain's %q", body, got, want)
		}
	}
	m.want(m.call("PUT", fmt.Sprintf("/api/channels/%d/retention", chID), upload, `{"keep_builds":1}`), 403, "upload token")
	m.want(m.call("PUT", "/api/channels/999999/retention", admin, `{"keep_builds":1}`), 404, "unknown channel")
	m.want(m.call("GET", "/api/schemes/999999/retention", admin, ""), 404, "unknown scheme")
	if after := m.state(); after != before {
		t.Errorf("a refused request changed something:\n%s\n%s", before, after)
	}
}

// Two replicas (two services on one database and bucket) enforcing at once delete each build
// once: the channel row lock sends them to different channels or makes one skip.
func TestRetentionTwoReplicas(t *testing.T) {
	m := retentionEnv(t, apptest.S3)
	var all []int64
	var planned []int64
	for i := 0; i < 4; i++ {
		ch, ids := m.channelOf(fmt.Sprintf("pair%d", i), 5, noProfile)
		m.want(m.call("PUT", fmt.Sprintf("/api/channels/%d/retention", id(ch)), m.e.AdminToken, `{"keep_builds":2}`), 200, "policy")
		all = append(all, ids...)
		planned = append(planned, ids[:3]...)
	}
	other := service.New(m.e.Config, m.e.DB, m.e.Storage, nil, m.e.Service.Log)
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i, svc := range []*service.Service{m.e.Service, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := svc.Retention.EnforceRetention(context.Background())
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		}()
	}
	wg.Wait()
	if counts[0]+counts[1] != len(planned) {
		t.Errorf("the replicas deleted %d + %d releases, want %d in all", counts[0], counts[1], len(planned))
	}
	var left []int64
	rows, _ := m.e.DB.Pool.Query(context.Background(), `SELECT id FROM releases ORDER BY id`)
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		left = append(left, id)
	}
	rows.Close()
	want := without(all, planned)
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// exec runs SQL on the test database (to age releases).
func (m *mgmt) exec(sql string, args ...any) {
	m.t.Helper()
	if _, err := m.e.DB.Pool.Exec(context.Background(), sql, args...); err != nil {
		m.t.Fatal(err)
	}
}
