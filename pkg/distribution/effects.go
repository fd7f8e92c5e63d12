package distribution

import "context"

// The small interfaces through which one part sets off another's work after a write. A write's
// transaction is the truth (its rows, its outbox rows, its object ledger rows); these only make
// this replica act on it sooner: drop cached views at once, deliver at once, delete objects at
// once. Losing any of them costs time, never correctness: other replicas learn changes from
// Postgres NOTIFY, the webhook sender polls, the collector deletes what is recorded as deleted.

// Invalidator drops from this replica's read cache what a write changed (readcache.Cache).
type Invalidator interface{ Invalidate(ch Change) }

// Waker tells this replica's webhook sender that a delivery was just made due (events.Sender), or
// its mail sender that a mail was (mailer.Sender). It never blocks and starts nothing: the sender,
// a component that is already running, looks at once.
type Waker interface{ Wake() }

// ObjectDeleter deletes objects a committed transaction recorded as deleted, and forgets each one
// deleted; failures stay recorded for the collector (uploads.Objects).
type ObjectDeleter interface {
	DeleteObjects(ctx context.Context, keys []string)
}

// EventMaker makes the events a write to a release records in the outbox (events.Maker).
type EventMaker interface {
	// ReleaseEvents makes events of kind (a webhook event name); downloads is the count a
	// release.downloaded event carries.
	ReleaseEvents(kind string, downloads int64) EventFunc
}

// Effects are what a part's writes set off beyond their transaction. Every field may be nil (unit
// tests leave out what they do not look at): a nil Cache invalidates nothing, a nil Webhooks or
// Mail wakes nobody, nil Objects leave deleted objects to the collector, nil Events record no events.
type Effects struct {
	Cache    Invalidator
	Webhooks Waker
	// Mail is rung (WakeMail) after a transaction that wrote mail to the outbox commits: this
	// replica's mail sender sends it at once instead of at its next poll.
	Mail    Waker
	Objects ObjectDeleter
	Events  EventMaker
}

// Changed drops from this replica's read cache at once what a write changed, so the writer's next
// read is fresh; other replicas learn it from the database's notification.
func (e Effects) Changed(ch Change) {
	if e.Cache != nil {
		e.Cache.Invalidate(ch)
	}
}

// Wake makes this replica's webhook sender look for due deliveries at once.
func (e Effects) Wake() {
	if e.Webhooks != nil {
		e.Webhooks.Wake()
	}
}

// WakeMail makes this replica's mail sender look for due mail at once: call it after the commit
// of a transaction that wrote mail (writeMail in the store).
func (e Effects) WakeMail() {
	if e.Mail != nil {
		e.Mail.Wake()
	}
}

// ReleaseEvents makes the events of a write to a release (nil: none).
func (e Effects) ReleaseEvents(kind string) EventFunc {
	if e.Events == nil {
		return nil
	}
	return e.Events.ReleaseEvents(kind, 0)
}

// Deleted returns a function that takes what a store deletion returned (the keys of the objects it
// recorded as deleted, or an error) and deletes those objects after the commit. The deletion runs
// to its end even when the request that asked for it is cancelled: the rows are gone already.
func (e Effects) Deleted(ctx context.Context) func(keys []string, err error) error {
	return func(keys []string, err error) error {
		if err != nil {
			return err
		}
		if e.Objects != nil {
			e.Objects.DeleteObjects(context.WithoutCancel(ctx), keys)
		}
		return nil
	}
}
