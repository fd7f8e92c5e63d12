// Package lifecycle ends what is no longer wanted: builds past their channel's retention rules
// (Retention) and objects no row owns any more (Collector). Both run as background components on
// every replica; row locks keep two replicas from doing one piece of work twice.
package lifecycle

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// RetentionConfig holds the replica's defaults (SLIPWAY_RETENTION_*) and how often it enforces.
type RetentionConfig struct {
	Defaults distribution.RetentionRules
	// Interval between enforcement runs; 0 disables enforcement on this replica.
	Interval time.Duration
}

// RetentionStore reads and writes retention policies and applies them.
type RetentionStore interface {
	// RetentionPolicy returns the policy of a scheme (schemeID) or a channel (channelID).
	RetentionPolicy(ctx context.Context, schemeID, channelID int64) (*distribution.RetentionPolicy, error)
	SetRetentionPolicy(ctx context.Context, schemeID, channelID int64, p *distribution.RetentionPolicy) error
	RetentionState(ctx context.Context, channelID int64) (*distribution.RetentionState, error)
	// ApplyRetention locks the channel (skipping it, skipped true, when another replica holds it),
	// reads its state, deletes the releases decide returns with their events, and records their
	// objects as deleted, in one transaction. It returns the deleted victims and object keys.
	ApplyRetention(ctx context.Context, channelID int64, decide func(*distribution.RetentionState) []distribution.RetentionVictim, emit distribution.EventFunc) (deleted []distribution.RetentionVictim, keys []string, skipped bool, err error)
	// RetentionChannels lists the ids of channels that have releases.
	RetentionChannels(ctx context.Context) ([]int64, error)
	// GetScheme reads a scheme (a scheme's policy needs one).
	GetScheme(ctx context.Context, id int64) (*distribution.Scheme, error)
	// ChannelContextByID reads a channel with its app (the audit row names both).
	ChannelContextByID(ctx context.Context, id int64) (*distribution.ChannelContext, error)
}

// Retention runs the use cases of retention policies (read, set, plan) and enforces them. It is
// also a background component: Run enforces every Config.Interval.
type Retention struct {
	Store  RetentionStore
	Config RetentionConfig
	// Effects are what a deletion sets off: the read cache drops the channel's views, the deleted
	// releases' objects are deleted after the commit, and their release.deleted events are made
	// and sent.
	Effects distribution.Effects
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// Audit records policy changes as the context's actor (deletions are recorded by the store,
	// in their transaction, as the system's "retention").
	Audit *distribution.AuditLog
	// Policy decides who may read and set policies (enforcement is the system's).
	Policy *policy.Policy
}

// schemeFor reads a scheme and checks the context's actor may take act on its app.
func (r *Retention) schemeFor(ctx context.Context, act policy.Action, id int64) (*distribution.Scheme, error) {
	sc, err := r.Store.GetScheme(ctx, id)
	if err != nil {
		return nil, err
	}
	return sc, r.Policy.Authorize(ctx, act, policy.OnApp(sc.AppID))
}

// channelFor reads a channel and checks the context's actor may take act on its app.
func (r *Retention) channelFor(ctx context.Context, act policy.Action, id int64) (*distribution.ChannelContext, error) {
	cc, err := r.Store.ChannelContextByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return cc, r.Policy.Authorize(ctx, act, policy.OnApp(cc.App.ID))
}

