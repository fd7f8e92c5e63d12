package distribution

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// RetentionPolicy is a scheme's or channel's retention settings. A nil field inherits (channel →
// scheme → the replica's defaults); 0 turns the rule off.
type RetentionPolicy struct {
	// KeepBuilds keeps the newest N builds of each channel (a scheme's is Zealot's retained_builds).
	KeepBuilds *int
	// MaxAgeDays deletes builds older than this many days.
	MaxAgeDays *int
	// MaxBytes deletes the oldest builds while the channel's packages total more.
	MaxBytes *int64
	// ExpiredProfileDays deletes iOS builds whose provisioning profile expired this many days ago.
	ExpiredProfileDays *int
}

// RetentionRules are a channel's effective rules; 0 is off.
type RetentionRules struct {
	KeepBuilds         int   `json:"keep_builds"`
	MaxAgeDays         int   `json:"max_age_days"`
	MaxBytes           int64 `json:"max_bytes"`
	ExpiredProfileDays int   `json:"expired_profile_days"`
}

// Off reports whether no rule applies.
func (r RetentionRules) Off() bool { return r == RetentionRules{} }

// RetentionConfig holds the replica's defaults (SLIPWAY_RETENTION_*) and how often it enforces.
type RetentionConfig struct {
	Defaults RetentionRules
	// Interval between enforcement runs; 0 disables enforcement on this replica.
	Interval time.Duration
}

// RetentionCandidate is what the rules look at of a release.
type RetentionCandidate struct {
	ID               int64
	Version          int
	Platform         string
	CreatedAt        time.Time
	Size             int64
	Pinned           bool
	ProfileExpiresAt *time.Time
}

// RetentionVictim is a release the rules delete, and the first rule that chose it.
type RetentionVictim struct {
	RetentionCandidate
	Reason string
}

// Retention reasons.
const (
	ReasonKeepBuilds     = "keep_builds"
	ReasonMaxAge         = "max_age"
	ReasonMaxBytes       = "max_bytes"
	ReasonExpiredProfile = "expired_profile"
)

// RetentionState is a channel's policies and releases, as the store reads them.
type RetentionState struct {
	ChannelID int64
	Scheme    RetentionPolicy
	Channel   RetentionPolicy
	// Releases, newest (highest version) first.
	Releases []RetentionCandidate
}

// RetentionStore reads and writes retention policies and applies them.
type RetentionStore interface {
	// RetentionPolicy returns the policy of a scheme (schemeID) or a channel (channelID).
	RetentionPolicy(ctx context.Context, schemeID, channelID int64) (*RetentionPolicy, error)
	SetRetentionPolicy(ctx context.Context, schemeID, channelID int64, p *RetentionPolicy) error
	RetentionState(ctx context.Context, channelID int64) (*RetentionState, error)
	// ApplyRetention locks the channel (skipping it, skipped true, when another replica holds it),
	// reads its state, deletes the releases decide returns with their events, and records their
	// objects as deleted, in one transaction. It returns the deleted victims and object keys.
	ApplyRetention(ctx context.Context, channelID int64, decide func(*RetentionState) []RetentionVictim, emit EventFunc) (deleted []RetentionVictim, keys []string, skipped bool, err error)
	// RetentionChannels lists the ids of channels that have releases.
	RetentionChannels(ctx context.Context) ([]int64, error)
}

// Effective combines a channel's policy with its scheme's and the defaults.
func EffectiveRetention(scheme, channel RetentionPolicy, defaults RetentionRules) RetentionRules {
	pick := func(c, s *int, d int) int {
		if c != nil {
			return *c
		}
		if s != nil {
			return *s
		}
		return d
	}
	r := RetentionRules{
		KeepBuilds:         pick(channel.KeepBuilds, scheme.KeepBuilds, defaults.KeepBuilds),
		MaxAgeDays:         pick(channel.MaxAgeDays, scheme.MaxAgeDays, defaults.MaxAgeDays),
		ExpiredProfileDays: pick(channel.ExpiredProfileDays, scheme.ExpiredProfileDays, defaults.ExpiredProfileDays),
		MaxBytes:           defaults.MaxBytes,
	}
	if channel.MaxBytes != nil {
		r.MaxBytes = *channel.MaxBytes
	} else if scheme.MaxBytes != nil {
		r.MaxBytes = *scheme.MaxBytes
	}
	return r
}

