// Package migrations holds Slipway's Postgres schema as golang-migrate SQL files, embedded into the
// binary so `slipway serve` and `slipway migrate` need nothing on disk.
package migrations

import "embed"

// FS holds the *.up.sql and *.down.sql files.
//
//go:embed *.sql
var FS embed.FS
