package deploy

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// This file is a small PromQL evaluator for the alert rules' tests: it evaluates an expression at
// one instant over the series of a few scrapes, as Prometheus does for the subset of PromQL that
// checkPromQL lets the rules use (selectors with a 5-minute lookback and staleness, rate and
// increase with Prometheus' extrapolation, histogram_quantile, absent, sum/max/min/avg/count by
// or without, arithmetic, comparisons with and without bool, and/or/unless with on/ignoring).
// Prometheus itself (its promql package) would pull the whole server's module graph into go.mod;
// this is the part of its semantics that decides whether an alert fires, such as a comparison with
// an absent series giving nothing, and a series born at its first increment having no increase.

// sample is one scraped value.
type sample struct {
	t time.Time
	v float64
}

// tsdb is what Prometheus would hold after the scrapes: each series' samples, and when each
// series went stale (missing from a later scrape).
type tsdb struct {
	series map[string]*series // by labels' canonical string
}

type series struct {
	labels  map[string]string
	samples []sample
}

// scrape adds one scrape's exposition text at time at, with the target labels Prometheus adds.
// A series that the scrape lacks gets a stale marker (NaN), as Prometheus writes one.
func (db *tsdb) scrape(t testing.TB, at time.Time, text string, target map[string]string) {
	t.Helper()
	if db.series == nil {
		db.series = map[string]*series{}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	seen := map[string]bool{}
	add := func(name string, labels map[string]string, v float64) {
		l := map[string]string{"__name__": name}
		for k, x := range target {
			l[k] = x
		}
		for k, x := range labels {
			l[k] = x
		}
		key := labelKey(l)
		s := db.series[key]
		if s == nil {
			s = &series{labels: l}
			db.series[key] = s
		}
		s.samples = append(s.samples, sample{at, v})
		seen[key] = true
	}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				add(name, labels, m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				add(name, labels, m.GetGauge().GetValue())
			case m.GetUntyped() != nil:
				add(name, labels, m.GetUntyped().GetValue())
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					bl := cloneLabels(labels)
					bl["le"] = formatLe(b.GetUpperBound())
					add(name+"_bucket", bl, float64(b.GetCumulativeCount()))
				}
				bl := cloneLabels(labels)
				bl["le"] = "+Inf"
				add(name+"_bucket", bl, float64(h.GetSampleCount()))
				add(name+"_sum", labels, h.GetSampleSum())
				add(name+"_count", labels, float64(h.GetSampleCount()))
			}
		}
	}
	for key, s := range db.series {
		if !seen[key] && sameTarget(s.labels, target) && len(s.samples) > 0 && !math.IsNaN(s.samples[len(s.samples)-1].v) {
			s.samples = append(s.samples, sample{at, math.NaN()}) // stale marker
		}
	}
}

// failedScrape records a scrape of target that failed: only Prometheus' up, 0, and stale markers.
func (db *tsdb) failedScrape(at time.Time, target map[string]string) {
	if db.series == nil {
		db.series = map[string]*series{}
	}
	for _, s := range db.series {
		if sameTarget(s.labels, target) && s.labels["__name__"] != "up" && len(s.samples) > 0 && !math.IsNaN(s.samples[len(s.samples)-1].v) {
			s.samples = append(s.samples, sample{at, math.NaN()})
		}
	}
	db.put(at, "up", target, 0)
}

// put adds one sample of a series by hand: Prometheus' up and the kube-state-metrics series.
func (db *tsdb) put(at time.Time, name string, labels map[string]string, v float64) {
	if db.series == nil {
		db.series = map[string]*series{}
	}
	l := cloneLabels(labels)
	l["__name__"] = name
	key := labelKey(l)
	s := db.series[key]
	if s == nil {
		s = &series{labels: l}
		db.series[key] = s
	}
	s.samples = append(s.samples, sample{at, v})
}

func sameTarget(l, target map[string]string) bool {
	for k, v := range target {
		if l[k] != v {
			return false
		}
	}
	return true
}

func formatLe(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return model.SampleValue(f).String()
}

func cloneLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, l[k])
	}
	return b.String()
}

// value is a scalar or an instant vector.
type value struct {
	scalar   bool
	s        float64
	v        []vsample
	selector *metricsql.MetricExpr // set when v came straight from a selector (absent's labels)
}

type vsample struct {
	labels map[string]string
	v      float64
}

// lookback is Prometheus' default lookback delta.
const lookback = 5 * time.Minute

