package distribution

import "time"

// The states of a mail in the outbox (OutgoingMail): pending (due at its next attempt), sending
// (leased by one replica's mail sender until its lease ends), sent, failed (given up).
const (
	OutboxPending = "pending"
	OutboxSending = "sending"
	OutboxSent    = "sent"
	OutboxFailed  = "failed"
)

// DueMail is an outbox mail leased to one replica's mail sender.
type DueMail struct {
	OutgoingMail
	// Attempt is this attempt's number (1 for the first). It is also the lease's token: the
	// attempt's outcome is recorded only while the mail is still leased with it, so a replica
	// whose lease ran out (and was taken by another) records nothing.
	Attempt int
}

// MailFinish is the outcome of a leased mail's attempt.
type MailFinish struct {
	// State is OutboxSent, OutboxPending (retried at Next) or OutboxFailed.
	State string
	Next  time.Time
	// Error says why the attempt failed ("" when sent); it holds no password.
	Error string
}

// MailCounts are the outbox's mails by state, for the console and the metrics.
type MailCounts struct {
	// Pending are waiting to be sent (or being sent now); Failed were given up.
	Pending, Failed int64
}
