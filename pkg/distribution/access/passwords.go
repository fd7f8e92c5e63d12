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

// PasswordGuard counts wrong channel passwords per client, shared by all replicas.
type PasswordGuard interface {
	PasswordFailures(ctx context.Context, channelID int64, client string, window time.Duration) (int, time.Time, error)
	RecordPasswordFailure(ctx context.Context, channelID int64, client string, window time.Duration) error
	ClearPasswordFailures(ctx context.Context, channelID int64, client string) error
}

// Passwords lets requests into password-protected channels: the password itself (with wrong
// guesses slowed down across replicas), or the signed cookie and release tokens given for it.
type Passwords struct {
	Guard  PasswordGuard
	Signer *signing.Signer
}

// freePasswordAttempts is how many wrong passwords a client may give for a channel before each
// further attempt must wait, doubling from one second (shared by all replicas through Postgres).
const freePasswordAttempts = 5

// passwordFailureWindow is how long wrong channel passwords are remembered per client.
const passwordFailureWindow = 15 * time.Minute

// CheckChannelPassword verifies a channel password given by client (an IP address). Wrong
// passwords are counted; past freePasswordAttempts, attempts that come too soon are refused with
// errs.TooManyRequests before the password is even compared.
func (p *Passwords) CheckChannelPassword(ctx context.Context, c *distribution.Channel, password, client string) error {
	if !c.HasPassword() {
		return nil
	}
	n, last, err := p.Guard.PasswordFailures(ctx, c.ID, client, passwordFailureWindow)
	if err != nil {
		return err
	}
	if n >= freePasswordAttempts {
		wait := time.Duration(math.Min(math.Pow(2, float64(n-freePasswordAttempts)), passwordFailureWindow.Seconds())) * time.Second
		if left := time.Until(last.Add(wait)); left > 0 {
			secs, unit := int(math.Ceil(left.Seconds())), "seconds"
			if secs == 1 {
				unit = "second"
			}
			e := errs.New(errs.TooManyRequests, "too many wrong passwords; try again in %d %s", secs, unit)
			e.RetryAfter = left
			return e
		}
	}
	if password == "" {
		return errs.New(errs.Unauthenticated, "this channel is password protected: give its password")
	}
	if bcrypt.CompareHashAndPassword([]byte(*c.PasswordHash), []byte(password)) != nil {
		if err := p.Guard.RecordPasswordFailure(ctx, c.ID, client, passwordFailureWindow); err != nil {
			return err
		}
		return errs.New(errs.Forbidden, "wrong password for this channel")
	}
	if n > 0 {
		return p.Guard.ClearPasswordFailures(ctx, c.ID, client)
	}
	return nil
}

// PasswordCookieName names the cookie that proves a browser gave a channel's password.
func PasswordCookieName(slug string) string { return fmt.Sprintf("slipway_ch_%s", slug) }

// AccessRequest is what a request offers to open a password-protected channel.
type AccessRequest struct {
	Cookie    string // value of the channel's password cookie
	Token     string // an install/download token (the "access" query parameter)
	Password  string // the "password" parameter, for API clients
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
