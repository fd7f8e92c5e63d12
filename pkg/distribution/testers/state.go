package testers

import (
	"context"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// StateStore reads one tester's state on one release.
type StateStore interface {
	TesterReleaseState(ctx context.Context, releaseID, testerID int64) (*distribution.ReleaseTester, error)
}

// MyRelease returns what the context's tester (a tester session, or the tester a console user
// is) did with a release, for the release page to show them: nil when the context has no tester
// or the release never went to them. The page reads it only after the channel let the request
// in, so it reveals nothing the request could not see.
func (t *Testers) MyRelease(ctx context.Context, releaseID int64) (*distribution.ReleaseTester, error) {
	a, ok := distribution.ActorIn(ctx)
	if !ok || a.TesterID == 0 {
		return nil, nil
	}
	return t.Store.TesterReleaseState(ctx, releaseID, a.TesterID)
}
