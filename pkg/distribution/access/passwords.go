package access

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
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
//
// A channel open to its testers only (Channel.TesterOnly) takes no password: the policy decides
// (policy.Install) from the request's actor (a tester session, a console user, a token), and a
// release token made for that actor (ReleaseAccessTokenAs) opens one release for an hour to
// clients that send no cookies (iOS fetching the manifest and the package).
type Passwords struct {
	Guard  PasswordGuard
	Signer *signing.Signer
	Policy *policy.Policy
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
	AppID     int64  // the channel's app (a tester-only channel's policy decision names it)
}

// accessTTL bounds install links and download tokens for protected channels.
const accessTTL = time.Hour

// cookieTTL is how long a browser stays allowed in after giving a channel's password.
const cookieTTL = 30 * 24 * time.Hour

// Authorize lets a request into a channel: any channel without a password; a protected one with
// a valid password cookie, a valid release token, or the right password. Cookies and tokens are
// bound to the password hash, so changing the password revokes them.
func (p *Passwords) Authorize(ctx context.Context, c *distribution.Channel, req AccessRequest) error {
	if c.TesterOnly {
		return p.authorizeTesters(ctx, c, req)
	}
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

// authorizeTesters lets a request into a channel open to its testers only: its feed token, a
// release token made for a tester who may still install the release, or whatever the policy
// lets the request's actor open.
func (p *Passwords) authorizeTesters(ctx context.Context, c *distribution.Channel, req AccessRequest) error {
	if req.FeedToken != "" && c.CheckFeedToken(req.FeedToken) {
		return nil
	}
	if req.Token != "" && req.ReleaseID > 0 {
		switch kind, id := p.tokenHolder(c, req); kind {
		case "t":
			if ok, err := p.Policy.Testers.MayInstall(ctx, id, c.ID, req.ReleaseID); err != nil || ok {
				return err
			}
		case "u":
			return nil
		}
	}
	return p.Policy.Authorize(ctx, policy.Install, policy.OnChannel(req.AppID, c.ID, req.ReleaseID))
}

// TokenTester returns the tester a tester-only channel's release token was made for (0: none,
// or the token is not valid), so that an install by that link is recorded as theirs.
func (p *Passwords) TokenTester(c *distribution.Channel, req AccessRequest) int64 {
	if kind, id := p.tokenHolder(c, req); kind == "t" {
		return id
	}
	return 0
}

// tokenHolder reads a tester-only channel's release token, "<t|u><id>.<expiry>.<signature>":
// made for a tester (t) or a console user (u), valid for req.ReleaseID.
func (p *Passwords) tokenHolder(c *distribution.Channel, req AccessRequest) (string, int64) {
	holder, tok, ok := strings.Cut(req.Token, ".")
	if !ok || len(holder) < 2 || (holder[0] != 't' && holder[0] != 'u') || !c.TesterOnly {
		return "", 0
	}
	id, err := strconv.ParseInt(holder[1:], 10, 64)
	if err != nil || id <= 0 || !p.Signer.CheckToken(tok, "release-access-testers", c.Slug, holder, fmt.Sprint(req.ReleaseID)) {
		return "", 0
	}
	return holder[:1], id
}

// ReleaseAccessTokenAs returns a short-lived token opening one release of a protected channel
// for clients that send no cookies: bound to the password for a password channel, and to the
// context's tester (or console user) for a tester-only one ("" when the channel is open, or the
// context's actor has no identity to bind it to).
func (p *Passwords) ReleaseAccessTokenAs(ctx context.Context, c *distribution.Channel, releaseID int64) string {
	if !c.TesterOnly {
		return p.ReleaseAccessToken(c, releaseID)
	}
	a, _ := distribution.ActorIn(ctx)
	holder := ""
	switch {
	case a.TesterID != 0:
		holder = "t" + strconv.FormatInt(a.TesterID, 10)
	case a.Kind == distribution.ActorUser && a.UserID != 0:
		holder = "u" + strconv.FormatInt(a.UserID, 10)
	default:
		return ""
	}
	return holder + "." + p.Signer.Token("release-access-testers", accessTTL, c.Slug, holder, fmt.Sprint(releaseID))
}

// ChannelCookie returns the value of the password cookie for a protected channel, and its lifetime.
func (p *Passwords) ChannelCookie(c *distribution.Channel) (string, time.Duration) {
	return p.Signer.Token("channel-cookie", cookieTTL, c.Slug, *c.PasswordHash), cookieTTL
}

// ReleaseAccessToken returns a short-lived token opening one release of a protected channel, for
// links followed without cookies (iOS fetches the install manifest and package by itself).
func (p *Passwords) ReleaseAccessToken(c *distribution.Channel, releaseID int64) string {
	if !c.HasPassword() || c.TesterOnly {
		return ""
	}
	return p.Signer.Token("release-access", accessTTL, c.Slug, *c.PasswordHash, fmt.Sprint(releaseID))
}
