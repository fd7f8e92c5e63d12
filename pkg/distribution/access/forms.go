package access

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// FormStore records the console's single-use form tokens (console_forms).
type FormStore interface {
	// ClaimForm records the form token's id; it reports false, with the page the first claim
	// ended on ("" while it runs or after it failed), when the id was claimed before.
	ClaimForm(ctx context.Context, id string, olderThan time.Time) (bool, string, error)
	// FinishForm records the page a claimed form's action ended on.
	FinishForm(ctx context.Context, id, resultURL string) error
	// ReleaseForm forgets a claim whose action failed, so the form may be sent again.
	ReleaseForm(ctx context.Context, id string) error
}

// FormTokenTTL is how long a rendered console form may wait to be sent: a session's life.
const FormTokenTTL = SessionTTL

// Forms makes a console form's action happen once: a reload of the answer, a resubmission or a
// double click finds the token claimed and does nothing (docs/decisions.md, "Console forms").
type Forms struct {
	Store FormStore
}

// formID is what is stored of a token's nonce.
func formID(nonce string) string {
	sum := sha256.Sum256([]byte("console-form\x00" + nonce))
	return hex.EncodeToString(sum[:])
}

// Claim claims a form token's nonce for one action. When it was claimed before, it reports false
// and the page the first action ended on ("" when that is not known yet). Claims older than the
// token's life (plus an hour) are deleted on the way: their tokens no longer check.
func (f *Forms) Claim(ctx context.Context, nonce string) (bool, string, error) {
	return f.Store.ClaimForm(ctx, formID(nonce), time.Now().Add(-FormTokenTTL-time.Hour))
}

// Finish records where a claimed form's action ended, for its resubmissions.
func (f *Forms) Finish(ctx context.Context, nonce, resultURL string) error {
	return f.Store.FinishForm(ctx, formID(nonce), resultURL)
}

// Release forgets the claim of a form whose action failed: the corrected form is a new one, and
// sending the failed one again tries again.
func (f *Forms) Release(ctx context.Context, nonce string) error {
	return f.Store.ReleaseForm(ctx, formID(nonce))
}
