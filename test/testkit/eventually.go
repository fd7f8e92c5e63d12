package testkit

import (
	"testing"
	"time"
)

// Poll is how often Eventually and EventuallyOK look again.
const Poll = 10 * time.Millisecond

// Eventually calls cond every Poll until it returns true, and fails the test (t.Fatalf) if
// within passes first, saying what it waited for. within is a bound on waiting for something
// that should happen, not a measurement: choose it generously (seconds to minutes), so that only
// a thing that never happens reaches it, however loaded the machine.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	EventuallyOK(t, within, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// EventuallyOK is Eventually for a check that says why it is not satisfied yet: it calls check
// every Poll until it returns nil, and fails the test with the last error if within passes first.
func EventuallyOK(t testing.TB, within time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if err == errNotYet {
				t.Fatalf("waited %v for %s: it never happened", within, what)
			}
			t.Fatalf("waited %v for %s: %v", within, what, err)
		}
		time.Sleep(Poll)
	}
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet error = notYet{}
