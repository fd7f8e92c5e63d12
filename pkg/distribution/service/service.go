// Package service wires the domain's parts together: the one place that builds each part from the
// database, object storage and configuration, handing it only the store interface and settings it
// uses. The HTTP layer (httpapi, web), the commands and the tests reach every use case through the
// parts named here: svc.Apps.CreateApp, svc.Logins.SignIn, svc.Retention.EnforceRetention...
// The background components among them (Sender, Counter, Retention, Collector, Watcher) are
// started and stopped by serve (cmd/slipway/serve.go); nothing here starts a goroutine.
package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/devices"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
	"github.com/slipwayhq/slipway/pkg/distribution/feedback"
	"github.com/slipwayhq/slipway/pkg/distribution/lifecycle"
	"github.com/slipwayhq/slipway/pkg/distribution/mailer"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/distribution/testers"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/mail"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/problem"
	"github.com/slipwayhq/slipway/pkg/screenshot"
	"github.com/slipwayhq/slipway/pkg/signing"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Store is everything the parts ask of the database together: the union of the interfaces each
// part declares. pkg/postgres implements it on Postgres.
type Store interface {
	Ping(ctx context.Context) error
	// Writable reports whether the database accepts writes (a standby answers Ping but not this).
	Writable(ctx context.Context) error
	catalog.AppStore
	catalog.ReleaseStore
	uploads.Ledger
	uploads.BuildStore
	uploads.SessionStore
	uploads.DebugFileStore
	uploads.InsightsStore
	uploads.ChecksumStore
	access.TokenStore
	access.LoginStore
	access.FormStore
	access.PeopleStore
	access.ColleagueStore
	access.PasswordGuard
	events.WebhookStore
	events.OutboxStore
	events.DownloadStore
	mailer.Store
	lifecycle.RetentionStore
	lifecycle.CollectorStore
	lifecycle.ReconcileStore
	devices.DeviceStore
	readcache.ViewStore
	readcache.ChangeFeed
	testers.Store
	testers.MailingStore
	feedback.Store
}

// Service is the domain, part by part.
type Service struct {
	// The catalogue: apps, schemes and channels; releases and the update-check reads.
	Apps     *catalog.Apps
	Releases *catalog.Releases
	// Uploads: objects and their ledger, builds parsed into releases, sessions, debug files.
	Objects    *uploads.Objects
	Builds     *uploads.Builds
	Sessions   *uploads.Sessions
	DebugFiles *uploads.DebugFiles
	// Insights: each release's snapshot and the diff of two releases.
	Insights *uploads.Insights
	// Verifier computes the checksums of releases recorded unverified (resumable sessions).
	Verifier *uploads.Verifier
	// Access: API tokens, console sign-in, users and members, channel passwords.
	Tokens *access.Tokens
	Logins *access.Logins
	People *access.People
	// Colleagues invites people to the console and signs in those who came by invitation.
	Colleagues *access.Colleagues
	// Feedback takes testers' reports on builds, with their screenshots.
	Feedback  *feedback.Reports
	Passwords *access.Passwords
	// Forms makes each console form act once (its single-use token).
	Forms *access.Forms
	// Events: the events writes record, webhooks, their delivery, download counts.
	Events    *events.Maker
	Webhooks  *events.Webhooks
	Sender    *events.Sender
	Downloads *events.Counter
	// Mailer sends the mail outbox through the SMTP relay; MailOn says whether one is configured
	// (SLIPWAY_SMTP_URL): without it mail waits in the outbox, nothing is sent, and the pages say
	// that mail is off. Mailer is never nil (its Run returns at once when mail is off).
	Mailer *mailer.Sender
	MailOn bool
	// Lifecycle: retention and the collector; the reconciler (`slipway gc --reconcile`).
	Retention  *lifecycle.Retention
	Collector  *lifecycle.Collector
	Reconciler *lifecycle.Reconciler
	// Testers: groups, distribution to testers, tester sign-in, who installed what; the daily
	// digests of those who chose them.
	Testers  *testers.Testers
	Mailings *testers.Mailings
	// Devices and the UDID profile service.
	Devices *devices.Devices
	// The read cache and the component that keeps it in step with other replicas.
	Reads   *readcache.Cache
	Watcher *readcache.Watcher
	// Audit writes the audit trail every actor shares (AuditLog.Record).
	Audit *distribution.AuditLog
	// Policy decides who may do what: every part above asks it, and the pages ask it what to
	// show.
	Policy *policy.Policy

	// Parses is the replica's parse-memory budget (appinfo.Budget), shared by every parse.
	Parses *appinfo.Budget

	// Signer signs password cookies, download and part URLs, and the profile service's
	// challenges; Log is the logger the parts were given.
	Signer *signing.Signer
	Log    *slog.Logger

	db      Store
	storage blob.Backend
}

