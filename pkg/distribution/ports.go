package distribution

import (
	"errors"
	"fmt"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// What the parts share with the database: the values a store method takes or returns beyond the
// entities (domain.go). The store interfaces themselves are declared by each part, next to the
// use cases that call them (catalog.AppStore, uploads.Ledger, ...): each part asks for the few
// methods it uses. pkg/store implements all of them on Postgres; unit tests implement the few a
// rule touches. Every method returns *errs.Error for conditions a client can act on (not found,
// conflict, unavailable), classified where they arise.

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

// DebugFileQuery finds a debug file by what crash tools know of a build. Zero fields are not
// compared; AppID 0 searches every app.
type DebugFileQuery struct {
	AppID                        int64
	DeviceType                   string
	ReleaseVersion, BuildVersion string
	// UUID is a Mach-O UUID (upper case) or a mapping file's UUID (lower case), as stored.
	UUID string
	// SHA256 and MD5 are checksums of the archive (hex, lower case).
	SHA256, MD5 string
}

// AttemptLimit slows down guesses (wrong channel passwords): Free attempts within Window, then
// each further attempt must wait after the one before, one second, then two, four and so on, up
// to Window. Attempts are forgotten Window after the last one.
type AttemptLimit struct {
	Free   int
	Window time.Duration
}

// Wait returns how long after the last of n counted attempts the next one may come (0: at once).
func (l AttemptLimit) Wait(n int) time.Duration {
	if n < l.Free {
		return 0
	}
	k := n - l.Free
	if k >= 30 {
		return l.Window
	}
	return min(time.Duration(1<<k)*time.Second, l.Window)
}

// Left returns how long an attempt at now must still wait, given n attempts counted, the last at
// last (0: it may go ahead), and the count it makes if it goes ahead (1 when the window has
// passed since the last attempt).
func (l AttemptLimit) Left(n int, last, now time.Time) (left time.Duration, next int) {
	if !now.Before(last.Add(l.Window)) {
		return 0, 1
	}
	if left = l.Wait(n) - now.Sub(last); left > 0 {
		return left, n
	}
	return 0, n + 1
}

// OpenSessions describes a token's open upload sessions (open or completing, not expired).
type OpenSessions struct {
	Count int
	// OldestID is the oldest one's id, NextExpiry when the first of them expires.
	OldestID   string
	NextExpiry time.Time
}

// TooManySessionsError is returned by CreateSession when the token already has its limit of open
// sessions; nothing was recorded.
type TooManySessionsError struct{ Open OpenSessions }

func (e *TooManySessionsError) Error() string {
	return fmt.Sprintf("the token has %d open upload sessions", e.Open.Count)
}
