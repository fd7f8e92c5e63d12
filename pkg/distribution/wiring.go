package distribution

import (
	"log/slog"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/signing"
	"github.com/slipwayhq/slipway/pkg/storage"
)

// New wires the domain to its database, object storage and configuration: the one place the
// service (serve, the commands) and the tests build it.
func New(cfg *config.Config, db Store, st storage.Backend, m *metrics.Metrics, log *slog.Logger) *Service {
	svc := &Service{Store: db, Storage: st, Metrics: m, Log: log, Signer: signing.New(cfg.Secret, cfg.SecretPrevious...),
		MaxUploadBytes: cfg.MaxUploadBytes,
		Downloads:      DownloadConfig{PublicURL: cfg.PublicURL, CDNURL: cfg.CDNURL, TTL: cfg.PresignTTL},
		Sessions:       SessionConfig{TTL: cfg.UploadSessionTTL},
		Links:          links.Links{Base: cfg.PublicURL},
		Webhooks: WebhookConfig{AllowPrivate: cfg.WebhookAllowPrivate, RetryBase: cfg.WebhookRetryBase,
			MaxAttempts: cfg.WebhookMaxAttempts, Poll: cfg.WebhookPoll, Timeout: cfg.WebhookTimeout},
		UDID: UDIDConfig{Organization: cfg.UDIDOrganization},
		Retention: RetentionConfig{Interval: cfg.RetentionInterval, Defaults: RetentionRules{
			KeepBuilds: cfg.RetentionKeepBuilds, MaxAgeDays: cfg.RetentionMaxAgeDays, MaxBytes: cfg.RetentionMaxBytes,
			ExpiredProfileDays: cfg.RetentionExpiredProfileDays}}}
	svc.EnableReadCache(ReadCacheConfig{MaxBytes: cfg.ReadCacheBytes, TTL: cfg.ReadCacheTTL})
	return svc
}