// New builds the parts on one database and one object store, with the configuration. It starts
// nothing: serve runs the background components.
func New(cfg *config.Config, db Store, st blob.Backend, m *metrics.Metrics, log *slog.Logger) *Service {
	signer := signing.New(cfg.Secret, cfg.SecretPrevious...)
	s := &Service{Signer: signer, Log: log, db: db, storage: st}

	// Parts that others set off after their writes.
	s.Reads = readcache.New(readcache.Config{MaxBytes: cfg.ReadCacheBytes, TTL: cfg.ReadCacheTTL}, db, m)
	s.Watcher = &readcache.Watcher{Cache: s.Reads, Feed: db}
	s.Events = &events.Maker{Links: links.Links{Base: cfg.PublicURL}}
	client := webhook.NewClient(cfg.WebhookAllowPrivate, cfg.WebhookTimeout)
	s.Sender = events.NewSender(db, client, events.SenderConfig{RetryBase: cfg.WebhookRetryBase,
		MaxAttempts: cfg.WebhookMaxAttempts, Poll: cfg.WebhookPoll, Timeout: cfg.WebhookTimeout}, m, log)
	s.Mailer = newMailer(cfg, db, m, log)
	s.Mailer.Objects = st
	s.MailOn = s.Mailer.On()
	s.Objects = &uploads.Objects{Ledger: db, Storage: st, Signer: signer, MaxUploadBytes: cfg.MaxUploadBytes,
		Downloads: uploads.DownloadConfig{PublicURL: cfg.PublicURL, CDNURL: cfg.CDNURL, TTL: cfg.PresignTTL}, Metrics: m, Log: log}
	effects := distribution.Effects{Cache: s.Reads, Webhooks: s.Sender, Mail: s.Mailer, Objects: s.Objects, Events: s.Events}
	audit := &distribution.AuditLog{Store: db, Log: log}
	s.Audit = audit
	pol := &policy.Policy{Members: db, Testers: db}
	s.Policy = pol

	s.Apps = &catalog.Apps{Store: db, Effects: effects, Audit: audit, Policy: pol}
	s.Releases = &catalog.Releases{Store: db, Effects: effects, Audit: audit, Policy: pol}
	// One parse-memory budget for the replica: uploads, sessions, snapshots and the verifier.
	s.Parses = appinfo.NewBudget(cfg.ParseBudget())
	if m != nil {
		m.WatchParseBudget(s.Parses.Total, s.Parses.Held, s.Parses.Waiting)
	}
	s.Insights = &uploads.Insights{Store: db, Objects: s.Objects, Metrics: m, Policy: pol, Parses: s.Parses}
	s.Verifier = uploads.NewVerifier(db, st, effects, time.Minute, log)
	s.Verifier.SparkleKey = cfg.SparkleKey
	s.Verifier.Parses = s.Parses
	s.Verifier.Audit = audit
	s.Releases.Signer = s.Verifier
	s.Builds = &uploads.Builds{Store: db, Channels: s.Apps, Objects: s.Objects, Effects: effects, Metrics: m, Audit: audit, Verifier: s.Verifier, Policy: pol,
		Parses: s.Parses}
	s.DebugFiles = &uploads.DebugFiles{Store: db, Channels: s.Apps, Objects: s.Objects, Events: s.Events, Webhooks: s.Sender, Metrics: m, Audit: audit, Policy: pol}
	s.Sessions = &uploads.Sessions{Store: db, Storage: st, Channels: s.Apps, Objects: s.Objects, Builds: s.Builds, Debug: s.DebugFiles,
		Signer: signer, Log: log, Metrics: m, Policy: pol, Config: uploads.SessionConfig{TTL: cfg.UploadSessionTTL,
			MaxUploadBytes: cfg.MaxUploadBytes, PublicURL: cfg.PublicURL, URLTTL: cfg.PresignTTL,
			MaxOpenPerToken: cfg.UploadSessionsPerToken}}
	s.Tokens = &access.Tokens{Store: db, Policy: pol}
	s.Logins = &access.Logins{Store: db}
	s.People = &access.People{Store: db, Log: log, AuditLog: audit, Policy: pol}
	s.Passwords = &access.Passwords{Guard: db, Signer: signer, Policy: pol}
	s.Forms = &access.Forms{Store: db}
	s.Webhooks = &events.Webhooks{Store: db, Client: client, AllowPrivate: cfg.WebhookAllowPrivate, Audit: audit, Names: s.Apps, Policy: pol}
	s.Downloads = events.NewCounter(db, s.Events, cfg.DownloadFlushInterval, m, log)
	s.Retention = &lifecycle.Retention{Store: db, Effects: effects, Metrics: m, Log: log, Audit: audit, Policy: pol,
		Config: lifecycle.RetentionConfig{Interval: cfg.RetentionInterval, Defaults: distribution.RetentionRules{
			KeepBuilds: cfg.RetentionKeepBuilds, MaxAgeDays: cfg.RetentionMaxAgeDays, MaxBytes: cfg.RetentionMaxBytes,
			ExpiredProfileDays: cfg.RetentionExpiredProfileDays}}}
	s.Collector = &lifecycle.Collector{Store: db, Storage: st, Interval: cfg.GCInterval, Grace: cfg.GCGrace, Metrics: m, Log: log, Audit: audit}
	s.Reconciler = &lifecycle.Reconciler{Store: db, Storage: st, Prefixes: uploads.KeyPrefixes, LeftoverAge: cfg.UploadSessionTTL}
	s.Testers = &testers.Testers{Store: db, Releases: db, Policy: pol, Audit: audit, Signer: signer,
		Config: testers.Config{PublicURL: cfg.PublicURL, MailOn: s.MailOn, SessionTTL: cfg.TesterSessionTTL}, Events: s.Events, Webhooks: s.Sender, Mail: s.Mailer}
	s.Mailings = testers.NewMailings(s.Testers, db, 5*time.Second, 10*time.Minute, 24*time.Hour, log)
	s.Testers.Mailings = s.Mailings
	s.Apps.Access = s.Testers
	s.Builds.Testers = s.Testers
	s.Colleagues = &access.Colleagues{Store: db, Logins: s.Logins, Policy: pol, Audit: audit, PublicURL: cfg.PublicURL,
		MailOn: s.MailOn, Mail: s.Mailer}
	s.Feedback = &feedback.Reports{Store: db, Objects: s.Objects, Policy: pol, Events: s.Events,
		Mail: feedback.Composer{Links: links.Links{Base: cfg.PublicURL}}, Effects: effects,
		Clean: func(ctx context.Context, r io.Reader) (*feedback.Image, error) {
			img, err := screenshot.Sanitize(ctx, r, screenshot.DefaultLimits, s.Parses)
			if err != nil {
				return nil, err
			}
			return &feedback.Image{Data: img.Data, ContentType: img.ContentType, Width: img.Width, Height: img.Height, Thumb: img.Thumb}, nil
		}}
	s.Devices = &devices.Devices{Store: db, Signer: signer, UDID: devices.UDIDConfig{Organization: cfg.UDIDOrganization}, Audit: audit, Policy: pol}
	return s
}

