package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// changesChannel is the LISTEN/NOTIFY channel the change triggers of migration 3 announce on.
const changesChannel = "slipway_changes"

// ListenChanges delivers the changes every writer announces (triggers on releases, channels,
// schemes and apps, in the writing transaction) to onChange, until ctx ends. It listens on a
// connection of its own, outside the pool. Whenever it (re)connects it calls onConnect first:
// notifications sent while it was not listening are lost, so the caller must forget what it
// cached. A lost connection is retried with backoff; the error is returned only when ctx ends.
func (db *Events) ListenChanges(ctx context.Context, onConnect func(), onChange func(distribution.Change)) error {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := db.listen(ctx, func() { wait = 100 * time.Millisecond; onConnect() }, onChange)
		if ctx.Err() != nil {
			break
		}
		_ = err // the caller flushes on reconnect; there is nothing else to do about it
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(wait*2, 10*time.Second)
	}
	return ctx.Err()
}

func (db *Events) listen(ctx context.Context, onConnect func(), onChange func(distribution.Change)) error {
	conn, err := pgx.ConnectConfig(ctx, db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return dbErr(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		return dbErr(err)
	}
	onConnect()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return dbErr(err)
		}
		if c, ok := parseChange(n.Payload); ok {
			onChange(c)
		}
	}
}

// parseChange reads a trigger's payload: "c:<channel id>", "s:<scheme id>" or "a:<app id>".
func parseChange(payload string) (distribution.Change, bool) {
	kind, id, ok := strings.Cut(payload, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil {
		return distribution.Change{}, false
	}
	switch kind {
	case "c":
		return distribution.Change{ChannelID: n}, true
	case "s":
		return distribution.Change{SchemeID: n}, true
	case "a":
		return distribution.Change{AppID: n}, true
	}
	return distribution.Change{}, false
}
