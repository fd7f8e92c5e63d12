package access

import "time"

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
