package uploads

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"log/slog"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/edsign"
)

// ChecksumStore is what the verifier asks of the database.
type ChecksumStore interface {
	// LeaseUnverified takes the oldest unverified release for lease, and with unsigned the oldest
	// verified release still to be signed (Release.SparkleSign, rolled out to someone, no
	// signature yet) too; nil when there is none.
	LeaseUnverified(ctx context.Context, lease time.Duration, unsigned bool) (*distribution.Release, error)
	// RecordChecksums records a release's checksums and state, and the Sparkle signature Slipway
	// made when edSignature is not "" (a signature the release already has is kept); false when
	// the release is gone.
	RecordChecksums(ctx context.Context, id int64, sha256, sha512, sha1, state, reason, edSignature string) (bool, error)
	// GetRelease reads a release with its channel, scheme and app (the audit row of a signature).
	GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
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
// client declared is not the bytes'. With a Sparkle key it also signs the releases marked for it at
// upload (Release.AwaitsSignature), which takes a second read (pure Ed25519 hashes the message twice; see package
// edsign), and writes an audit row for each signature. It is a background component: Run works
// until ctx ends.
type Verifier struct {
	Store   ChecksumStore
	Storage blob.Backend
	// SparkleKey, when set, signs the releases marked for it (Release.AwaitsSignature).
	SparkleKey *edsign.Key
	// Audit records each signature, as the verifier.
	Audit *distribution.AuditLog
	// Effects: a verified release changes its channel's feeds (the read cache drops the views).
	Effects distribution.Effects
	// Poll is how often it looks for unverified releases besides being woken (Wake).
	Poll time.Duration
	Log  *slog.Logger
	// Parses is the replica's parse-memory budget, which its reads share (nil: unbounded).
	Parses *appinfo.Budget

	wake chan struct{}
}

// verifyBytes is what one verification's read holds: the copy buffer and the response's.
const verifyBytes = 1 << 20

// NewVerifier returns a verifier; Run starts it.
func NewVerifier(st ChecksumStore, backend blob.Backend, effects distribution.Effects, poll time.Duration, log *slog.Logger) *Verifier {
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
	r, err := v.Store.LeaseUnverified(ctx, verifyLease, v.SparkleKey != nil)
	if err != nil || r == nil {
		return false, err
	}
	var sig *edsign.Signature
	if v.SparkleKey != nil && r.AwaitsSignature() {
		sig = v.SparkleKey.Sign()
	}
	res, err := v.Parses.Reserve(ctx, verifyBytes, "the checksum verification")
	if err != nil {
		return true, err
	}
	defer res.Release()
	sums := NewChecksums()
	n, err := v.read(ctx, r.ObjectKey, sums, sig)
	if err != nil {
		return true, err
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
	edSignature := ""
	if sig != nil && state == distribution.ChecksumVerified {
		// The second read; its SHA-256 proves it read the bytes the first one did, so the nonce
		// (from the first) and the signature (over the second) are of one message.
		sig.Reread()
		again := sha256.New()
		if _, err := v.read(ctx, r.ObjectKey, again, sig); err != nil {
			return true, err
		}
		if hex.EncodeToString(again.Sum(nil)) != sha256Hex {
			return true, errors.New("the stored object changed between the two reads of its signature; it stays unsigned")
		}
		edSignature = base64.StdEncoding.EncodeToString(sig.Sum())
	}
	ok, err := v.Store.RecordChecksums(context.WithoutCancel(ctx), r.ID, sha256Hex, sha512Hex, sha1Hex, state, reason, edSignature)
	if err != nil {
		return true, err
	}
	if ok {
		v.Effects.Changed(distribution.Change{ChannelID: r.ChannelID})
		if edSignature != "" {
			v.Log.InfoContext(ctx, "signed a macOS package for Sparkle", slog.Int64("release_id", r.ID), slog.Any("key", v.SparkleKey))
			v.auditSignature(ctx, r.ID)
		}
		if state == distribution.ChecksumMismatch {
			v.Log.WarnContext(ctx, "a release's stored bytes do not match its declared checksum", slog.Int64("release_id", r.ID))
		}
	}
	return true, nil
}

// auditSignature writes the audit row of a signature Slipway made.
func (v *Verifier) auditSignature(ctx context.Context, id int64) {
	if v.Audit == nil {
		return
	}
	rc, err := v.Store.GetRelease(context.WithoutCancel(ctx), id)
	if err != nil {
		v.Log.WarnContext(ctx, "reading a signed release for its audit row failed", slog.Int64("release_id", id), slog.String("error", err.Error()))
		return
	}
	v.Audit.RecordAs(ctx, distribution.SystemActor("verifier"), "release.sign", distribution.ReleaseTarget(rc),
		map[string]any{"channel_id": rc.Channel.ID, "channel": rc.Channel.Name, "public_key": base64.StdEncoding.EncodeToString(v.SparkleKey.Public())})
}

// read copies the object at key into w and, when sig is not nil, into the signature's pass too; it
// returns the bytes read.
func (v *Verifier) read(ctx context.Context, key string, w io.Writer, sig *edsign.Signature) (int64, error) {
	rc, err := v.Storage.GetRange(ctx, key, 0, -1)
	if err != nil {
		return 0, storageErr(nil, "get", err)
	}
	defer rc.Close()
	if sig != nil {
		w = io.MultiWriter(w, sig)
	}
	n, err := io.Copy(w, rc)
	if err != nil {
		return n, storageErr(nil, "get", err)
	}
	return n, nil
}
