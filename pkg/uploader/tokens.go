package uploader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Token is an API token as the server lists it; Secret is set only in the answer that created it.
type Token struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Scope      string  `json:"scope"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
	// AppIDs and Abilities are the token's limits (empty: none).
	AppIDs    []int64  `json:"app_ids"`
	Abilities []string `json:"abilities"`
	Secret    string   `json:"token"`
}

// CreateToken creates a token (POST /api/tokens, admin) and returns it with its secret, which
// the server shows only this once.
func (c *Client) CreateToken(ctx context.Context, name, scope string) (*Token, error) {
	return c.CreateLimitedToken(ctx, name, scope, nil, nil)
}

// CreateLimitedToken is CreateToken for a token limited to apps (by id or name) and abilities
// (none: no limit).
func (c *Client) CreateLimitedToken(ctx context.Context, name, scope string, apps, abilities []string) (*Token, error) {
	var t Token
	in := map[string]any{"name": name, "scope": scope}
	if len(apps) > 0 {
		in["apps"] = apps
	}
	if len(abilities) > 0 {
		in["abilities"] = abilities
	}
	if err := c.doJSON(ctx, http.MethodPost, "/api/tokens", in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListTokens lists every token (GET /api/tokens, admin), never their secrets.
func (c *Client) ListTokens(ctx context.Context) ([]Token, error) {
	var toks []Token
	return toks, c.doJSON(ctx, http.MethodGet, "/api/tokens", nil, &toks)
}

// RevokeToken revokes a token by id (DELETE /api/tokens/:id, admin).
func (c *Client) RevokeToken(ctx context.Context, id int64) error {
	return c.doJSON(ctx, http.MethodDelete, "/api/tokens/"+url.PathEscape(strconv.FormatInt(id, 10)), nil, nil)
}

// doJSON sends a JSON request to the API and decodes a 2xx answer into out (when not nil). A
// non-2xx answer is an *APIError; no error holds the token.
func (c *Client) doJSON(ctx context.Context, method, apiPath string, in, out any) (err error) {
	defer func() {
		if err != nil {
			err = redactErr(err, []string{c.Token})
		}
	}()
	endpoint, err := c.endpoint(apiPath)
	if err != nil {
		return err
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, endpoint, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", or(c.UserAgent, "slipway-uploader"))
	if c.Token != "" {
		req.Header.Set("Authorization", "Token "+c.Token)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("%s %s failed: %w", method, endpoint, unwrapURLError(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("reading the server's answer (status %d): %w", resp.StatusCode, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return apiError(resp, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the server's answer is not the JSON expected (is the URL a Slipway server?): %s", summarize(raw))
	}
	return nil
}

// RetentionPlan is what retention deletes in a channel, as the server plans it.
type RetentionPlan struct {
	ChannelID int64             `json:"channel_id"`
	Releases  []RetentionVictim `json:"releases"`
	Bytes     int64             `json:"bytes"`
}

// RetentionVictim is a release a plan deletes, and why.
type RetentionVictim struct {
	ReleaseID int64  `json:"release_id"`
	Version   int    `json:"version"`
	CreatedAt string `json:"created_at"`
	Size      int64  `json:"size"`
	Reason    string `json:"reason"`
}

// RetentionPlans asks what retention deletes now (GET /api/retention/plan), or in one channel
// (GET /api/channels/:id/retention/plan) when channelID is not 0. Nothing is deleted.
func (c *Client) RetentionPlans(ctx context.Context, channelID int64) ([]RetentionPlan, error) {
	if channelID != 0 {
		var p RetentionPlan
		err := c.doJSON(ctx, http.MethodGet, "/api/channels/"+strconv.FormatInt(channelID, 10)+"/retention/plan", nil, &p)
		return []RetentionPlan{p}, err
	}
	var plans []RetentionPlan
	return plans, c.doJSON(ctx, http.MethodGet, "/api/retention/plan", nil, &plans)
}

// ReleaseDiff is GET /api/releases/:id/diff: what changed since the release before it in its
// channel, as summary lines and as a Markdown report.
type ReleaseDiff struct {
	Against struct {
		ID int64 `json:"id"`
	} `json:"against"`
	Summary  []string `json:"summary"`
	Markdown string   `json:"markdown"`
}

// ReleaseDiff asks what changed in release id since the release before it in its channel. A
// channel's first release is an *APIError with status 422.
func (c *Client) ReleaseDiff(ctx context.Context, id int64) (*ReleaseDiff, error) {
	var d ReleaseDiff
	return &d, c.doJSON(ctx, http.MethodGet, "/api/releases/"+strconv.FormatInt(id, 10)+"/diff", nil, &d)
}

// Distribution names who a release goes to: testers by email and tester groups by alias.
// NoNotify records it and mails nobody.
type Distribution struct {
	Testers  []string
	Groups   []string
	NoNotify bool
}

// Distribute gives release id to more testers (POST /api/releases/:id/distribute) and answers how
// many it went to and how many were mailed (testers it already reached are not counted again).
// A busy server and a broken connection are retried like an upload: the server never mails a
// tester twice for one release, so a repeated call changes nothing (it only counts less).
func (c *Client) Distribute(ctx context.Context, id int64, d Distribution) (*Distributed, error) {
	in := map[string]any{"testers": nonNil(d.Testers), "groups": nonNil(d.Groups), "notify": !d.NoNotify}
	var out Distributed
	err := c.retry(ctx, true, func() error {
		return c.doJSON(ctx, http.MethodPost, "/api/releases/"+strconv.FormatInt(id, 10)+"/distribute", in, &out)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// nonNil makes a nil list an empty JSON array.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
