package feedback

import (
	"context"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
)

// FacetStore names what an app's feedback can be filtered by (postgres.Feedback has it). It is
// asked of the Store when it has it, so a store without it still serves every other use case;
// its inbox then offers no builds or testers to choose from.
type FacetStore interface {
	// FeedbackFacets returns the app's builds and testers that have reports (at most limit of
	// each), for the inbox's filters.
	FeedbackFacets(ctx context.Context, appID int64, limit int) (distribution.FeedbackFacets, error)
}

// facetsShown bounds the builds and testers an inbox's filters offer (the newest builds, the
// testers by email).
const facetsShown = 200

// Facets returns what an app's inbox can be filtered by: its builds and testers with reports.
func (r *Reports) Facets(ctx context.Context, appID int64) (distribution.FeedbackFacets, error) {
	if err := r.Policy.Authorize(ctx, policy.ReadFeedback, policy.OnApp(appID)); err != nil {
		return distribution.FeedbackFacets{}, err
	}
	fs, ok := r.Store.(FacetStore)
	if !ok {
		return distribution.FeedbackFacets{}, nil
	}
	return fs.FeedbackFacets(ctx, appID, facetsShown)
}
