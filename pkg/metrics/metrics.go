// Package metrics defines Slipway's Prometheus metrics on a registry owned by the process (no
// global state), so tests can create as many servers as they like.
package metrics

import (
	"context"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
)

// Metrics holds every collector Slipway updates.
type Metrics struct {
	Registry *prometheus.Registry

	// HTTP
	Requests        *prometheus.CounterVec   // route, method, status
	RequestDuration *prometheus.HistogramVec // route, method
	// ConnectionsClosed counts connections by how they ended (httpapi/connections.go): answered,
	// no_request, unanswered (a request arrived but reached no handler), cut (mid-handler).
	ConnectionsClosed *prometheus.CounterVec // outcome

	// BuildInfo is 1, labelled with the binary's version, commit and Go version.
	BuildInfo *prometheus.GaugeVec // version, commit, go_version

	// Uploads (apps and debug files), in one request or through an upload session (via: request,
	// session); a session's is timed from its start to its completion.
	UploadBytes    *prometheus.CounterVec   // kind: app, debug_file
	UploadDuration *prometheus.HistogramVec // kind, outcome: ok, rejected, failed; via
	UploadsActive  prometheus.Gauge
	// UploadSlots is the replica's number of upload slots (SLIPWAY_MAX_CONCURRENT_UPLOADS): with
	// UploadsActive, the share in use, on which the HorizontalPodAutoscaler can scale.
	UploadSlots prometheus.Gauge
	// The upload queue (backpressure): uploads waiting for a slot, how long they waited, and those
	// refused with 429 (reason: queue_full, timeout, cancelled).
	UploadsWaiting  prometheus.Gauge
	UploadQueueWait prometheus.Histogram
	UploadsRefused  *prometheus.CounterVec

	// The read cache of channel views (distribution/readcache.go)
	ReadCacheLookups       *prometheus.CounterVec // result: hit, miss, expired
	ReadCacheInvalidations *prometheus.CounterVec // source: local, notify, reconnect
	ReadCacheEvictions     prometheus.Counter
	ReadCacheBytes         prometheus.Gauge
	ReadCacheViews         prometheus.Gauge

	// Retention, webhooks and install counts
	RetentionDeleted      *prometheus.CounterVec // reason: keep_builds, max_age, max_bytes, expired_profile
	RetentionDeletedBytes prometheus.Counter
	WebhookDeliveries     *prometheus.CounterVec // outcome: delivered, retry, failed
	// MailAttempts counts the attempts to hand a mail to the SMTP relay (pkg/distribution/mailer).
	MailAttempts *prometheus.CounterVec // outcome: sent, retry, failed
	Downloads    *prometheus.CounterVec // platform

	// Parsing from storage through the cached ReaderAt
	ParseDuration *prometheus.HistogramVec // format
	ParseGETs     prometheus.Histogram
	ParseBytes    prometheus.Histogram

	// Dependencies
	StorageErrors *prometheus.CounterVec // op
	// StorageRequestDuration times each HTTP request to S3, from sending it to the response's
	// headers, by the S3 operation (PutObject, UploadPart, GetObject, HeadBucket...).
	StorageRequestDuration *prometheus.HistogramVec // operation
	Unavailable            prometheus.Counter
	GCDeleted              prometheus.Counter
	GCFailed               prometheus.Counter
}

