// Package hostile runs the attacks of issue 20 against a real replica (`slipway serve` with
// Postgres and MinIO, built by test/e2e) all at once, while honest clients use it, and checks
// that every attack is refused, that the honest clients are served (a 64 MiB upload completes,
// release pages answer, `latest` stays within twice its quiet p99, measured against an identical
// replica nobody attacks, asked in alternation), and that the replica's memory,
// CPU and /metrics stay bounded. docs/security.md ("Threat model", "Hostile-client suite") states
// the bounds and the figures measured.
//
//	bash test/with-services.sh go test -count=1 -v ./test/hostile
package hostile
