// Package hostile runs the attacks docs/security.md lists ("Hostile-client suite") against a real
// replica (`slipway serve` with Postgres and MinIO, built by test/e2e) all at once, while honest
// clients use it, and checks that every attack is refused, that the honest clients are served (a
// 64 MiB upload completes, release pages and `latest` answer), that nothing an attack sent is
// stored, and that the replica's memory, CPU-seconds and /metrics stay bounded. It asserts only
// what a busy machine cannot change: `latest`'s latency under attack, measured against an
// identical replica nobody attacks, is a figure that test/bench reports (docs/benchmarks.md,
// "Latency under attack"), not a bound.
//
//	bash test/with-services.sh go test -count=1 -v ./test/hostile
package hostile
