package distribution

import (
	"errors"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// What every part's store contract shares: the errors a store method returns beyond *errs.Error.
// The store interfaces themselves are declared by each part, next to the use cases that call
// them (catalog.AppStore, uploads.Ledger, ...), with the values only they take (uploads'
// DebugFileQuery, access's AttemptLimit): each part asks for the few methods it uses.
// pkg/postgres implements all of them on Postgres; unit tests implement the few a rule touches.
// Every method returns *errs.Error for conditions a client can act on (not found, conflict,
// unavailable), classified where they arise.

// ErrStale is returned (wrapped) by UpdateScheme, UpdateChannel and UpdateRelease when the row's
// updated_at is no longer the one the caller read: another edit landed in between. The domain then
// reads the row again and re-applies its changes (RetryStale), so that concurrent edits of
// different fields all take effect instead of the last write restoring stale fields.
var ErrStale = errors.New("the row changed since it was read")

// ErrReadOnly is the cause (wrapped in an errs.Unavailable) of the store's Writable check failing
// on a database that answers but refuses writes: a standby, as a demoted primary is after a
// failover, or default_transaction_read_only.
var ErrReadOnly = errors.New("the database refuses writes")

// maxEditAttempts bounds how often an edit is re-read and re-applied while other edits of the same
// row keep landing between its read and its write.
const maxEditAttempts = 5

// RetryStale runs a read-apply-write edit again while its write finds the row changed (ErrStale).
func RetryStale[T any](edit func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := edit()
		if !errors.Is(err, ErrStale) {
			return v, err
		}
		if attempt == maxEditAttempts {
			return v, errs.Wrap(errs.Conflict, err, "this record is being changed by other requests at the same time; try again")
		}
	}
}