// New creates the collectors on a fresh registry, with Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) { m.Registry.MustRegister(c) }

	m.Requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_http_requests_total",
		Help: "HTTP requests by route pattern, method and status code."}, []string{"route", "method", "status"})
	m.RequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slipway_http_request_duration_seconds",
		Help:    "HTTP request latency by route pattern and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"route", "method"})
	m.ConnectionsClosed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_http_connections_closed_total",
		Help: "Client connections closed, by outcome: answered, no_request, unanswered (a request arrived but reached no handler), cut (closed while a handler ran)."}, []string{"outcome"})
	m.UploadBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_upload_bytes_total",
		Help: "Bytes received in upload file parts."}, []string{"kind"})
	m.UploadDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slipway_upload_duration_seconds",
		Help:    "Upload duration by kind (app, debug_file), outcome (ok, rejected, failed) and via (request: one POST, from first byte to response; session: a resumable upload session, from its start to its completion).",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}, []string{"kind", "outcome", "via"})
	m.UploadsActive = prometheus.NewGauge(prometheus.GaugeOpts{Name: "slipway_uploads_in_flight",
		Help: "Uploads being received by this replica (each holds an upload slot)."})
	m.UploadSlots = prometheus.NewGauge(prometheus.GaugeOpts{Name: "slipway_upload_slots",
		Help: "Upload slots of this replica (SLIPWAY_MAX_CONCURRENT_UPLOADS)."})
	m.BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "slipway_build_info",
		Help: "Always 1, labelled with the running binary's version, commit and Go version."}, []string{"version", "commit", "go_version"})
	m.BuildInfo.WithLabelValues(buildinfo.Version, buildinfo.CommitOrVCS(), runtime.Version()).Set(1)
	m.StorageRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slipway_storage_request_duration_seconds",
		Help:    "HTTP requests to S3 from sending to the response headers, by S3 operation.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"operation"})
	m.UploadsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{Name: "slipway_uploads_waiting",
		Help: "Uploads waiting in this replica's queue for a slot."})
	m.UploadQueueWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "slipway_upload_queue_wait_seconds",
		Help: "How long admitted uploads waited for a slot.", Buckets: []float64{0, .01, .1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}})
	m.UploadsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_uploads_refused_total",
		Help: "Uploads answered 429 by the queue, by reason (queue_full, timeout) or given up by the client (cancelled)."}, []string{"reason"})
	m.ReadCacheLookups = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_read_cache_lookups_total",
		Help: "Channel view lookups in the read cache, by result (hit, miss, expired)."}, []string{"result"})
	m.ReadCacheInvalidations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_read_cache_invalidations_total",
		Help: "Changes that removed views from the read cache, by source (local write, notify from Postgres, reconnect of the listener: everything)."}, []string{"source"})
	m.ReadCacheEvictions = prometheus.NewCounter(prometheus.CounterOpts{Name: "slipway_read_cache_evictions_total",
		Help: "Views dropped from the read cache to stay within SLIPWAY_READ_CACHE_BYTES."})
	m.ReadCacheBytes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "slipway_read_cache_bytes",
		Help: "Estimated bytes held by the read cache."})
	m.ReadCacheViews = prometheus.NewGauge(prometheus.GaugeOpts{Name: "slipway_read_cache_views",
		Help: "Channel views held by the read cache."})
	m.ParseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slipway_parse_duration_seconds",
		Help: "Time to read a package's metadata from storage.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"format"})
	m.ParseGETs = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "slipway_parse_storage_gets",
		Help: "Storage range requests made to parse one package.", Buckets: []float64{0, 1, 2, 3, 4, 6, 8, 12, 16, 32}})
	m.ParseBytes = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "slipway_parse_storage_bytes",
		Help: "Bytes fetched from storage to parse one package.", Buckets: prometheus.ExponentialBuckets(4096, 4, 10)})
	m.StorageErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_storage_errors_total",
		Help: "Object storage operations that failed, by operation."}, []string{"op"})
	m.Unavailable = prometheus.NewCounter(prometheus.CounterOpts{Name: "slipway_dependency_unavailable_total",
		Help: "Requests answered 503 because the database or object storage was unreachable."})
	m.GCDeleted = prometheus.NewCounter(prometheus.CounterOpts{Name: "slipway_gc_deleted_objects_total",
		Help: "Objects deleted by the storage collector."})
	m.GCFailed = prometheus.NewCounter(prometheus.CounterOpts{Name: "slipway_gc_failed_deletions_total",
		Help: "Object deletions by the collector that failed and will be retried."})
	m.RetentionDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_retention_deleted_releases_total",
		Help: "Releases deleted by retention on this replica, by the rule that chose them."}, []string{"reason"})
	m.RetentionDeletedBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "slipway_retention_deleted_bytes_total",
		Help: "Package bytes of the releases deleted by retention on this replica."})
	m.WebhookDeliveries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_webhook_attempts_total",
		Help: "Webhook delivery attempts made by this replica, by outcome (delivered, retry: failed and rescheduled, failed: given up)."}, []string{"outcome"})
	m.MailAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_mail_attempts_total",
		Help: "Attempts to hand a mail to the SMTP relay made by this replica, by outcome (sent, retry: failed and rescheduled, failed: given up)."}, []string{"outcome"})
	m.Downloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_downloads_total",
		Help: "Package downloads and iOS installs counted by this replica, by platform."}, []string{"platform"})
	for _, c := range []prometheus.Collector{m.RetentionDeleted, m.RetentionDeletedBytes, m.WebhookDeliveries, m.MailAttempts, m.Downloads,
		m.BuildInfo, m.UploadSlots, m.StorageRequestDuration} {
		f(c)
	}
	for _, c := range []prometheus.Collector{m.Requests, m.RequestDuration, m.UploadBytes, m.UploadDuration, m.UploadsActive,
		m.UploadsWaiting, m.UploadQueueWait, m.UploadsRefused,
		m.ConnectionsClosed, m.ReadCacheLookups, m.ReadCacheInvalidations, m.ReadCacheEvictions, m.ReadCacheBytes, m.ReadCacheViews, m.ParseDuration, m.ParseGETs, m.ParseBytes, m.StorageErrors, m.Unavailable, m.GCDeleted, m.GCFailed} {
		f(c)
	}
	m.initSeries()
	return m
}

