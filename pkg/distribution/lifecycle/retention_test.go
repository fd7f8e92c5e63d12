package lifecycle

import (
	"reflect"
	"testing"
	"time"

	. "github.com/slipwayhq/slipway/pkg/distribution"
)

func ids(vs []RetentionVictim) map[int64]string {
	out := map[int64]string{}
	for _, v := range vs {
		out[v.ID] = v.Reason
	}
	return out
}

func TestPlanRetention(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	expired := now.Add(-40 * day)
	fresh := now.Add(100 * day)
	// Newest first: versions 6..1, one a day older each, 10 MiB each.
	var rels []RetentionCandidate
	for v := 6; v >= 1; v-- {
		rels = append(rels, RetentionCandidate{ID: int64(v * 10), Version: v, Platform: "ios", CreatedAt: now.Add(-time.Duration(6-v) * 10 * day), Size: 10 << 20, ProfileExpiresAt: &fresh})
	}
	pinned := func(rs []RetentionCandidate, id int64) []RetentionCandidate {
		out := append([]RetentionCandidate(nil), rs...)
		for i := range out {
			if out[i].ID == id {
				out[i].Pinned = true
			}
		}
		return out
	}
	cases := []struct {
		name  string
		rules RetentionRules
		rels  []RetentionCandidate
		want  map[int64]string
	}{
		{"off", RetentionRules{}, rels, map[int64]string{}},
		{"keep 2", RetentionRules{KeepBuilds: 2}, rels, map[int64]string{40: ReasonKeepBuilds, 30: ReasonKeepBuilds, 20: ReasonKeepBuilds, 10: ReasonKeepBuilds}},
		{"keep 2, one pinned", RetentionRules{KeepBuilds: 2}, pinned(rels, 30), map[int64]string{40: ReasonKeepBuilds, 20: ReasonKeepBuilds, 10: ReasonKeepBuilds}},
		{"keep 1 never deletes the newest", RetentionRules{KeepBuilds: 1}, rels[:1], map[int64]string{}},
		// Ages are 0, 10, 20, 30, 40, 50 days.
		{"older than 25 days", RetentionRules{MaxAgeDays: 25}, rels, map[int64]string{30: ReasonMaxAge, 20: ReasonMaxAge, 10: ReasonMaxAge}},
		{"older than 1 day keeps the newest even if old", RetentionRules{MaxAgeDays: 1}, rels[3:], map[int64]string{20: ReasonMaxAge, 10: ReasonMaxAge}},
		// 25 MiB: the newest two (20 MiB) fit, the third would not.
		{"max bytes", RetentionRules{MaxBytes: 25 << 20}, rels, map[int64]string{40: ReasonMaxBytes, 30: ReasonMaxBytes, 20: ReasonMaxBytes, 10: ReasonMaxBytes}},
		{"max bytes counts pinned", RetentionRules{MaxBytes: 25 << 20}, pinned(rels, 50), map[int64]string{40: ReasonMaxBytes, 30: ReasonMaxBytes, 20: ReasonMaxBytes, 10: ReasonMaxBytes}},
		{"max bytes below the newest", RetentionRules{MaxBytes: 1}, rels[:2], map[int64]string{50: ReasonMaxBytes}},
	}
	withExpired := append([]RetentionCandidate(nil), rels...)
	withExpired[2].ProfileExpiresAt = &expired // version 4 expired 40 days ago
	withExpired[3].Platform = "android"        // not iOS: kept whatever its profile says
	withExpired[3].ProfileExpiresAt = &expired
	cases = append(cases,
		struct {
			name  string
			rules RetentionRules
			rels  []RetentionCandidate
			want  map[int64]string
		}{"expired profile 30 days", RetentionRules{ExpiredProfileDays: 30}, withExpired, map[int64]string{40: ReasonExpiredProfile}},
		struct {
			name  string
			rules RetentionRules
			rels  []RetentionCandidate
			want  map[int64]string
		}{"expired profile 60 days", RetentionRules{ExpiredProfileDays: 60}, withExpired, map[int64]string{}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ids(PlanRetention(c.rules, c.rels, now))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("victims %v, want %v", got, c.want)
			}
		})
	}
}

func TestEffectiveRetention(t *testing.T) {
	n := func(v int) *int { return &v }
	b := func(v int64) *int64 { return &v }
	defaults := RetentionRules{KeepBuilds: 50, MaxAgeDays: 90}
	got := EffectiveRetention(RetentionPolicy{KeepBuilds: n(10), MaxBytes: b(1 << 30)}, RetentionPolicy{MaxAgeDays: n(0), KeepBuilds: n(3)}, defaults)
	want := RetentionRules{KeepBuilds: 3, MaxAgeDays: 0, MaxBytes: 1 << 30}
	if got != want {
		t.Errorf("got %+v, want %+v (channel over scheme over defaults; 0 turns off)", got, want)
	}
	if got := EffectiveRetention(RetentionPolicy{}, RetentionPolicy{}, defaults); got != defaults {
		t.Errorf("nothing set: got %+v, want the defaults", got)
	}
}

func TestCheckPolicy(t *testing.T) {
	neg, big := -1, 1_000_001
	negB := int64(-5)
	for _, p := range []RetentionPolicy{{KeepBuilds: &neg}, {MaxAgeDays: &big}, {ExpiredProfileDays: &neg}, {MaxBytes: &negB}} {
		if err := checkPolicy(&p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

// A build of another app uploaded to a channel (issue 34) never makes keep_builds delete the
// channel's own newest build: each app's builds are counted apart, each app's newest is kept.
func TestPlanRetentionCountsEachAppApart(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	rels := []RetentionCandidate{
		{ID: 4, Version: 4, BundleID: "com.example.intruder", Platform: "ios", CreatedAt: now, Size: 1},
		{ID: 3, Version: 3, BundleID: "com.example.intruder", Platform: "ios", CreatedAt: now, Size: 1},
		{ID: 2, Version: 2, BundleID: "com.example.harbor", Platform: "ios", CreatedAt: now, Size: 1},
		{ID: 1, Version: 1, BundleID: "com.example.harbor", Platform: "ios", CreatedAt: now, Size: 1},
	}
	want := map[int64]string{3: ReasonKeepBuilds, 1: ReasonKeepBuilds}
	if got := ids(PlanRetention(RetentionRules{KeepBuilds: 1}, rels, now)); !reflect.DeepEqual(got, want) {
		t.Errorf("keep 1 deletes %v, want %v (each app's newest kept)", got, want)
	}
	aged := map[int64]string{3: ReasonMaxAge, 1: ReasonMaxAge}
	if got := ids(PlanRetention(RetentionRules{MaxAgeDays: 1}, rels, now.AddDate(0, 0, 10))); !reflect.DeepEqual(got, aged) {
		t.Errorf("max age deletes %v, want %v (each app's newest kept)", got, aged)
	}
}
