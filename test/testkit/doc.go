// Package testkit holds the helpers that tests of several packages need alike, so that each is
// written once: waiting for a condition with a deadline (Eventually), reading a process's memory
// and CPU from /proc (PeakRSS, CPUTime, ...), a goroutine-safe buffer for capturing logs
// (LockedBuffer), checking an error's kind (WantKind, WantInvalid), a free loopback port and
// random names. An in-memory storage backend lives beside the storage conformance suite that it
// passes (pkg/blob/blobtest.Memory).
//
// A deadline here bounds how long a test waits for something that should happen, so that a
// defect fails the test instead of hanging it; it never asserts how fast something happened.
// Tests measure time only to report it (test/bench), never to pass or fail.
package testkit