// newMailer builds the mail sender on the configured relay (a sender that sends nothing when
// mail is off) and exports the outbox's counts.
func newMailer(cfg *config.Config, db Store, m *metrics.Metrics, log *slog.Logger) *mailer.Sender {
	var relay mailer.Relay
	if mc := cfg.Mail; mc.On {
		c, err := mail.New(mail.Options{Relay: mc.Relay, Password: mc.Password, From: mc.From, RootCAs: mc.RootCAs, Timeout: mc.Timeout})
		if err == nil {
			relay = c
		} else if log != nil {
			log.Error("mail is off: the SMTP client cannot be made", slog.String("error", err.Error()))
		}
	}
	sender := mailer.NewSender(db, relay, mailer.Config{Poll: cfg.Mail.Poll, RetryBase: cfg.Mail.RetryBase,
		MaxAttempts: cfg.Mail.MaxAttempts, Rate: cfg.Mail.Rate, SendTimeout: 2 * cfg.Mail.Timeout}, m, log)
	// The outbox's counts only where mail is on: without a relay nothing is meant to leave, and
	// the gauge would say mail is stuck.
	if m != nil && sender.On() {
		m.WatchMailOutbox(func(ctx context.Context) (int64, int64, error) {
			c, err := db.MailCounts(ctx)
			return c.Pending, c.Failed, err
		})
	}
	return sender
}

// DatabaseReady reports whether the database answers (Zealot's /api/health).
func (s *Service) DatabaseReady(ctx context.Context) error { return s.db.Ping(ctx) }

// DependencyCheck is the state of one dependency, for the internal readiness report.
type DependencyCheck struct {
	Name string `json:"name"`
	// State is "ok", "unavailable", or "read-only" (a database that answers but refuses writes:
	// a standby, as a demoted primary is after a failover).
	State string `json:"state"`
	// Detail is the client-safe message of the failure ("" when ok).
	Detail string `json:"detail,omitempty"`
}

// DependencyChecks checks the database (it answers and accepts writes: postgres.DB.Writable) and
// object storage, each on its own. They are for the internal readiness report: an outage of
// either does not make a replica unready (docs/operations.md, Health).
func (s *Service) DependencyChecks(ctx context.Context) []DependencyCheck {
	check := func(name string, err error) DependencyCheck {
		c := DependencyCheck{Name: name, State: "ok"}
		switch {
		case err == nil:
		case errors.Is(err, distribution.ErrReadOnly):
			c.State, c.Detail = "read-only", problem.Describe(err).Message
		default:
			c.State, c.Detail = "unavailable", problem.Describe(err).Message
		}
		return c
	}
	return []DependencyCheck{check("database", s.db.Writable(ctx)), check("storage", s.storage.Ping(ctx))}
}
