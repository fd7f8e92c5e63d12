// Package metrics defines Slipway's Prometheus metrics on a registry owned by the process (no
// global state), so tests can create as many servers as they like.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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

	// Uploads (apps and debug files)
	UploadBytes    *prometheus.CounterVec   // kind: app, debug_file
	UploadDuration *prometheus.HistogramVec // kind, outcome: ok, rejected, failed
	UploadsActive  prometheus.Gauge
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
	Downloads             *prometheus.CounterVec // platform

	// Parsing from storage through the cached ReaderAt
	ParseDuration *prometheus.HistogramVec // format
	ParseGETs     prometheus.Histogram
	ParseBytes    prometheus.Histogram

	// Dependencies
	StorageErrors *prometheus.CounterVec // op
	Unavailable   prometheus.Counter
	GCDeleted     prometheus.Counter
	GCFailed      prometheus.Counter
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
		Help:    "Upload duration from first byte to response, by kind and outcome.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}, []string{"kind", "outcome"})
	m.UploadsActive = prometheus.NewGauge(prometheus.GaugeOpts{Name: "slipway_uploads_in_flight",
		Help: "Uploads being received by this replica."})
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
	m.Downloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_downloads_total",
		Help: "Package downloads and iOS installs counted by this replica, by platform."}, []string{"platform"})
	for _, c := range []prometheus.Collector{m.RetentionDeleted, m.RetentionDeletedBytes, m.WebhookDeliveries, m.Downloads} {
		f(c)
	}
	for _, c := range []prometheus.Collector{m.Requests, m.RequestDuration, m.UploadBytes, m.UploadDuration, m.UploadsActive,
		m.UploadsWaiting, m.UploadQueueWait, m.UploadsRefused,
		m.ConnectionsClosed, m.ReadCacheLookups, m.ReadCacheInvalidations, m.ReadCacheEvictions, m.ReadCacheBytes, m.ReadCacheViews, m.ParseDuration, m.ParseGETs, m.ParseBytes, m.StorageErrors, m.Unavailable, m.GCDeleted, m.GCFailed} {
		f(c)
	}
	return m
}
