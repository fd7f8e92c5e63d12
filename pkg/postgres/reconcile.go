package postgres

import (
	"context"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// ownersSQL is every row that names an object key (see distribution.ObjectOwner): the key
// patterns Slipway writes are packages/… and debug_files/… (uploads and upload sessions),
// icons/… (release icons) and feedback/… (screenshots and their thumbnails), all recorded in these
// columns.
const ownersSQL = `SELECT object_key AS key, 'release' AS kind, id FROM releases
	UNION ALL SELECT icon_key, 'icon', id FROM releases WHERE icon_key IS NOT NULL
	UNION ALL SELECT object_key, 'debug_file', id FROM debug_files
	UNION ALL SELECT object_key, 'screenshot', feedback_id FROM feedback_screenshots
	UNION ALL SELECT thumb_key, 'screenshot', feedback_id FROM feedback_screenshots
	UNION ALL SELECT key, 'ledger', 0 FROM storage_objects
	UNION ALL SELECT object_key, 'session', 0 FROM upload_sessions WHERE state IN ('open', 'completing')`

// ObjectOwners yields every row that names an object, in byte order of the keys (COLLATE "C",
// the order Go compares strings in and blob.Lister lists), from one query and so one snapshot.
// Rows are streamed: memory stays small however many there are. A key may come more than once
// (an open session's object is also in the ledger).
func (db *Releases) ObjectOwners(ctx context.Context) iter.Seq2[distribution.ObjectOwner, error] {
	return func(yield func(distribution.ObjectOwner, error) bool) {
		rows, err := db.Pool.Query(ctx, `SELECT key, kind, id FROM (`+ownersSQL+`) o ORDER BY key COLLATE "C", kind`)
		if err != nil {
			yield(distribution.ObjectOwner{}, dbErr(err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var o distribution.ObjectOwner
			if err := rows.Scan(&o.Key, &o.Kind, &o.ID); err != nil {
				yield(o, dbErr(err))
				return
			}
			if !yield(o, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(distribution.ObjectOwner{}, dbErr(err))
		}
	}
}

// Unowned returns those of keys that no row names now: reconciliation asks again, in a fresh
// snapshot, right before it deletes anything.
func (db *Releases) Unowned(ctx context.Context, keys []string) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `WITH c(k) AS (SELECT DISTINCT unnest($1::text[]))
		SELECT k FROM c WHERE NOT EXISTS (SELECT 1 FROM (`+ownersSQL+`) o WHERE o.key = c.k) ORDER BY k COLLATE "C"`, keys)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, dbErr(err)
}