// PlanRetention returns the releases the rules delete, oldest last as given (newest first). The
// channel's newest release and pinned releases are never deleted: testers and the update check
// always find the current build. Size is counted newest first over the releases that survive the
// other rules, pinned ones included.
func PlanRetention(rules RetentionRules, releases []RetentionCandidate, now time.Time) []RetentionVictim {
	if rules.Off() || len(releases) < 2 {
		return nil
	}
	rels := append([]RetentionCandidate(nil), releases...)
	sort.SliceStable(rels, func(i, j int) bool { return rels[i].Version > rels[j].Version })
	var victims []RetentionVictim
	var kept int64
	for i, r := range rels {
		reason := ""
		switch {
		case i == 0 || r.Pinned:
		case rules.KeepBuilds > 0 && i >= rules.KeepBuilds:
			reason = ReasonKeepBuilds
		case rules.MaxAgeDays > 0 && r.CreatedAt.Before(now.AddDate(0, 0, -rules.MaxAgeDays)):
			reason = ReasonMaxAge
		case rules.ExpiredProfileDays > 0 && r.Platform == "ios" && r.ProfileExpiresAt != nil &&
			r.ProfileExpiresAt.Before(now.AddDate(0, 0, -rules.ExpiredProfileDays)):
			reason = ReasonExpiredProfile
		case rules.MaxBytes > 0 && kept+r.Size > rules.MaxBytes:
			reason = ReasonMaxBytes
		}
		if reason != "" {
			victims = append(victims, RetentionVictim{RetentionCandidate: r, Reason: reason})
			continue
		}
		kept += r.Size
	}
	return victims
}

// checkPolicy refuses negative values.
func checkPolicy(p *RetentionPolicy) error {
	for field, v := range map[string]*int{"keep_builds": p.KeepBuilds, "max_age_days": p.MaxAgeDays, "expired_profile_days": p.ExpiredProfileDays} {
		if v != nil && (*v < 0 || *v > 1_000_000) {
			return errs.Field(field, "must be a whole number from 0 (off) to 1000000, or null to inherit")
		}
	}
	if p.MaxBytes != nil && *p.MaxBytes < 0 {
		return errs.Field("max_bytes", "must be 0 (off) or more, or null to inherit")
	}
	return nil
}

// SchemeRetention returns a scheme's policy.
func (s *Service) SchemeRetention(ctx context.Context, schemeID int64) (*RetentionPolicy, error) {
	if _, err := s.Store.GetScheme(ctx, schemeID); err != nil {
		return nil, err
	}
	return s.Store.RetentionPolicy(ctx, schemeID, 0)
}

// ChannelRetention returns a channel's own policy and its effective rules.
func (s *Service) ChannelRetention(ctx context.Context, channelID int64) (*RetentionPolicy, RetentionRules, error) {
	st, err := s.Store.RetentionState(ctx, channelID)
	if err != nil {
		return nil, RetentionRules{}, err
	}
	return &st.Channel, EffectiveRetention(st.Scheme, st.Channel, s.Retention.Defaults), nil
}

// SetSchemeRetention replaces a scheme's policy.
func (s *Service) SetSchemeRetention(ctx context.Context, schemeID int64, p *RetentionPolicy) error {
	if err := checkPolicy(p); err != nil {
		return err
	}
	if _, err := s.Store.GetScheme(ctx, schemeID); err != nil {
		return err
	}
	defer s.changed(Change{SchemeID: schemeID})
	return s.Store.SetRetentionPolicy(ctx, schemeID, 0, p)
}

