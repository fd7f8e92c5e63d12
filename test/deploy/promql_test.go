package deploy

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/postgres"
)

// metricInfo is what the alert and dashboard checks know about one metric name.
type metricInfo struct {
	labels map[string]bool
	source string
}

// scrapeLabels are the labels Prometheus (and the Prometheus Operator's ServiceMonitor) adds to
// every series it scrapes.
var scrapeLabels = []string{"namespace", "job", "pod", "instance", "service", "endpoint", "container"}

// externalMetrics are series the rules use that Slipway does not export: Prometheus' own up, and
// kube-state-metrics' Deployment status.
var externalMetrics = map[string]metricInfo{
	"up": {labels: map[string]bool{}, source: "Prometheus"},
	"kube_deployment_status_replicas_available": {labels: map[string]bool{"deployment": true}, source: "kube-state-metrics"},
}

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}\}$`)
)

// knownMetrics lists every series Slipway exports, from the collectors themselves:
// pkg/metrics.Metrics (histograms with their _bucket, _sum and _count series), the store's pool
// collector, and the Go and process collectors.
func knownMetrics(t testing.TB) map[string]metricInfo {
	t.Helper()
	known := map[string]metricInfo{}
	add := func(name, source string, labels []string, histogram bool) {
		l := map[string]bool{}
		for _, s := range labels {
			if s != "" {
				l[s] = true
			}
		}
		known[name] = metricInfo{labels: l, source: source}
		if histogram {
			bucket := map[string]bool{"le": true}
			for k := range l {
				bucket[k] = true
			}
			known[name+"_bucket"] = metricInfo{labels: bucket, source: source}
			known[name+"_sum"] = metricInfo{labels: l, source: source}
			known[name+"_count"] = metricInfo{labels: l, source: source}
		}
	}
	describe := func(c prometheus.Collector, source string, histogram bool) {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			s := d.String()
			n := descName.FindStringSubmatch(s)
			l := descLabels.FindStringSubmatch(s)
			if n == nil || l == nil {
				t.Fatalf("cannot read the metric description %s", s)
			}
			add(n[1], source, strings.Split(l[1], ","), histogram)
		}
	}
	m := metrics.New()
	v := reflect.ValueOf(m).Elem()
	collectorType := reflect.TypeFor[prometheus.Collector]()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.Type().Implements(collectorType) || f.IsNil() || v.Type().Field(i).Name == "Registry" {
			continue
		}
		histogram := strings.Contains(f.Type().String(), "Histogram")
		describe(f.Interface().(prometheus.Collector), "pkg/metrics."+v.Type().Field(i).Name, histogram)
	}
	describe((&postgres.DB{}).PoolCollector(), "pkg/postgres.PoolCollector", false)
	// The dependency gauge exists once serve gives it its checks.
	m.WatchDependencies(func(context.Context) []metrics.DependencyState {
		return []metrics.DependencyState{{Name: "database", State: "ok"}}
	})
	// The outbox gauge exists once serve runs a mail sender.
	m.WatchMailOutbox(func(context.Context) (int64, int64, error) { return 0, 0, nil })
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		name := mf.GetName()
		if _, ok := known[name]; ok {
			continue
		}
		var labels []string
		if len(mf.GetMetric()) > 0 {
			for _, lp := range mf.GetMetric()[0].GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		add(name, "Go/process collector", labels, mf.GetType().String() == "HISTOGRAM")
	}
	if len(known) < 40 {
		t.Fatalf("only %d metrics found in pkg/metrics: the reflection over Metrics is broken", len(known))
	}
	return known
}

// promQLFuncs are the PromQL functions and aggregations the rules and the dashboard may use
// (metricsql, the parser, accepts a superset of PromQL: this keeps its extensions out).
var promQLFuncs = map[string]bool{
	"rate": true, "increase": true, "histogram_quantile": true, "absent": true,
	"sum": true, "max": true, "min": true, "avg": true, "count": true,
}

// rangeFuncs take a range vector.
var rangeFuncs = map[string]bool{"rate": true, "increase": true}

// checkPromQL parses expr and checks it against the metrics Slipway exports: every metric exists,
// every label it filters or groups on exists on the metrics involved (or is a scrape label),
// only PromQL functions are used, and rate/increase get an explicit range. It returns the metric
// names used.
func checkPromQL(t testing.TB, what, expr string, known map[string]metricInfo) []string {
	t.Helper()
	if strings.TrimSpace(expr) == "" {
		t.Errorf("%s: empty expression", what)
		return nil
	}
	e, err := metricsql.Parse(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", what, expr, err)
		return nil
	}
	var used []string
	labelsOK := map[string]bool{}
	for _, l := range scrapeLabels {
		labelsOK[l] = true
	}
	var grouped []string
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		switch x := x.(type) {
		case *metricsql.MetricExpr:
			for _, group := range x.LabelFilterss {
				name := ""
				for _, lf := range group {
					if lf.Label == "__name__" {
						name = lf.Value
					}
				}
				info, ok := known[name]
				if !ok {
					info, ok = externalMetrics[name]
				}
				if !ok {
					t.Errorf("%s: metric %q is not exported by Slipway (pkg/metrics, pkg/postgres) nor a known external series", what, name)
					continue
				}
				used = append(used, name)
				for l := range info.labels {
					labelsOK[l] = true
				}
				for _, lf := range group {
					if lf.Label != "__name__" && !info.labels[lf.Label] && !slicesContains(scrapeLabels, lf.Label) {
						t.Errorf("%s: %s has no label %q (it has %v)", what, name, lf.Label, sortedKeys(info.labels))
					}
				}
			}
		case *metricsql.FuncExpr:
			if !promQLFuncs[x.Name] {
				t.Errorf("%s: function %s is not among the PromQL functions the rules may use", what, x.Name)
			}
			if rangeFuncs[x.Name] {
				r, ok := x.Args[0].(*metricsql.RollupExpr)
				if len(x.Args) != 1 || !ok || r.Window == nil {
					t.Errorf("%s: %s needs a range vector argument (metric[5m])", what, x.Name)
				}
			}
		case *metricsql.AggrFuncExpr:
			if !promQLFuncs[x.Name] {
				t.Errorf("%s: aggregation %s is not among the PromQL aggregations the rules may use", what, x.Name)
			}
			grouped = append(grouped, x.Modifier.Args...)
		}
	})
	for _, l := range grouped {
		if !labelsOK[l] {
			t.Errorf("%s: groups by %q, a label none of its metrics has", what, l)
		}
	}
	if len(used) == 0 {
		t.Errorf("%s: %q uses no metric", what, expr)
	}
	return used
}

func slicesContains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// The checker itself refuses what it must.
func TestPromQLChecker(t *testing.T) {
	known := knownMetrics(t)
	for _, name := range []string{"slipway_http_requests_total", "slipway_http_connections_closed_total",
		"slipway_upload_queue_wait_seconds_bucket", "slipway_db_pool_max_connections", "go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := known[name]; !ok {
			t.Errorf("knownMetrics lacks %s", name)
		}
	}
	if !known["slipway_http_connections_closed_total"].labels["outcome"] {
		t.Error("slipway_http_connections_closed_total has no outcome label")
	}
	for _, tc := range []struct{ expr, want string }{
		{`sum(rate(slipway_nonexistent_total[5m]))`, "not exported"},
		{`sum(rate(slipway_http_requests_total{routee="/"}[5m]))`, "no label"},
		{`sum(rate(slipway_http_requests_total[5m])`, "does not parse"},
		{`sum(rate(slipway_http_requests_total))`, "range vector"},
		{`sum by (bogus) (rate(slipway_http_requests_total[5m]))`, "groups by"},
		{`median_over_time(slipway_uploads_in_flight[5m])`, "not among"},
		{``, "empty"},
	} {
		ft := &fakeT{TB: t}
		checkPromQL(ft, "case", tc.expr, known)
		if !strings.Contains(strings.Join(ft.errors, "\n"), tc.want) {
			t.Errorf("%q: want an error mentioning %q, got %q", tc.expr, tc.want, ft.errors)
		}
	}
	ft := &fakeT{TB: t}
	checkPromQL(ft, "ok", `histogram_quantile(0.9, sum by (le, route) (rate(slipway_http_request_duration_seconds_bucket{job="x", route="/"}[5m]))) > 1`, known)
	if len(ft.errors) > 0 {
		t.Errorf("a valid expression was refused: %v", ft.errors)
	}
}

// fakeT records errors instead of failing, to test a checker.
type fakeT struct {
	testing.TB
	errors []string
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeT) Helper() {}

// sortedStrings returns xs sorted, without duplicates.
func sortedStrings(xs []string) []string {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	out := make([]string, 0, len(m))
	for x := range m {
		out = append(out, x)
	}
	sort.Strings(out)
	return out
}
