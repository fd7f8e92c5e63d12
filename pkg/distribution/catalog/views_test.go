package catalog

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// viewStore is a database of channels: the reads a view needs, and the few the update check makes
// when a view does not hold the answer.
type viewStore struct {
	ReleaseStore
	channels map[string]*ChannelContext
	releases map[int64][]Release // newest first
}

func newViewStore() *viewStore {
	return &viewStore{channels: map[string]*ChannelContext{}, releases: map[int64][]Release{}}
}

func (s *viewStore) add(id, schemeID, appID int64, slug string, releases int) {
	s.channels[slug] = &ChannelContext{Channel: Channel{ID: id, Slug: slug, SchemeID: schemeID, Name: "ios"},
		Scheme: Scheme{ID: schemeID, AppID: appID, Name: "Adhoc"}, App: App{ID: appID, Name: "App"}}
	for v := releases; v >= 1; v-- {
		s.releases[id] = append(s.releases[id], Release{ID: id*1000 + int64(v), ChannelID: id, Version: v, BundleID: "com.example.app",
			ReleaseVersion: fmt.Sprintf("1.%d", v), BuildVersion: fmt.Sprint(v), Changelog: []ChangelogEntry{{Message: strings.Repeat("x", 100)}}})
	}
}

func (s *viewStore) ChannelContextBySlug(_ context.Context, slug string) (*ChannelContext, error) {
	cc, ok := s.channels[slug]
	if !ok {
		return nil, errs.New(errs.NotFound, "channel not found")
	}
	c := *cc
	return &c, nil
}

func (s *viewStore) RecentReleases(_ context.Context, channelID int64, bundleID string, limit int) ([]Release, error) {
	var out []Release
	for _, r := range s.releases[channelID] {
		if len(out) < limit && (bundleID == "" || r.BundleID == bundleID) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *viewStore) CountReleases(_ context.Context, channelID int64) (int, error) {
	return len(s.releases[channelID]), nil
}

func (s *viewStore) ListReleases(_ context.Context, channelID int64, p Page) ([]Release, error) {
	rels := s.releases[channelID]
	start := min(p.Offset(), len(rels))
	return rels[start:min(start+p.PerPage, len(rels))], nil
}

// Latest, versions and version_exist answer from the view; only what a view of the 200 newest
// releases cannot know goes to the database.
func TestViewAnswers(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	st := newViewStore()
	st.add(1, 10, 100, "small", 5)
	st.add(2, 20, 200, "big", readcache.ViewReleases+50)
	cache, s := readcache.New(readcache.Config{MaxBytes: 16 << 20, TTL: time.Hour}, st, nil), &Releases{Store: st}
	small, _ := cache.View(ctx, "small")
	if !small.Complete || small.Total != 5 {
		t.Fatalf("small view: complete %v total %d", small.Complete, small.Total)
	}
	rels, err := s.Latest(ctx, small, LatestQuery{ReleaseVersion: "1.0", BuildVersion: "1"})
	if err != nil || len(rels) != 1 || rels[0].Version != 5 {
		t.Fatalf("latest: %v %+v", err, rels)
	}
	rels, err = s.Latest(ctx, small, LatestQuery{ReleaseVersion: "1.3", BuildVersion: "3", SDK: true})
	if err != nil || len(rels) != 2 {
		t.Fatalf("sdk latest: %v %+v", err, rels)
	}
	if _, err := s.FindVersion(ctx, small, VersionQuery{BundleID: "com.example.app", ReleaseVersion: "9.9", BuildVersion: "9"}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a version the complete view lacks: %v", err)
	}
	page, err := s.Versions(ctx, small, Page{Page: 2, PerPage: 3})
	if err != nil || len(page) != 2 || page[0].Version != 2 {
		t.Fatalf("page 2 of 3: %v %+v", err, page)
	}
	big, _ := cache.View(ctx, "big")
	if big.Complete || big.Total != readcache.ViewReleases+50 || len(big.Releases) != readcache.ViewReleases {
		t.Fatalf("big view: complete %v total %d held %d", big.Complete, big.Total, len(big.Releases))
	}
}