// Effective combines a channel's policy with its scheme's and the defaults.
func EffectiveRetention(scheme, channel distribution.RetentionPolicy, defaults distribution.RetentionRules) distribution.RetentionRules {
	pick := func(c, s *int, d int) int {
		if c != nil {
			return *c
		}
		if s != nil {
			return *s
		}
		return d
	}
	r := distribution.RetentionRules{
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

// PlanRetention returns the releases the rules delete, oldest last as given (newest first). Each
// app's newest release in the channel (by bundle id) and pinned releases are never deleted:
// testers and the update check always find the current build, and a build of another app
// uploaded to the channel never pushes out the channel's own. keep_builds keeps each
// app's newest N. Size is counted newest first over the releases that survive the other rules,
// pinned ones included.
func PlanRetention(rules distribution.RetentionRules, releases []distribution.RetentionCandidate, now time.Time) []distribution.RetentionVictim {
	if rules.Off() || len(releases) < 2 {
		return nil
	}
	rels := append([]distribution.RetentionCandidate(nil), releases...)
	sort.SliceStable(rels, func(i, j int) bool { return rels[i].Version > rels[j].Version })
	var victims []distribution.RetentionVictim
	var kept int64
	newer := map[string]int{} // how many newer releases of its app came before
	for _, r := range rels {
		i := newer[r.BundleID]
		newer[r.BundleID]++
		reason := ""
		switch {
		case i == 0 || r.Pinned:
		case rules.KeepBuilds > 0 && i >= rules.KeepBuilds:
			reason = distribution.ReasonKeepBuilds
		case rules.MaxAgeDays > 0 && r.CreatedAt.Before(now.AddDate(0, 0, -rules.MaxAgeDays)):
			reason = distribution.ReasonMaxAge
		case rules.ExpiredProfileDays > 0 && r.Platform == "ios" && r.ProfileExpiresAt != nil &&
			r.ProfileExpiresAt.Before(now.AddDate(0, 0, -rules.ExpiredProfileDays)):
			reason = distribution.ReasonExpiredProfile
		case rules.MaxBytes > 0 && kept+r.Size > rules.MaxBytes:
			reason = distribution.ReasonMaxBytes
		}
		if reason != "" {
			victims = append(victims, distribution.RetentionVictim{RetentionCandidate: r, Reason: reason})
			continue
		}
		kept += r.Size
	}
	return victims
}

// checkPolicy refuses negative values.
func checkPolicy(p *distribution.RetentionPolicy) error {
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
func (r *Retention) SchemeRetention(ctx context.Context, schemeID int64) (*distribution.RetentionPolicy, error) {
	if _, err := r.schemeFor(ctx, policy.ReadCatalog, schemeID); err != nil {
		return nil, err
	}
	return r.Store.RetentionPolicy(ctx, schemeID, 0)
}

// ChannelRetention returns a channel's own policy and its effective rules.
func (r *Retention) ChannelRetention(ctx context.Context, channelID int64) (*distribution.RetentionPolicy, distribution.RetentionRules, error) {
	if _, err := r.channelFor(ctx, policy.ReadCatalog, channelID); err != nil {
		return nil, distribution.RetentionRules{}, err
	}
	st, err := r.Store.RetentionState(ctx, channelID)
	if err != nil {
		return nil, distribution.RetentionRules{}, err
	}
	return &st.Channel, EffectiveRetention(st.Scheme, st.Channel, r.Config.Defaults), nil
}

// SetSchemeRetention replaces a scheme's policy.
func (r *Retention) SetSchemeRetention(ctx context.Context, schemeID int64, p *distribution.RetentionPolicy) error {
	if err := checkPolicy(p); err != nil {
		return err
	}
	sc, err := r.schemeFor(ctx, policy.ManageApp, schemeID)
	if err != nil {
		return err
	}
	defer r.Effects.Changed(distribution.Change{SchemeID: schemeID})
	if err := r.Store.SetRetentionPolicy(ctx, schemeID, 0, p); err != nil {
		return err
	}
	r.Audit.Record(ctx, "retention.set", distribution.AuditTarget{Kind: distribution.TargetScheme, ID: sc.ID, AppID: sc.AppID, Name: "scheme " + sc.Name},
		map[string]any{"policy": policyDetail(p)})
	return nil
}

// policyDetail is a policy as the audit row shows it (null: inherited).
func policyDetail(p *distribution.RetentionPolicy) map[string]any {
	return map[string]any{"keep_builds": p.KeepBuilds, "max_age_days": p.MaxAgeDays, "max_bytes": p.MaxBytes, "expired_profile_days": p.ExpiredProfileDays}
}

// SetChannelRetention replaces a channel's policy.
func (r *Retention) SetChannelRetention(ctx context.Context, channelID int64, p *distribution.RetentionPolicy) error {
	if err := checkPolicy(p); err != nil {
		return err
	}
	cc, err := r.channelFor(ctx, policy.ManageApp, channelID)
	if err != nil {
		return err
	}
	defer r.Effects.Changed(distribution.Change{ChannelID: channelID})
	if err := r.Store.SetRetentionPolicy(ctx, 0, channelID, p); err != nil {
		return err
	}
	r.Audit.Record(ctx, "retention.set", distribution.ChannelTarget(cc), map[string]any{"policy": policyDetail(p)})
	return nil
}

// RetentionPlan is what retention would delete in a channel now.
type RetentionPlan struct {
	ChannelID int64
	// Policy is the channel's own policy the plan was made with (the proposed one, when given).
	Policy  distribution.RetentionPolicy
	Rules   distribution.RetentionRules
	Victims []distribution.RetentionVictim
}

// PlanChannelRetention shows what the channel's policy deletes now, or, with proposed non-nil,
// what it would delete with proposed as the channel's own policy. Enforcement runs the same rules
// on the same state, so it deletes exactly this while nothing is uploaded or pinned in between.
func (r *Retention) PlanChannelRetention(ctx context.Context, channelID int64, proposed *distribution.RetentionPolicy) (*RetentionPlan, error) {
	if proposed != nil {
		if err := checkPolicy(proposed); err != nil {
			return nil, err
		}
	}
	if _, err := r.channelFor(ctx, policy.ReadCatalog, channelID); err != nil {
		return nil, err
	}
	return r.planChannel(ctx, channelID, proposed)
}

// planChannel is PlanChannelRetention for a caller that was let in.
func (r *Retention) planChannel(ctx context.Context, channelID int64, proposed *distribution.RetentionPolicy) (*RetentionPlan, error) {
	if proposed != nil {
		if err := checkPolicy(proposed); err != nil {
			return nil, err
		}
	}
	st, err := r.Store.RetentionState(ctx, channelID)
	if err != nil {
		return nil, err
	}
	if proposed != nil {
		st.Channel = *proposed
	}
	rules := EffectiveRetention(st.Scheme, st.Channel, r.Config.Defaults)
	return &RetentionPlan{ChannelID: channelID, Policy: st.Channel, Rules: rules, Victims: PlanRetention(rules, st.Releases, time.Now())}, nil
}

// PlanAllRetention shows what retention deletes now in every channel with releases (the plans
// that delete something).
func (r *Retention) PlanAllRetention(ctx context.Context) ([]RetentionPlan, error) {
	if err := r.Policy.Authorize(ctx, policy.ReadCatalog, policy.Installation); err != nil {
		return nil, err
	}
	ids, err := r.Store.RetentionChannels(ctx)
	if err != nil {
		return nil, err
	}
	var plans []RetentionPlan
	for _, id := range ids {
		p, err := r.planChannel(ctx, id, nil)
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
func (r *Retention) EnforceRetention(ctx context.Context) (int, error) {
	ids, err := r.Store.RetentionChannels(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
		now := time.Now()
		deleted, keys, _, err := r.Store.ApplyRetention(ctx, id, func(st *distribution.RetentionState) []distribution.RetentionVictim {
			return PlanRetention(EffectiveRetention(st.Scheme, st.Channel, r.Config.Defaults), st.Releases, now)
		}, r.Effects.ReleaseEvents(webhook.EventReleaseDeleted))
		if errs.KindOf(err) == errs.NotFound {
			continue
		}
		if err != nil {
			return total, err
		}
		if len(deleted) == 0 {
			continue
		}
		r.Effects.Changed(distribution.Change{ChannelID: id})
		for _, v := range deleted {
			r.Log.InfoContext(ctx, "retention deleted a release", slog.Int64("channel_id", id), slog.Int64("release_id", v.ID),
				slog.Int("version", v.Version), slog.String("reason", v.Reason), slog.Int64("size", v.Size))
			if r.Metrics != nil {
				r.Metrics.RetentionDeleted.WithLabelValues(v.Reason).Inc()
				r.Metrics.RetentionDeletedBytes.Add(float64(v.Size))
			}
		}
		r.Effects.Deleted(ctx)(keys, nil)
		total += len(deleted)
	}
	return total, nil
}

// Run enforces retention every Config.Interval until ctx ends (with an interval of 0 it returns at
// once: this replica does not enforce), and returns nil. A stop never leaves a channel half done:
// each channel's deletions are one transaction, which a stop either lets commit (and then the
// deleted releases' objects are deleted before Run returns, bounded by 30 seconds, or left
// recorded for the collector) or rolls back; channels not reached wait for the next run.
func (r *Retention) Run(ctx context.Context) error {
	if r.Config.Interval <= 0 {
		return nil
	}
	tick := time.NewTicker(r.Config.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if _, err := r.EnforceRetention(ctx); err != nil && ctx.Err() == nil {
			r.Log.WarnContext(ctx, "retention run failed; the next run retries", slog.String("error", err.Error()))
		}
	}
}
