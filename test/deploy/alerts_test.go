package deploy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
)

// pod is one replica as Prometheus sees it: Slipway's real metrics (pkg/metrics, the store's pool
// collector on a real pool, the dependency gauge), scraped over HTTP from promhttp's handler.
type pod struct {
	name  string
	m     *metrics.Metrics
	deps  map[string]string // dependency -> state, what the readiness checks would say
	pool  *pgxpool.Pool
	srv   *httptest.Server
	down  bool // scrapes fail
	steps int
	// mailPending is what the outbox gauge (slipway_mail_outbox) says is waiting.
	mailPending int64
}

func newPod(t *testing.T, name string, db *postgres.DB) *pod {
	t.Helper()
	p := &pod{name: name, m: metrics.New(), deps: map[string]string{"database": "ok", "storage": "ok"}, pool: db.Pool}
	p.m.Registry.MustRegister(db.PoolCollector())
	p.m.WatchDependencies(func(context.Context) []metrics.DependencyState {
		var out []metrics.DependencyState
		for _, n := range []string{"database", "storage"} {
			out = append(out, metrics.DependencyState{Name: n, State: p.deps[n]})
		}
		return out
	})
	p.m.WatchMailOutbox(func(context.Context) (int64, int64, error) { return p.mailPending, 0, nil })
	p.m.UploadSlots.Set(16) // SLIPWAY_MAX_CONCURRENT_UPLOADS' default, as the upload gate sets it
	p.srv = httptest.NewServer(promhttp.HandlerFor(p.m.Registry, promhttp.HandlerOpts{}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *pod) target() map[string]string {
	return map[string]string{"namespace": namespace, "job": releaseName, "pod": p.name, "instance": p.name + ":9090",
		"service": releaseName, "endpoint": "internal", "container": "slipway"}
}

// scrape fetches the pod's /metrics as Prometheus would, and stores it at at.
func (p *pod) scrape(t *testing.T, db *tsdb, at time.Time) {
	t.Helper()
	if p.down {
		db.failedScrape(at, p.target())
		return
	}
	resp, err := http.Get(p.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	db.scrape(t, at, string(body), p.target())
	db.put(at, "up", p.target(), 1)
}

// world is a scenario's cluster: pods, kube-state-metrics' view of the Deployment, and a step
// function that makes what happens between two scrapes (30 s) happen.
type world struct {
	pods      []*pod
	available float64 // kube_deployment_status_replicas_available
	step      func(w *world, i int)
}

// scenario is what makes an alert fire, and the healthy state beside which it must not.
type scenario struct {
	failing, healthy func(w *world, i int)
	// pods is the number of replicas (default 1).
	pods int
}

const (
	scrapeInterval = 30 * time.Second
	scenarioSteps  = 40 // 20 minutes of scrapes
)

func histogramObserve(h interface{ Observe(float64) }, n int, v float64) {
	for range n {
		h.Observe(v)
	}
}

// scenarios has an entry for every alert of the chart: TestAlertsFire fails for one without.
var scenarios = map[string]scenario{
	"SlipwayDown": {
		failing: func(w *world, i int) { w.pods[0].down = true },
		healthy: func(w *world, i int) {},
	},
	"SlipwayNoReadyReplicas": {
		failing: func(w *world, i int) { w.available = 0 },
		healthy: func(w *world, i int) { w.available = 2 },
	},
	// At night: no request at all, the storage unreachable.
	"SlipwayDependencyUnavailable": {
		failing: func(w *world, i int) { w.pods[0].deps["storage"] = "unavailable" },
		healthy: func(w *world, i int) {},
	},
	"SlipwayServiceUnavailableRate": {
		failing: func(w *world, i int) {
			m := w.pods[0].m
			m.Requests.WithLabelValues("/api/apps/latest", "GET", "200").Add(8)
			m.Requests.WithLabelValues("/api/apps/latest", "GET", "503").Add(2)
		},
		healthy: func(w *world, i int) {
			w.pods[0].m.Requests.WithLabelValues("/api/apps/latest", "GET", "200").Add(10)
		},
	},
	"SlipwayServerErrors": {
		failing: func(w *world, i int) {
			m := w.pods[0].m
			m.Requests.WithLabelValues("/api/apps/upload", "POST", "201").Add(90)
			m.Requests.WithLabelValues("/api/apps/upload", "POST", "500").Add(10)
		},
		healthy: func(w *world, i int) {
			m := w.pods[0].m
			m.Requests.WithLabelValues("/api/apps/upload", "POST", "201").Add(999)
			if i == 20 {
				m.Requests.WithLabelValues("/api/apps/upload", "POST", "500").Add(1)
			}
		},
	},
	// The pod never had a successful upload (no "ok" increase at all), and one upload, through a
	// resumable session, failed.
	"SlipwayUploadsFailing": {
		failing: func(w *world, i int) {
			if i == 30 {
				w.pods[0].m.UploadDuration.WithLabelValues("app", "failed", "session").Observe(40)
			}
		},
		healthy: func(w *world, i int) {
			m := w.pods[0].m
			if i == 30 {
				m.UploadDuration.WithLabelValues("app", "failed", "request").Observe(4)
			}
			if i%5 == 0 {
				m.UploadDuration.WithLabelValues("app", "ok", "session").Observe(30)
			}
		},
	},
	"SlipwayUploadSlotsSaturated": {
		failing: func(w *world, i int) { w.pods[0].m.UploadsActive.Set(15) },
		healthy: func(w *world, i int) { w.pods[0].m.UploadsActive.Set(4) },
	},
	"SlipwayUploadsRefused": {
		failing: func(w *world, i int) {
			if i == 35 {
				w.pods[0].m.UploadsRefused.WithLabelValues("queue_full").Inc()
			}
		},
		healthy: func(w *world, i int) { w.pods[0].m.UploadsRefused.WithLabelValues("cancelled").Inc() },
	},
	"SlipwayUploadsWaitLong": {
		failing: func(w *world, i int) { histogramObserve(w.pods[0].m.UploadQueueWait, 3, 60) },
		healthy: func(w *world, i int) { histogramObserve(w.pods[0].m.UploadQueueWait, 3, 0.05) },
	},
	"SlipwayRequestsUnanswered": {
		failing: func(w *world, i int) {
			if i == 30 {
				w.pods[0].m.ConnectionsClosed.WithLabelValues("cut").Inc()
			}
		},
		healthy: func(w *world, i int) { w.pods[0].m.ConnectionsClosed.WithLabelValues("answered").Add(50) },
	},
	"SlipwayCollectorFailing": {
		failing: func(w *world, i int) {
			if i > 20 {
				w.pods[0].m.GCFailed.Inc()
			}
		},
		healthy: func(w *world, i int) {
			if i == 10 || i == 30 {
				w.pods[0].m.GCFailed.Inc()
			}
			w.pods[0].m.GCDeleted.Add(3)
		},
	},
	// The first delivery ever given up on this pod.
	"SlipwayWebhooksFailing": {
		failing: func(w *world, i int) {
			if i == 30 {
				w.pods[0].m.WebhookDeliveries.WithLabelValues("failed").Inc()
			}
		},
		healthy: func(w *world, i int) {
			w.pods[0].m.WebhookDeliveries.WithLabelValues("delivered").Inc()
			w.pods[0].m.WebhookDeliveries.WithLabelValues("retry").Inc()
		},
	},
	// The first mail ever given up on this pod.
	"SlipwayMailFailing": {
		failing: func(w *world, i int) {
			if i == 30 {
				w.pods[0].m.MailAttempts.WithLabelValues("failed").Inc()
			}
		},
		healthy: func(w *world, i int) {
			w.pods[0].m.MailAttempts.WithLabelValues("sent").Inc()
			w.pods[0].m.MailAttempts.WithLabelValues("retry").Inc()
		},
	},
	// Mail waits and the relay refuses every attempt (retries only); healthy, mail waits a
	// moment and leaves.
	"SlipwayMailStuck": {
		failing: func(w *world, i int) {
			w.pods[0].mailPending = 40
			w.pods[0].m.MailAttempts.WithLabelValues("retry").Inc()
		},
		healthy: func(w *world, i int) {
			w.pods[0].mailPending = int64(i % 3)
			w.pods[0].m.MailAttempts.WithLabelValues("sent").Inc()
		},
	},
	"SlipwayStorageErrors": {
		failing: func(w *world, i int) { w.pods[0].m.StorageErrors.WithLabelValues("put").Add(30) },
		healthy: func(w *world, i int) {
			if i == 20 {
				w.pods[0].m.StorageErrors.WithLabelValues("put").Inc()
			}
		},
	},
	"SlipwayStorageSlow": {
		failing: func(w *world, i int) {
			histogramObserve(w.pods[0].m.StorageRequestDuration.WithLabelValues("GetObject"), 20, 3)
			histogramObserve(w.pods[0].m.StorageRequestDuration.WithLabelValues("UploadPart"), 20, 2)
		},
		healthy: func(w *world, i int) {
			histogramObserve(w.pods[0].m.StorageRequestDuration.WithLabelValues("GetObject"), 20, 0.02)
			// Large parts take seconds on a busy link: not a sign of a slow service.
			histogramObserve(w.pods[0].m.StorageRequestDuration.WithLabelValues("UploadPart"), 20, 4)
		},
	},
	"SlipwayVersionsMixed": {
		pods: 2,
		failing: func(w *world, i int) {
			b := w.pods[1].m.BuildInfo
			b.Reset()
			b.WithLabelValues("v0.2.0", "abc", "go1.26").Set(1)
		},
		healthy: func(w *world, i int) {},
	},
	"SlipwaySlowReads": {
		failing: func(w *world, i int) {
			histogramObserve(w.pods[0].m.RequestDuration.WithLabelValues("/api/apps/latest", "GET"), 50, 1)
		},
		healthy: func(w *world, i int) {
			histogramObserve(w.pods[0].m.RequestDuration.WithLabelValues("/api/apps/latest", "GET"), 50, 0.01)
		},
	},
	"SlipwayDatabasePoolSaturated": {
		failing: func(w *world, i int) {}, // runAlert holds every connection of the pod's pool
		healthy: func(w *world, i int) {},
	},
}

// runAlert plays a scenario's step for 20 minutes of scrapes and evaluates expr at the end.
func runAlert(t *testing.T, dbURL, alert, expr string, step func(w *world, i int), pods int) []vsample {
	t.Helper()
	w := &world{available: 2, step: step}
	for i := range max(pods, 1) {
		db, err := postgres.Open(context.Background(), dbURL, postgres.Options{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		w.pods = append(w.pods, newPod(t, fmt.Sprintf("slipway-%d", i), db))
	}
	if alert == "SlipwayDatabasePoolSaturated" && strings.Contains(t.Name(), "failing") {
		for range 2 {
			c, err := w.pods[0].pool.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Release)
		}
	}
	var db tsdb
	start := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC) // 2 a.m.: nobody uploads
	at := start
	for i := 0; i < scenarioSteps; i++ {
		at = start.Add(time.Duration(i) * scrapeInterval)
		w.step(w, i)
		for _, p := range w.pods {
			p.scrape(t, &db, at)
		}
		db.put(at, "kube_deployment_status_replicas_available", map[string]string{"namespace": namespace, "deployment": releaseName, "job": "kube-state-metrics"}, w.available)
	}
	got, err := db.eval(expr, at)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return got
}

// Every alert of the chart, evaluated with its real expression over Slipway's real metrics
// scraped from /metrics: it fires in a state it exists for (the first failure of its kind, with
// or without traffic, the "ok" series never seen) and stays quiet in a healthy state.
func TestAlertsFire(t *testing.T) {
	dbURL := testenv.DatabaseURL(t)
	r := render(t, "--set", "prometheusRule.enabled=true")
	pr := one(t, "PrometheusRule", r.PrometheusRules)
	var names []string
	for _, rule := range pr.Spec.Groups[0].Rules {
		names = append(names, rule.Alert)
		sc, ok := scenarios[rule.Alert]
		if !ok {
			t.Errorf("alert %s has no scenario in scenarios: add how it fires and a healthy state beside it", rule.Alert)
			continue
		}
		t.Run(rule.Alert+"/failing", func(t *testing.T) {
			if got := runAlert(t, dbURL, rule.Alert, rule.Expr, sc.failing, sc.pods); len(got) == 0 {
				t.Errorf("%s does not fire in its failing state: %s", rule.Alert, rule.Expr)
			}
		})
		t.Run(rule.Alert+"/healthy", func(t *testing.T) {
			if got := runAlert(t, dbURL, rule.Alert, rule.Expr, sc.healthy, sc.pods); len(got) != 0 {
				t.Errorf("%s fires in a healthy state: %s = %v", rule.Alert, rule.Expr, got)
			}
		})
	}
	sort.Strings(names)
	for name := range scenarios {
		if sort.SearchStrings(names, name) == len(names) || names[sort.SearchStrings(names, name)] != name {
			t.Errorf("scenario %s has no alert in the chart", name)
		}
	}
}