// initSeries exports, at 0, the series alerts compare or take the increase of, before their
// first event: Prometheus sees no increase in a series born at 1 (it has no sample before the
// event), and a comparison with an absent series gives nothing, so without them the first failed
// upload or webhook would raise no alert.
func (m *Metrics) initSeries() {
	for _, kind := range []string{"app", "debug_file"} {
		for _, outcome := range []string{"ok", "rejected", "failed"} {
			for _, via := range []string{"request", "session"} {
				m.UploadDuration.WithLabelValues(kind, outcome, via)
			}
		}
	}
	for _, reason := range []string{"queue_full", "timeout", "cancelled"} {
		m.UploadsRefused.WithLabelValues(reason)
	}
	for _, outcome := range []string{"delivered", "retry", "failed"} {
		m.WebhookDeliveries.WithLabelValues(outcome)
	}
	for _, outcome := range []string{"sent", "retry", "failed"} {
		m.MailAttempts.WithLabelValues(outcome)
	}
	for _, outcome := range []string{"answered", "no_request", "unanswered", "cut"} {
		m.ConnectionsClosed.WithLabelValues(outcome)
	}
}

// DependencyState is one dependency's state as the readiness report gives it: "ok",
// "read-only" or "unavailable".
type DependencyState struct {
	Name, State string
}

// WatchDependencies exports slipway_dependency_up{dependency}: 1 while the dependency (database,
// storage) answers and accepts writes, 0 otherwise. probe runs at each scrape, bounded by
// dependencyProbeTimeout, so the gauge says how things are now, with or without traffic (a rate
// of 503s says nothing at night).
func (m *Metrics) WatchDependencies(probe func(ctx context.Context) []DependencyState) {
	m.Registry.MustRegister(&dependencyCollector{probe: probe,
		desc: prometheus.NewDesc("slipway_dependency_up", "1 while the dependency (database, storage) answers and accepts writes, checked at each scrape; 0 otherwise.", []string{"dependency"}, nil)})
}

// dependencyProbeTimeout bounds a scrape's dependency checks, within Prometheus' default 10 s
// scrape timeout.
const dependencyProbeTimeout = 3 * time.Second

type dependencyCollector struct {
	probe func(ctx context.Context) []DependencyState
	desc  *prometheus.Desc
}

func (c *dependencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *dependencyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), dependencyProbeTimeout)
	defer cancel()
	for _, d := range c.probe(ctx) {
		up := 0.0
		if d.State == "ok" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, up, d.Name)
	}
}

// WatchMailOutbox exports slipway_mail_outbox{state}: the mails waiting in the outbox (pending,
// which counts those being sent) and those given up (failed), counted at each scrape (bounded by
// dependencyProbeTimeout; a count that fails exports nothing that scrape). The outbox is shared:
// every replica reports the same numbers. A second call for the same Metrics changes nothing.
func (m *Metrics) WatchMailOutbox(count func(ctx context.Context) (pending, failed int64, err error)) {
	_ = m.Registry.Register(&outboxCollector{count: count,
		desc: prometheus.NewDesc("slipway_mail_outbox", "Mails in the outbox, by state: pending (waiting to be sent, or being sent) and failed (given up), counted at each scrape.", []string{"state"}, nil)})
}

type outboxCollector struct {
	count func(ctx context.Context) (pending, failed int64, err error)
	desc  *prometheus.Desc
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), dependencyProbeTimeout)
	defer cancel()
	pending, failed, err := c.count(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(pending), "pending")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(failed), "failed")
}

// WatchParseBudget exports the replica's parse-memory budget (appinfo.Budget): its size, the bytes
// parses hold, and how many wait for it, read when scraped. A second call for the same Metrics
// changes nothing.
func (m *Metrics) WatchParseBudget(total, held, waiting func() int64) {
	for _, g := range []struct {
		name, help string
		v          func() int64
	}{
		{"slipway_parse_memory_bytes", "This replica's parse-memory budget (SLIPWAY_PARSE_MEMORY, or derived from the memory limit).", total},
		{"slipway_parse_memory_held_bytes", "Bytes of the parse-memory budget reserved by parses (and the checksum verifier) now.", held},
		{"slipway_parses_waiting", "Parses waiting for the parse-memory budget.", waiting},
	} {
		v := g.v
		_ = m.Registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, func() float64 { return float64(v()) }))
	}
}
