package uploads

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"io"
	"log/slog"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/storage"
)

// ChecksumStore is what the verifier asks of the database.
type ChecksumStore interface {
	// LeaseUnverified takes the oldest unverified release for lease; nil when there is none.
	LeaseUnverified(ctx context.Context, lease time.Duration) (*distribution.Release, error)
	// RecordChecksums records a release's checksums and state; false when the release is gone.
	RecordChecksums(ctx context.Context, id int64, sha256, sha512, sha1, state, reason string) (bool, error)
}

// Checksums hashes what passes through it: SHA-256, SHA-512 and SHA-1, the checksums releases
// carry (the update feeds need the last two: electron-updater, Squirrel).
type Checksums struct {
	sha256, sha512, sha1 hash.Hash
}

// NewChecksums returns hashers at the start of a stream.
func NewChecksums() *Checksums {
	return &Checksums{sha256: sha256.New(), sha512: sha512.New(), sha1: sha1.New()}
}

// Write adds p to the three sums.
func (c *Checksums) Write(p []byte) (int, error) {
	c.sha256.Write(p)
	c.sha512.Write(p)
	c.sha1.Write(p)
	return len(p), nil
}

// Sums returns the hex SHA-256, SHA-512 and SHA-1 of what was written.
func (c *Checksums) Sums() (sha256Hex, sha512Hex, sha1Hex string) {
	return hex.EncodeToString(c.sha256.Sum(nil)), hex.EncodeToString(c.sha512.Sum(nil)), hex.EncodeToString(c.sha1.Sum(nil))
}

// Verifier computes the checksums of releases recorded as unverified (a resumable session's
// package, whose SHA-256 was the client's word; releases recorded before the checksums were kept)
// by one read of the stored object, and records them: verified, or mismatch when the SHA-256 the
// client declared is not the bytes'. It is a background component: Run works until ctx ends.
type Verifier struct {
	Store   ChecksumStore
	Storage storage.Backend
	// Effects: a verified release changes its channel's feeds (the read cache drops the views).
	Effects distribution.Effects
	// Poll is how often it looks for unverified releases besides being woken (Wake).
	Poll time.Duration
	Log  *slog.Logger

	wake chan struct{}
}

// NewVerifier returns a verifier; Run starts it.
func NewVerifier(st ChecksumStore, backend storage.Backend, effects distribution.Effects, poll time.Duration, log *slog.Logger) *Verifier {
	return &Verifier{Store: st, Storage: backend, Effects: effects, Poll: poll, Log: log, wake: make(chan struct{}, 1)}
}

// Wake makes the running verifier look at once (a session's release was just recorded). It never
// blocks and starts nothing.
func (v *Verifier) Wake() {
	if v == nil {
		return
	}
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// verifyLease bounds one object's read; a verifier that dies holding a lease leaves the release to
// another once it runs out.
const verifyLease = 30 * time.Minute

// Run verifies unverified releases one at a time until ctx ends; a read in progress when ctx ends
// is abandoned (the release stays unverified, its lease runs out, and the next run takes it).
func (v *Verifier) Run(ctx context.Context) error {
	tick := time.NewTicker(v.Poll)
	defer tick.Stop()
	for {
		for ctx.Err() == nil {
			did, err := v.VerifyNext(ctx)
			if err != nil && ctx.Err() == nil {
				v.Log.WarnContext(ctx, "verifying a release's checksums failed; it stays unverified", slog.String("error", err.Error()))
			}
			if !did || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-v.wake:
		}
	}
}

// VerifyNext verifies the oldest unverified release, and reports whether there was one.
func (v *Verifier) VerifyNext(ctx context.Context) (bool, error) {
	r, err := v.Store.LeaseUnverified(ctx, verifyLease)
	if err != nil || r == nil {
		return false, err
	}
	rc, err := v.Storage.GetRange(ctx, r.ObjectKey, 0, -1)
	if err != nil {
		return true, storageErr(nil, "get", err)
	}
	sums := NewChecksums()
	n, err := io.Copy(sums, rc)
	rc.Close()
	if err != nil {
		return true, storageErr(nil, "get", err)
	}
	sha256Hex, sha512Hex, sha1Hex := sums.Sums()
	state, reason := distribution.ChecksumVerified, ""
	switch {
	case n != r.Size:
		state, reason = distribution.ChecksumMismatch, "the stored file is not the size recorded at upload"
	case r.SHA256 != "" && r.SHA256 != sha256Hex:
		state, reason = distribution.ChecksumMismatch, "the stored file's SHA-256 is not the "+r.SHA256+
			" the uploader declared: the upload is corrupt; upload the build again"
	}
	ok, err := v.Store.RecordChecksums(context.WithoutCancel(ctx), r.ID, sha256Hex, sha512Hex, sha1Hex, state, reason)
	if err != nil {
		return true, err
	}
	if ok {
		v.Effects.Changed(distribution.Change{ChannelID: r.ChannelID})
		if state == distribution.ChecksumMismatch {
			v.Log.WarnContext(ctx, "a release's stored bytes do not match its declared checksum", slog.Int64("release_id", r.ID))
		}
	}
	return true, nil
}