// SetChannelRetention replaces a channel's policy.
func (s *Service) SetChannelRetention(ctx context.Context, channelID int64, p *RetentionPolicy) error {
	if err := checkPolicy(p); err != nil {
		return err
	}
	defer s.changed(Change{ChannelID: channelID})
	return s.Store.SetRetentionPolicy(ctx, 0, channelID, p)
}

// RetentionPlan is what retention would delete in a channel now.
type RetentionPlan struct {
	ChannelID int64
	// Policy is the channel's own policy the plan was made with (the proposed one, when given).
	Policy  RetentionPolicy
	Rules   RetentionRules
	Victims []RetentionVictim
}

// PlanChannelRetention shows what the channel's policy deletes now, or, with proposed non-nil,
// what it would delete with proposed as the channel's own policy. Enforcement runs the same rules
// on the same state, so it deletes exactly this while nothing is uploaded or pinned in between.
func (s *Service) PlanChannelRetention(ctx context.Context, channelID int64, proposed *RetentionPolicy) (*RetentionPlan, error) {
	if proposed != nil {
		if err := checkPolicy(proposed); err != nil {
			return nil, err
		}
	}
	st, err := s.Store.RetentionState(ctx, channelID)
	if err != nil {
		return nil, err
	}
	if proposed != nil {
		st.Channel = *proposed
	}
	rules := EffectiveRetention(st.Scheme, st.Channel, s.Retention.Defaults)
	return &RetentionPlan{ChannelID: channelID, Policy: st.Channel, Rules: rules, Victims: PlanRetention(rules, st.Releases, time.Now())}, nil
}

// PlanAllRetention shows what retention deletes now in every channel with releases (the plans
// that delete something).
func (s *Service) PlanAllRetention(ctx context.Context) ([]RetentionPlan, error) {
	ids, err := s.Store.RetentionChannels(ctx)
	if err != nil {
		return nil, err
	}
	var plans []RetentionPlan
	for _, id := range ids {
		p, err := s.PlanChannelRetention(ctx, id, nil)
		if errs.KindOf(err) == errs.NotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(p.Victims) > 0 {
			plans = append(plans, *p)
		}
	}
	return plans, nil
}

// EnforceRetention applies every channel's rules once: channels locked by another replica are
// skipped (that replica is doing them). It returns how many releases it deleted.
func (s *Service) EnforceRetention(ctx context.Context) (int, error) {
	ids, err := s.Store.RetentionChannels(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
		now := time.Now()
		deleted, keys, _, err := s.Store.ApplyRetention(ctx, id, func(st *RetentionState) []RetentionVictim {
			return PlanRetention(EffectiveRetention(st.Scheme, st.Channel, s.Retention.Defaults), st.Releases, now)
		}, s.releaseEvents(webhook.EventReleaseDeleted, 0))
		if errs.KindOf(err) == errs.NotFound {
			continue
		}
		if err != nil {
			return total, err
		}
		if len(deleted) == 0 {
			continue
		}
		s.changed(Change{ChannelID: id})
		for _, v := range deleted {
			s.Log.InfoContext(ctx, "retention deleted a release", slog.Int64("channel_id", id), slog.Int64("release_id", v.ID),
				slog.Int("version", v.Version), slog.String("reason", v.Reason), slog.Int64("size", v.Size))
			if s.Metrics != nil {
				s.Metrics.RetentionDeleted.WithLabelValues(v.Reason).Inc()
				s.Metrics.RetentionDeletedBytes.Add(float64(v.Size))
			}
		}
		s.deleteObjects(context.WithoutCancel(ctx), keys)
		total += len(deleted)
	}
	return total, nil
}

// RunRetention enforces retention every Retention.Interval until ctx ends.
func (s *Service) RunRetention(ctx context.Context) {
	if s.Retention.Interval <= 0 {
		return
	}
	tick := time.NewTicker(s.Retention.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := s.EnforceRetention(ctx); err != nil && ctx.Err() == nil {
			s.Log.WarnContext(ctx, "retention run failed; the next run retries", slog.String("error", err.Error()))
		}
	}
}
