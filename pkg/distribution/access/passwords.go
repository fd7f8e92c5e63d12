package access

import (
	"context"
	"fmt"
	"math"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/signing"
)

// PasswordGuard counts attempts at channel passwords, per client and per channel, shared by all
// replicas.
type PasswordGuard interface {
	// ReservePasswordAttempt counts an attempt before its password is checked, atomically with
	// the check that it may be made, so concurrent attempts cannot slip past the limits. It
	// returns how long the attempt must still wait (nothing is counted then), or 0.
	ReservePasswordAttempt(ctx context.Context, channelID int64, client string, perClient, perChannel AttemptLimit) (time.Duration, error)
	// FailPasswordAttempt follows a wrong password: the waits count from now, when it was known
	// wrong, rather than from when it was reserved (bcrypt takes a while).
	FailPasswordAttempt(ctx context.Context, channelID int64, client string) error
	// ForgivePasswordAttempt follows a right password: the client's count is cleared and its
	// attempt taken off the channel's.
	ForgivePasswordAttempt(ctx context.Context, channelID int64, client string) error
}

// Passwords lets requests into password-protected channels: the password itself (with wrong
// guesses slowed down across replicas), or the signed cookie and release tokens given for it.
type Passwords struct {
	Guard  PasswordGuard
	Signer *signing.Signer
}

// passwordFailureWindow is how long attempts at a channel's password are remembered.
const passwordFailureWindow = 15 * time.Minute

// ClientPasswordLimit: a client address may make 5 attempts at a channel's password; each further
// one must wait, doubling from one second, until the address has made none for 15 minutes.
var ClientPasswordLimit = AttemptLimit{Free: 5, Window: passwordFailureWindow}

// ChannelPasswordLimit: all addresses together may make 30 attempts at one channel's password
// (right ones are not counted), then the same doubling wait, so that many addresses cannot guess
// one channel's password any faster than a few dozen times per quarter hour.
var ChannelPasswordLimit = AttemptLimit{Free: 30, Window: passwordFailureWindow}

// CheckChannelPassword verifies a channel password given by client (an IP address). Each attempt
// is counted before bcrypt compares it, for its client and for the channel; an attempt past
// ClientPasswordLimit or ChannelPasswordLimit that comes too soon is refused with
// errs.TooManyRequests without being compared. A right password clears its client's count.
func (p *Passwords) CheckChannelPassword(ctx context.Context, c *distribution.Channel, password, client string) error {
	if !c.HasPassword() {
		return nil
	}
	if password == "" {
		return errs.New(errs.Unauthenticated, "this channel is password protected: give its password")
	}
	left, err := p.Guard.ReservePasswordAttempt(ctx, c.ID, client, ClientPasswordLimit, ChannelPasswordLimit)
	if err != nil {
		return err
	}
	if left > 0 {
		secs, unit := int(math.Ceil(left.Seconds())), "seconds"
		if secs == 1 {
			unit = "second"
		}
		e := errs.New(errs.TooManyRequests, "too many wrong passwords; try again in %d %s", secs, unit)
		e.RetryAfter = left
		return e
	}
	if bcrypt.CompareHashAndPassword([]byte(*c.PasswordHash), []byte(password)) != nil {
		if err := p.Guard.FailPasswordAttempt(ctx, c.ID, client); err != nil {
			return err
		}
		return errs.New(errs.Forbidden, "wrong password for this channel")
	}
	return p.Guard.ForgivePasswordAttempt(ctx, c.ID, client)
}

// PasswordCookieName names the cookie that proves a browser gave a channel's password.
func PasswordCookieName(slug string) string { return fmt.Sprintf("slipway_ch_%s", slug) }

// AccessRequest is what a request offers to open a password-protected channel.
type AccessRequest struct {
	Cookie    string // value of the channel's password cookie
	Token     string // an install/download token (the "access" query parameter)
	Password  string // the "password" parameter, for API clients
	FeedToken string // the channel's feed token (the "feed_token" parameter of a feed's links)
	Client    string // client IP address, for slowing down guessing
	ReleaseID int64  // the release asked for, which a token must name
}

// accessTTL bounds install links and download tokens for protected channels.
const accessTTL = time.Hour

// cookieTTL is how long a browser stays allowed in after giving a channel's password.
const cookieTTL = 30 * 24 * time.Hour

// Authorize lets a request into a channel: any channel without a password; a protected one with
// a valid password cookie, a valid release token, or the right password. Cookies and tokens are
// bound to the password hash, so changing the password revokes them.
func (p *Passwords) Authorize(ctx context.Context, c *distribution.Channel, req AccessRequest) error {
	if !c.HasPassword() {
		return nil
	}
	if req.Cookie != "" && p.Signer.CheckToken(req.Cookie, "channel-cookie", c.Slug, *c.PasswordHash) {
		return nil
	}
	if req.FeedToken != "" && c.CheckFeedToken(req.FeedToken) {
		return nil
	}
	if req.Token != "" && req.ReleaseID > 0 && p.Signer.CheckToken(req.Token, "release-access", c.Slug, *c.PasswordHash, fmt.Sprint(req.ReleaseID)) {
		return nil
	}
	return p.CheckChannelPassword(ctx, c, req.Password, req.Client)
}

// ChannelCookie returns the value of the password cookie for a protected channel, and its lifetime.
func (p *Passwords) ChannelCookie(c *distribution.Channel) (string, time.Duration) {
	return p.Signer.Token("channel-cookie", cookieTTL, c.Slug, *c.PasswordHash), cookieTTL
}

// ReleaseAccessToken returns a short-lived token opening one release of a protected channel, for
// links followed without cookies (iOS fetches the install manifest and package by itself).
func (p *Passwords) ReleaseAccessToken(c *distribution.Channel, releaseID int64) string {
	if !c.HasPassword() {
		return ""
	}
	return p.Signer.Token("release-access", accessTTL, c.Slug, *c.PasswordHash, fmt.Sprint(releaseID))
}
