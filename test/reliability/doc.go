// Package reliability proves Slipway's guarantees under load and faults with the real binary:
// several `slipway serve` replicas on loopback ports sharing one Postgres and one bucket
// (test/e2e starts them), concurrent uploads, dependencies killed and restarted mid-traffic,
// replicas killed mid-upload, clients that disconnect or stall, size and concurrency limits, and
// the authentication and secrecy rules. Its tests run in `make test` (test/with-services.sh).
//
// Faults that stop a dependency use private instances, so packages testing in parallel never see
// them: a MinIO of the test's own (the pinned binary in SLIPWAY_TEST_MINIO_BIN, killed with
// SIGKILL and restarted on the same port and data folder) and a Postgres cluster of its own
// (initdb into a temporary folder, stopped with a fast shutdown and started again on the same
// port). Without those binaries the tests skip, or fail under SLIPWAY_TEST_REQUIRE_SERVICES=1.
//
// After each scenario, checkConsistent runs `slipway gc --grace 0s` and checks the invariant the
// design rests on: the objects in storage are exactly those the database references, each release
// and debug file object is whole (its stored size is the recorded size), no multipart upload is
// left unfinished, and no bookkeeping row is left behind.
package reliability