// eval evaluates expr at time at.
func (db *tsdb) eval(expr string, at time.Time) ([]vsample, error) {
	e, err := metricsql.Parse(expr)
	if err != nil {
		return nil, err
	}
	v, err := db.evalExpr(e, at)
	if err != nil {
		return nil, err
	}
	if v.scalar {
		return []vsample{{labels: map[string]string{}, v: v.s}}, nil
	}
	return v.v, nil
}

var regexps = map[string]*regexp.Regexp{}

// compileAnchored compiles a label matcher's regular expression, anchored as PromQL's are.
func compileAnchored(expr string) (*regexp.Regexp, error) {
	if re, ok := regexps[expr]; ok {
		return re, nil
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err == nil {
		regexps[expr] = re
	}
	return re, err
}

func (db *tsdb) selectSeries(me *metricsql.MetricExpr) ([]*series, error) {
	if len(me.LabelFilterss) != 1 {
		return nil, fmt.Errorf("or-filters are not PromQL")
	}
	var out []*series
	for _, s := range db.series {
		ok := true
		for _, f := range me.LabelFilterss[0] {
			v := s.labels[f.Label]
			var m bool
			if f.IsRegexp {
				re, err := compileAnchored(f.Value)
				if err != nil {
					return nil, err
				}
				m = re.MatchString(v)
			} else {
				m = v == f.Value
			}
			if m == f.IsNegative {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

func (db *tsdb) evalExpr(e metricsql.Expr, at time.Time) (value, error) {
	switch e := e.(type) {
	case *metricsql.NumberExpr:
		return value{scalar: true, s: e.N}, nil
	case *metricsql.MetricExpr:
		ss, err := db.selectSeries(e)
		if err != nil {
			return value{}, err
		}
		out := value{selector: e}
		for _, s := range ss {
			// The newest sample within the lookback; none when it is a stale marker.
			var last *sample
			for i := range s.samples {
				if !s.samples[i].t.After(at) && s.samples[i].t.After(at.Add(-lookback)) {
					last = &s.samples[i]
				}
			}
			if last != nil && !math.IsNaN(last.v) {
				out.v = append(out.v, vsample{labels: cloneLabels(s.labels), v: last.v})
			}
		}
		return out, nil
	case *metricsql.FuncExpr:
		return db.evalFunc(e, at)
	case *metricsql.AggrFuncExpr:
		return db.evalAggr(e, at)
	case *metricsql.BinaryOpExpr:
		return db.evalBinary(e, at)
	}
	return value{}, fmt.Errorf("%T is not supported", e)
}

func (db *tsdb) evalFunc(e *metricsql.FuncExpr, at time.Time) (value, error) {
	switch e.Name {
	case "rate", "increase":
		r, ok := e.Args[0].(*metricsql.RollupExpr)
		if !ok || r.Window == nil {
			return value{}, fmt.Errorf("%s needs a range", e.Name)
		}
		me, ok := r.Expr.(*metricsql.MetricExpr)
		if !ok {
			return value{}, fmt.Errorf("%s of a subquery is not supported", e.Name)
		}
		window := time.Duration(r.Window.Duration(0)) * time.Millisecond
		ss, err := db.selectSeries(me)
		if err != nil {
			return value{}, err
		}
		var out value
		for _, s := range ss {
			var in []sample
			for _, x := range s.samples {
				if x.t.After(at.Add(-window)) && !x.t.After(at) && !math.IsNaN(x.v) {
					in = append(in, x)
				}
			}
			if len(in) < 2 {
				continue
			}
			v := extrapolatedRate(in, at.Add(-window), at, e.Name == "rate")
			out.v = append(out.v, vsample{labels: dropName(s.labels), v: v})
		}
		return out, nil
	case "absent":
		arg, err := db.evalExpr(e.Args[0], at)
		if err != nil {
			return value{}, err
		}
		if len(arg.v) > 0 {
			return value{}, nil
		}
		labels := map[string]string{}
		if arg.selector != nil && len(arg.selector.LabelFilterss) == 1 {
			for _, f := range arg.selector.LabelFilterss[0] {
				if !f.IsRegexp && !f.IsNegative && f.Label != "__name__" {
					labels[f.Label] = f.Value
				}
			}
		}
		return value{v: []vsample{{labels: labels, v: 1}}}, nil
	case "histogram_quantile":
		q, err := db.evalExpr(e.Args[0], at)
		if err != nil || !q.scalar {
			return value{}, fmt.Errorf("histogram_quantile: want a scalar quantile (%v)", err)
		}
		in, err := db.evalExpr(e.Args[1], at)
		if err != nil {
			return value{}, err
		}
		groups := map[string][]bucket{}
		glabels := map[string]map[string]string{}
		for _, s := range in.v {
			le, ok := s.labels["le"]
			if !ok {
				continue
			}
			var upper float64
			if le == "+Inf" {
				upper = math.Inf(1)
			} else if _, err := fmt.Sscan(le, &upper); err != nil {
				return value{}, err
			}
			l := dropName(s.labels)
			delete(l, "le")
			k := labelKey(l)
			groups[k] = append(groups[k], bucket{upper, s.v})
			glabels[k] = l
		}
		var out value
		for k, bs := range groups {
			sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
			out.v = append(out.v, vsample{labels: glabels[k], v: bucketQuantile(q.s, bs)})
		}
		return out, nil
	}
	return value{}, fmt.Errorf("function %s is not supported", e.Name)
}

// extrapolatedRate is Prometheus' (promql/functions.go extrapolatedRate) for counters.
func extrapolatedRate(in []sample, rangeStart, rangeEnd time.Time, isRate bool) float64 {
	first, last := in[0], in[len(in)-1]
	result := last.v - first.v
	prev := first.v
	for _, x := range in[1:] {
		if x.v < prev {
			result += prev // a counter reset
		}
		prev = x.v
	}
	sampled := last.t.Sub(first.t).Seconds()
	avg := sampled / float64(len(in)-1)
	toStart := first.t.Sub(rangeStart).Seconds()
	toEnd := rangeEnd.Sub(last.t).Seconds()
	threshold := avg * 1.1
	if toStart >= threshold {
		toStart = avg / 2
	}
	if result > 0 && first.v >= 0 {
		if toZero := sampled * (first.v / result); toZero < toStart {
			toStart = toZero
		}
	}
	if toEnd >= threshold {
		toEnd = avg / 2
	}
	factor := (sampled + toStart + toEnd) / sampled
	if isRate {
		factor /= rangeEnd.Sub(rangeStart).Seconds()
	}
	return result * factor
}

// bucket is one le bucket of a classic histogram.
type bucket struct{ le, count float64 }

// bucketQuantile is Prometheus' classic-histogram quantile (promql/quantile.go).
func bucketQuantile(q float64, bs []bucket) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(1)
	}
	if len(bs) < 2 || !math.IsInf(bs[len(bs)-1].le, 1) {
		return math.NaN()
	}
	total := bs[len(bs)-1].count
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	b := sort.Search(len(bs)-1, func(i int) bool { return bs[i].count >= rank })
	if b == len(bs)-1 {
		return bs[len(bs)-2].le
	}
	if b == 0 && bs[0].le <= 0 {
		return bs[0].le
	}
	start, end, count := 0.0, bs[b].le, bs[b].count
	if b > 0 {
		start = bs[b-1].le
		count -= bs[b-1].count
		rank -= bs[b-1].count
	}
	return start + (end-start)*(rank/count)
}

func dropName(l map[string]string) map[string]string {
	out := cloneLabels(l)
	delete(out, "__name__")
	return out
}

func (db *tsdb) evalAggr(e *metricsql.AggrFuncExpr, at time.Time) (value, error) {
	if len(e.Args) != 1 {
		return value{}, fmt.Errorf("%s takes one argument here", e.Name)
	}
	in, err := db.evalExpr(e.Args[0], at)
	if err != nil {
		return value{}, err
	}
	type group struct {
		labels map[string]string
		vals   []float64
	}
	groups := map[string]*group{}
	var order []string
	for _, s := range in.v {
		l := map[string]string{}
		switch e.Modifier.Op {
		case "by":
			for _, k := range e.Modifier.Args {
				if v, ok := s.labels[k]; ok {
					l[k] = v
				}
			}
		case "without":
			l = dropName(s.labels)
			for _, k := range e.Modifier.Args {
				delete(l, k)
			}
		case "":
		default:
			return value{}, fmt.Errorf("modifier %s", e.Modifier.Op)
		}
		k := labelKey(l)
		if groups[k] == nil {
			groups[k] = &group{labels: l}
			order = append(order, k)
		}
		groups[k].vals = append(groups[k].vals, s.v)
	}
	var out value
	for _, k := range order {
		g := groups[k]
		var r float64
		switch e.Name {
		case "sum", "avg":
			for _, v := range g.vals {
				r += v
			}
			if e.Name == "avg" {
				r /= float64(len(g.vals))
			}
		case "max":
			r = slices.Max(g.vals)
		case "min":
			r = slices.Min(g.vals)
		case "count":
			r = float64(len(g.vals))
		default:
			return value{}, fmt.Errorf("aggregation %s is not supported", e.Name)
		}
		out.v = append(out.v, vsample{labels: g.labels, v: r})
	}
	return out, nil
}

func compare(op string, a, b float64) (bool, bool) {
	switch op {
	case "==":
		return a == b, true
	case "!=":
		return a != b, true
	case ">":
		return a > b, true
	case "<":
		return a < b, true
	case ">=":
		return a >= b, true
	case "<=":
		return a <= b, true
	}
	return false, false
}

func arith(op string, a, b float64) (float64, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		return a / b, nil
	}
	return 0, fmt.Errorf("operator %s is not supported", op)
}

// signature is the labels a vector-vector operation matches on.
func signature(l map[string]string, mod metricsql.ModifierExpr) string {
	m := dropName(l)
	switch mod.Op {
	case "on":
		out := map[string]string{}
		for _, k := range mod.Args {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return labelKey(out)
	case "ignoring":
		for _, k := range mod.Args {
			delete(m, k)
		}
	}
	return labelKey(m)
}

func (db *tsdb) evalBinary(e *metricsql.BinaryOpExpr, at time.Time) (value, error) {
	if e.JoinModifier.Op != "" {
		return value{}, fmt.Errorf("group_left/group_right are not supported")
	}
	l, err := db.evalExpr(e.Left, at)
	if err != nil {
		return value{}, err
	}
	r, err := db.evalExpr(e.Right, at)
	if err != nil {
		return value{}, err
	}
	op := strings.ToLower(e.Op)
	switch op {
	case "and", "or", "unless":
		if l.scalar || r.scalar {
			return value{}, fmt.Errorf("%s needs vectors", op)
		}
		right := map[string]bool{}
		for _, s := range r.v {
			right[signature(s.labels, e.GroupModifier)] = true
		}
		var out value
		for _, s := range l.v {
			in := right[signature(s.labels, e.GroupModifier)]
			if (op == "and" && in) || (op == "unless" && !in) || op == "or" {
				out.v = append(out.v, s)
			}
		}
		if op == "or" {
			left := map[string]bool{}
			for _, s := range l.v {
				left[signature(s.labels, e.GroupModifier)] = true
			}
			for _, s := range r.v {
				if !left[signature(s.labels, e.GroupModifier)] {
					out.v = append(out.v, s)
				}
			}
		}
		return out, nil
	}
	apply := func(a, b float64, keep map[string]string, isComparison bool) (vsample, bool, error) {
		if cmp, ok := compare(op, a, b); ok {
			if e.Bool {
				v := 0.0
				if cmp {
					v = 1
				}
				return vsample{labels: dropName(keep), v: v}, true, nil
			}
			return vsample{labels: keep, v: a}, cmp, nil
		}
		v, err := arith(op, a, b)
		return vsample{labels: dropName(keep), v: v}, true, err
	}
	switch {
	case l.scalar && r.scalar:
		if cmp, ok := compare(op, l.s, r.s); ok {
			v := 0.0
			if cmp {
				v = 1
			}
			return value{scalar: true, s: v}, nil
		}
		v, err := arith(op, l.s, r.s)
		return value{scalar: true, s: v}, err
	case r.scalar:
		var out value
		for _, s := range l.v {
			x, keep, err := apply(s.v, r.s, s.labels, true)
			if err != nil {
				return value{}, err
			}
			if keep {
				out.v = append(out.v, x)
			}
		}
		return out, nil
	case l.scalar:
		var out value
		for _, s := range r.v {
			x, keep, err := apply(l.s, s.v, s.labels, true)
			if err != nil {
				return value{}, err
			}
			if keep {
				if _, isCmp := compare(op, 0, 0); isCmp && !e.Bool {
					x.v = s.v // a scalar-vector filter keeps the vector's value
				}
				out.v = append(out.v, x)
			}
		}
		return out, nil
	}
	right := map[string]vsample{}
	for _, s := range r.v {
		k := signature(s.labels, e.GroupModifier)
		if _, dup := right[k]; dup {
			return value{}, fmt.Errorf("many-to-one matching on %s: not supported", k)
		}
		right[k] = s
	}
	var out value
	for _, s := range l.v {
		m, ok := right[signature(s.labels, e.GroupModifier)]
		if !ok {
			continue
		}
		keep := s.labels
		if e.GroupModifier.Op == "on" {
			keep = map[string]string{}
			for _, k := range e.GroupModifier.Args {
				if v, ok := s.labels[k]; ok {
					keep[k] = v
				}
			}
		}
		x, ok, err := apply(s.v, m.v, keep, true)
		if err != nil {
			return value{}, err
		}
		if ok {
			out.v = append(out.v, x)
		}
	}
	return out, nil
}

// The evaluator agrees with Prometheus on the cases that decide whether an alert fires.
func TestPromEvaluator(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := map[string]string{"job": "slipway", "instance": "a"}
	var db tsdb
	for i := 0; i <= 10; i++ {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		text := fmt.Sprintf("x_total{outcome=\"ok\"} %d\nx_total{outcome=\"failed\"} %d\ng 5\n", i*2, i)
		if i >= 5 {
			text += "born_total 1\n"
		}
		db.scrape(t, at, text, target)
	}
	at := t0.Add(5 * time.Minute)
	for _, tc := range []struct {
		expr string
		want []float64
	}{
		{`rate(x_total{outcome="ok"}[5m])`, []float64{2.0 / 30}},   // extrapolated to the window: exactly the slope
		{`increase(x_total{outcome="failed"}[5m])`, []float64{10}}, // 9 over 270 s, extrapolated to 300 s
		{`increase(born_total[5m])`, []float64{0}},                 // a series born at 1 never increases
		{`increase(nothing_total[5m])`, nil},                       // no series
		{`sum(rate(nothing_total[5m])) == 0`, nil},                 // sum of nothing is nothing
		{`absent(nothing_total{job="slipway"})`, []float64{1}},     // absent's value
		{`absent(g)`, nil},                                                             // present
		{`g > 4`, []float64{5}},                                                        // a filter keeps the value
		{`g > bool 6`, []float64{0}},                                                   // bool gives 0 or 1
		{`sum(g) > 0 unless sum(nothing) > 0`, []float64{5}},                           // unless an empty vector keeps the left
		{`sum(g) > 0 and sum(nothing) == 0`, nil},                                      // and an empty vector keeps nothing
		{`sum by (outcome) (increase(x_total[5m])) > 15`, []float64{20}},               // by a label
		{`sum(x_total) / sum(g)`, []float64{(20 + 10) / 5.0}},                          // vector / vector, no labels
		{`max(x_total{outcome="ok"}) - min(x_total{outcome="failed"})`, []float64{10}}, // one-to-one
	} {
		got, err := db.eval(tc.expr, at)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		var vals []float64
		for _, s := range got {
			vals = append(vals, math.Round(s.v*1e9)/1e9)
		}
		want := tc.want
		for i := range want {
			want[i] = math.Round(want[i]*1e9) / 1e9
		}
		if !slices.Equal(vals, want) {
			t.Errorf("%s = %v, want %v", tc.expr, vals, want)
		}
	}
	// Staleness: a series missing from the last scrape is gone at once.
	db.scrape(t, at.Add(30*time.Second), "x_total{outcome=\"ok\"} 22\n", target)
	if got, _ := db.eval(`g`, at.Add(30*time.Second)); len(got) != 0 {
		t.Errorf("a series missing from the last scrape is still there: %v", got)
	}
	// histogram_quantile interpolates within the bucket.
	var h tsdb
	h.scrape(t, t0, "d_bucket{le=\"1\"} 0\nd_bucket{le=\"2\"} 0\nd_bucket{le=\"+Inf\"} 0\n", target)
	h.scrape(t, t0.Add(time.Minute), "d_bucket{le=\"1\"} 50\nd_bucket{le=\"2\"} 100\nd_bucket{le=\"+Inf\"} 100\n", target)
	got, err := h.eval(`histogram_quantile(0.75, sum by (le) (rate(d_bucket[5m])))`, t0.Add(time.Minute))
	if err != nil || len(got) != 1 || math.Abs(got[0].v-1.5) > 1e-9 {
		t.Errorf("histogram_quantile = %v %v, want 1.5", got, err)
	}
}
