package deploy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// shutdownAfterDrain is what `slipway serve` may still take after SLIPWAY_DRAIN_TIMEOUT
// (cmd/slipway/serve.go): up to 5 s for the cancelled requests' connections to close, up to 30 s
// (handlerCleanupTimeout) for their handlers to clean up, and 5 s for the background loops and
// the exit. The chart adds it to terminationGracePeriodSeconds; TestGraceMarginMatchesServe
// checks it against the code.
const shutdownAfterDrain = (5 + 30 + 5) * time.Second

// The chart's margin follows the waits in cmd/slipway/serve.go: if they change, this fails and
// the chart's slipway.shutdownAfterDrainSeconds, the docs and shutdownAfterDrain must follow.
func TestGraceMarginMatchesServe(t *testing.T) {
	src := readFile(t, filepath.Join(repoRoot(t), "cmd", "slipway", "serve.go"))
	cleanup := regexp.MustCompile(`handlerCleanupTimeout\s*=\s*(\d+)\s*\*\s*time\.Second`).FindStringSubmatch(src)
	closeWait := regexp.MustCompile(`closeCtx,\s*\w+\s*:=\s*context\.WithTimeout\(context\.Background\(\),\s*(\d+)\s*\*\s*time\.Second\)`).FindStringSubmatch(src)
	if cleanup == nil || closeWait == nil {
		t.Fatalf("cmd/slipway/serve.go no longer declares handlerCleanupTimeout = N * time.Second and the close wait " +
			"closeCtx := context.WithTimeout(..., N*time.Second): find its waits after the drain and update the chart's " +
			"slipway.shutdownAfterDrainSeconds, docs/deploy.md and shutdownAfterDrain")
	}
	c, _ := strconv.Atoi(cleanup[1])
	w, _ := strconv.Atoi(closeWait[1])
	if got := time.Duration(c+w)*time.Second + 5*time.Second; got != shutdownAfterDrain {
		t.Errorf("serve.go waits %d s (close) + %d s (clean-up) after the drain, +5 s for the exit = %s; the chart's margin is %s",
			w, c, got, shutdownAfterDrain)
	}
	helpers := readFile(t, filepath.Join(chartDir(t), "templates", "_helpers.tpl"))
	if !strings.Contains(helpers, fmt.Sprintf("{{- add %d %d 5 }}", w, c)) {
		t.Errorf("templates/_helpers.tpl: slipway.shutdownAfterDrainSeconds is not {{- add %d %d 5 }}", w, c)
	}
}

// terminationGracePeriodSeconds = preStop + drain + 40 for any values, and the default drain fits a
// 2 GB single-request upload at 10 MB/s.
func TestChartGracePeriod(t *testing.T) {
	for _, tc := range []struct{ preStop, drain int }{{5, 240}, {0, 0}, {10, 600}, {0, 3600}} {
		r := render(t, "--set", fmt.Sprintf("lifecycle.preStopSleepSeconds=%d", tc.preStop), "--set", fmt.Sprintf("config.drainTimeoutSeconds=%d", tc.drain))
		s := checkServer(t, r)
		want := int64(tc.preStop+tc.drain) + int64(shutdownAfterDrain/time.Second)
		if got := *s.deploy.Spec.Template.Spec.TerminationGracePeriodSeconds; got != want {
			t.Errorf("preStop %d, drain %d: grace %d, want %d", tc.preStop, tc.drain, got, want)
		}
		if got := s.configMap.Data["SLIPWAY_DRAIN_TIMEOUT"]; got != fmt.Sprintf("%ds", tc.drain) {
			t.Errorf("SLIPWAY_DRAIN_TIMEOUT %q for drainTimeoutSeconds %d", got, tc.drain)
		}
	}
	drain := time.Duration(defaultDrainSeconds(t)) * time.Second
	upload := time.Duration(2e9/10e6) * time.Second // 2 GB at 10 MB/s
	if drain < upload {
		t.Errorf("default drain %s does not fit a 2 GB upload at 10 MB/s (%s)", drain, upload)
	}
}

// defaultDrainSeconds is config.drainTimeoutSeconds in values.yaml.
func defaultDrainSeconds(t *testing.T) int {
	t.Helper()
	var v struct {
		Config struct {
			DrainTimeoutSeconds int `json:"drainTimeoutSeconds"`
		} `json:"config"`
		Lifecycle struct {
			PreStopSleepSeconds int `json:"preStopSleepSeconds"`
		} `json:"lifecycle"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(chartDir(t), "values.yaml"))), &v); err != nil {
		t.Fatal(err)
	}
	return v.Config.DrainTimeoutSeconds
}

// The drain budget is one number: values.yaml, values.schema.json's default, the chart README's
// table and docs/deploy.md agree, and so does the grace period they quote.
func TestDrainBudgetIsOneNumber(t *testing.T) {
	drain := defaultDrainSeconds(t)
	grace := 5 + drain + int(shutdownAfterDrain/time.Second)
	var schema struct {
		Properties struct {
			Config struct {
				Properties struct {
					DrainTimeoutSeconds struct {
						Default int `json:"default"`
					} `json:"drainTimeoutSeconds"`
				} `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(chartDir(t), "values.schema.json"))), &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties.Config.Properties.DrainTimeoutSeconds.Default; got != drain {
		t.Errorf("values.schema.json: drainTimeoutSeconds default %d, values.yaml %d", got, drain)
	}
	readme := readFile(t, filepath.Join(chartDir(t), "README.md"))
	if row := fmt.Sprintf("| `config.drainTimeoutSeconds` | `%d` |", drain); !strings.Contains(readme, row) {
		t.Errorf("charts/slipway/README.md has no row %q", row)
	}
	docs := readFile(t, filepath.Join(repoRoot(t), "docs", "deploy.md"))
	for _, want := range []string{
		fmt.Sprintf("`config.drainTimeoutSeconds`, %d s by default", drain),
		fmt.Sprintf("%d s by default", grace),
	} {
		if !strings.Contains(docs, want) {
			t.Errorf("docs/deploy.md does not say %q", want)
		}
	}
	for name, text := range map[string]string{"README.md": readme, "docs/deploy.md": docs} {
		if !strings.Contains(text, "+ 40") {
			t.Errorf("%s does not give the grace period as preStopSleepSeconds + drainTimeoutSeconds + 40", name)
		}
		for _, stale := range []string{"drainTimeoutSeconds + 10", "| `30` | `SLIPWAY_DRAIN_TIMEOUT"} {
			if strings.Contains(text, stale) {
				t.Errorf("%s still says %q", name, stale)
			}
		}
	}
}

// Replicas spread by default (soft anti-affinity on the hostname, topology spread over zones and
// nodes); each part can be changed or replaced.
func TestChartSpread(t *testing.T) {
	podLabels := func(s server) map[string]string { return s.deploy.Spec.Template.Labels }

	t.Run("defaults", func(t *testing.T) {
		r := render(t)
		s := checkServer(t, r)
		pod := s.deploy.Spec.Template.Spec
		if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil {
			t.Fatal("no podAntiAffinity by default")
		}
		aa := pod.Affinity.PodAntiAffinity
		if len(aa.RequiredDuringSchedulingIgnoredDuringExecution) != 0 || len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
			t.Fatalf("anti-affinity %+v: want one preferred (soft) term", aa)
		}
		term := aa.PreferredDuringSchedulingIgnoredDuringExecution[0]
		if term.Weight != 100 || term.PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
			t.Errorf("soft anti-affinity weight %d on %q, want 100 on kubernetes.io/hostname", term.Weight, term.PodAffinityTerm.TopologyKey)
		}
		if ls := term.PodAffinityTerm.LabelSelector; ls == nil || !selects(ls.MatchLabels, podLabels(s)) {
			t.Error("the anti-affinity term does not select Slipway's own pods")
		}
		job := one(t, "Job", r.Jobs)
		if jl := job.Spec.Template.Labels; term.PodAffinityTerm.LabelSelector != nil && selects(term.PodAffinityTerm.LabelSelector.MatchLabels, jl) {
			t.Error("the anti-affinity term also selects the migration job's pods")
		}
		if job.Spec.Template.Spec.Affinity != nil {
			t.Error("the migration job got the server's anti-affinity")
		}
		tsc := pod.TopologySpreadConstraints
		var keys []string
		for _, c := range tsc {
			keys = append(keys, c.TopologyKey)
			if c.MaxSkew != 1 || c.WhenUnsatisfiable != corev1.ScheduleAnyway {
				t.Errorf("%s: maxSkew %d, %s; want 1, ScheduleAnyway", c.TopologyKey, c.MaxSkew, c.WhenUnsatisfiable)
			}
			if c.LabelSelector == nil || !selects(c.LabelSelector.MatchLabels, podLabels(s)) {
				t.Errorf("%s: the constraint does not select Slipway's pods", c.TopologyKey)
			}
			if !reflect.DeepEqual(c.MatchLabelKeys, []string{"pod-template-hash"}) {
				t.Errorf("%s: matchLabelKeys %v, want [pod-template-hash] (a rollout's old pods must not count)", c.TopologyKey, c.MatchLabelKeys)
			}
		}
		if !reflect.DeepEqual(keys, []string{"topology.kubernetes.io/zone", "kubernetes.io/hostname"}) {
			t.Errorf("topology spread keys %v, want zone then hostname", keys)
		}
	})

	t.Run("hard", func(t *testing.T) {
		s := checkServer(t, render(t, "--set", "spread.antiAffinity.type=hard", "--set", "spread.topologySpread.whenUnsatisfiable=DoNotSchedule"))
		aa := s.deploy.Spec.Template.Spec.Affinity.PodAntiAffinity
		if len(aa.RequiredDuringSchedulingIgnoredDuringExecution) != 1 || len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 0 ||
			aa.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != "kubernetes.io/hostname" {
			t.Errorf("hard anti-affinity %+v", aa)
		}
		for _, c := range s.deploy.Spec.Template.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				t.Errorf("%s: %s", c.TopologyKey, c.WhenUnsatisfiable)
			}
		}
	})

	t.Run("off", func(t *testing.T) {
		s := checkServer(t, render(t, "--set", "spread.antiAffinity.type=none", "--set", "spread.topologySpread.enabled=false"))
		if pod := s.deploy.Spec.Template.Spec; pod.Affinity != nil || pod.TopologySpreadConstraints != nil {
			t.Errorf("spreading off, yet affinity %+v, constraints %+v", pod.Affinity, pod.TopologySpreadConstraints)
		}
	})

	t.Run("overridden", func(t *testing.T) {
		// ci/full-values.yaml sets its own affinity and topologySpreadConstraints: they replace the defaults.
		r := render(t, "-f", fullValues(t))
		pod := one(t, "Deployment", r.Deployments).Spec.Template.Spec
		aa := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		if len(aa) != 1 || aa[0].PodAffinityTerm.LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "" {
			t.Errorf("affinity %+v is not exactly the values' own", pod.Affinity)
		}
		if len(pod.TopologySpreadConstraints) != 1 || pod.TopologySpreadConstraints[0].TopologyKey != "topology.kubernetes.io/zone" ||
			pod.TopologySpreadConstraints[0].MatchLabelKeys != nil {
			t.Errorf("topologySpreadConstraints %+v are not exactly the values' own", pod.TopologySpreadConstraints)
		}
	})
}

// existingSecret with other key names, and a checksum value that rolls the pods when it changes.
func TestChartExistingSecretKeys(t *testing.T) {
	keys := map[string]string{
		"SLIPWAY_DATABASE_URL":       "database-url",
		"SLIPWAY_SECRET":             "signing-key",
		"SLIPWAY_SECRET_PREVIOUS":    "previous-signing-keys",
		"AWS_ACCESS_KEY_ID":          "s3.access-key",
		"AWS_SECRET_ACCESS_KEY":      "s3.secret-key",
		"SLIPWAY_OIDC_CLIENT_SECRET": "oidc_client_secret",
	}
	args := []string{"--set", "existingSecret=vault-slipway",
		"--set", "existingSecretKeys.databaseURL=database-url",
		"--set", "existingSecretKeys.secret=signing-key",
		"--set", "existingSecretKeys.secretPrevious=previous-signing-keys",
		"--set", "existingSecretKeys.awsAccessKeyID=s3.access-key",
		"--set", "existingSecretKeys.awsSecretAccessKey=s3.secret-key",
		"--set", "existingSecretKeys.oidcClientSecret=oidc_client_secret",
		"--set", "deploymentAnnotations.secret\\.reloader\\.stakater\\.com/reload=vault-slipway",
	}
	r := render(t, args...)
	s := checkServer(t, r)
	checkMigrationJob(t, r, s)
	job := one(t, "Job", r.Jobs)
	for _, c := range []corev1.Container{s.container, job.Spec.Template.Spec.Containers[0]} {
		seen := map[string]bool{}
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			if ref.Name != "vault-slipway" || ref.Key != keys[e.Name] {
				t.Errorf("%s: %s reads %s/%s, want vault-slipway/%s", c.Name, e.Name, ref.Name, ref.Key, keys[e.Name])
			}
			seen[e.Name] = true
		}
		if len(seen) != len(keys) {
			t.Errorf("%s reads %v from the Secret, want %v", c.Name, sortedKeys(seen), sortedKeys(keys))
		}
	}
	if _, ok := s.deploy.Spec.Template.Annotations["checksum/secret"]; ok {
		t.Error("checksum/secret without existingSecretChecksum")
	}
	if got := s.deploy.Annotations["secret.reloader.stakater.com/reload"]; got != "vault-slipway" {
		t.Errorf("deploymentAnnotations not applied to the Deployment: %v", s.deploy.Annotations)
	}
	// The checksum value rolls the pods: a new value, a new pod template.
	a := one(t, "Deployment", render(t, append(args, "--set", "existingSecretChecksum=v1")...).Deployments).Spec.Template.Annotations
	b := one(t, "Deployment", render(t, append(args, "--set", "existingSecretChecksum=v2")...).Deployments).Spec.Template.Annotations
	if a["checksum/secret"] != "v1" || b["checksum/secret"] != "v2" {
		t.Errorf("checksum/secret %q and %q, want v1 and v2", a["checksum/secret"], b["checksum/secret"])
	}
	// The chart's own Secret keeps the variable names as keys, whatever existingSecretKeys says.
	own := render(t, "--set", "existingSecretKeys.secret=ignored")
	for _, e := range serverOf(t, own).container.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Key != e.Name {
			t.Errorf("with the chart's Secret, %s reads key %s", e.Name, e.ValueFrom.SecretKeyRef.Key)
		}
	}
}

// The NetworkPolicy is off by default; on, it selects only the server pods, admits the ingress
// controller to http, Prometheus to the metrics port and the helm test pod, and lets the pods
// reach DNS, Postgres and HTTPS only.
func TestChartNetworkPolicy(t *testing.T) {
	if n := len(render(t).NetworkPolicies); n != 0 {
		t.Fatalf("%d NetworkPolicies by default, want none (off by default)", n)
	}
	r := render(t, "--set", "networkPolicy.enabled=true")
	s := checkServer(t, r)
	np := serverNetworkPolicy(t, r)
	if !selects(np.Spec.PodSelector.MatchLabels, s.deploy.Spec.Template.Labels) {
		t.Error("the NetworkPolicy does not select the server pods")
	}
	if selects(np.Spec.PodSelector.MatchLabels, one(t, "Job", r.Jobs).Spec.Template.Labels) {
		t.Error("the NetworkPolicy selects the migration job's pods")
	}
	if !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("policyTypes %v", np.Spec.PolicyTypes)
	}
	metricsPort := "metrics" // the internal port (slipway.metricsPortName)
	portNamed(t, s.container, metricsPort)
	testPod := one(t, "Pod", r.Pods)
	var fromIngress, fromMonitoring, fromTest bool
	for _, rule := range np.Spec.Ingress {
		if len(rule.From) == 0 {
			t.Errorf("an ingress rule without peers admits every source: %+v", rule)
		}
		for _, p := range rule.Ports {
			if p.Port == nil || p.Port.Type != intstr.String {
				t.Errorf("ingress port %v: want a named container port", p.Port)
			}
		}
		for _, peer := range rule.From {
			switch {
			case peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "ingress-nginx":
				fromIngress = rule.Ports[0].Port.StrVal == "http"
			case peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "monitoring":
				fromMonitoring = rule.Ports[0].Port.StrVal == metricsPort
			case peer.PodSelector != nil && peer.NamespaceSelector == nil:
				fromTest = selects(peer.PodSelector.MatchLabels, testPod.Labels) && !selects(peer.PodSelector.MatchLabels, s.deploy.Spec.Template.Labels)
			}
		}
	}
	if !fromIngress || !fromMonitoring || !fromTest {
		t.Errorf("ingress rules: from the ingress controller %v, from monitoring %v, from the helm test pod %v; want all", fromIngress, fromMonitoring, fromTest)
	}
	egress := map[string]bool{}
	for _, rule := range np.Spec.Egress {
		for _, p := range rule.Ports {
			egress[fmt.Sprintf("%s/%s", *p.Protocol, p.Port.String())] = true
		}
		if len(rule.Ports) > 0 && rule.Ports[0].Port.IntValue() == 53 {
			if len(rule.To) != 1 || rule.To[0].PodSelector == nil || rule.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" {
				t.Errorf("DNS egress to %+v, want the cluster DNS", rule.To)
			}
		}
	}
	if !reflect.DeepEqual(sortedKeys(egress), []string{"TCP/443", "TCP/53", "TCP/5432", "UDP/53"}) {
		t.Errorf("egress ports %v", sortedKeys(egress))
	}

	// Empty peer lists leave the rules out rather than admitting everyone; no DNS rule with dns: [].
	r = render(t, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.ingress.from=null",
		"--set", "networkPolicy.ingress.monitoringFrom=null", "--set", "tests.enabled=false", "--set", "networkPolicy.egress.dns=null")
	np = serverNetworkPolicy(t, r)
	if len(np.Spec.Ingress) != 0 {
		t.Errorf("ingress rules %+v with every peer list empty, want none (deny)", np.Spec.Ingress)
	}
	for _, rule := range np.Spec.Egress {
		for _, p := range rule.Ports {
			if p.Port.IntValue() == 53 {
				t.Error("a DNS rule although egress.dns is empty")
			}
		}
	}

	// ci/full-values.yaml: the user's peers, extra rules and egress targets.
	r = render(t, "-f", fullValues(t))
	np = serverNetworkPolicy(t, r)
	var cidrs []string
	for _, rule := range np.Spec.Ingress {
		for _, peer := range rule.From {
			if peer.IPBlock != nil {
				cidrs = append(cidrs, "in:"+peer.IPBlock.CIDR)
			}
		}
	}
	for _, rule := range np.Spec.Egress {
		for _, peer := range rule.To {
			if peer.IPBlock != nil {
				cidrs = append(cidrs, "out:"+peer.IPBlock.CIDR)
			}
		}
	}
	if want := []string{"in:10.20.0.0/16", "out:10.30.0.0/24", "out:10.40.0.0/28", "out:169.254.170.23/32"}; !reflect.DeepEqual(sortedStrings(cidrs), want) {
		t.Errorf("ipBlocks %v, want %v", cidrs, want)
	}
}

// The PrometheusRule: off by default; on, every alert parses as PromQL, uses only metrics Slipway
// exports (or kube-state-metrics' and Prometheus' own), is scoped to the release, and the
// alerts docs/operations.md documents are all there.
func TestChartPrometheusRule(t *testing.T) {
	if n := len(render(t).PrometheusRules); n != 0 {
		t.Fatalf("%d PrometheusRules by default, want none", n)
	}
	known := knownMetrics(t)
	r := render(t, "--set", "prometheusRule.enabled=true")
	pr := one(t, "PrometheusRule", r.PrometheusRules)
	if len(pr.Spec.Groups) != 1 {
		t.Fatalf("%d rule groups", len(pr.Spec.Groups))
	}
	alerts := map[string]bool{}
	used := map[string]bool{}
	for _, rule := range pr.Spec.Groups[0].Rules {
		if rule.Alert == "" || alerts[rule.Alert] {
			t.Errorf("rule %q: empty or duplicate alert name", rule.Alert)
		}
		alerts[rule.Alert] = true
		for _, m := range checkPromQL(t, rule.Alert, rule.Expr, known) {
			used[m] = true
		}
		if sev := rule.Labels["severity"]; sev != "critical" && sev != "warning" {
			t.Errorf("%s: severity %q", rule.Alert, sev)
		}
		if rule.Annotations["summary"] == "" || rule.Annotations["description"] == "" {
			t.Errorf("%s: no summary or description", rule.Alert)
		}
		if rule.For != "" {
			if _, err := time.ParseDuration(rule.For); err != nil {
				t.Errorf("%s: for %q: %v", rule.Alert, rule.For, err)
			}
		}
		// Scoped to this release: every series selector names the namespace.
		for _, sel := range regexp.MustCompile(`[a-z_]+\{[^}]*\}`).FindAllString(rule.Expr, -1) {
			if !strings.Contains(sel, `namespace="apps"`) {
				t.Errorf("%s: %s is not scoped to the release's namespace", rule.Alert, sel)
			}
		}
	}
	// The alerts docs/operations.md documents, and the ones the issue asks for.
	ops := readFile(t, filepath.Join(repoRoot(t), "docs", "operations.md"))
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\w+)`).FindAllStringSubmatch(ops, -1) {
		if !alerts[m[1]] {
			t.Errorf("docs/operations.md documents alert %s; the PrometheusRule lacks it", m[1])
		}
	}
	for _, name := range []string{"SlipwayNoReadyReplicas", "SlipwayWebhooksFailing", "SlipwayServiceUnavailableRate", "SlipwayRequestsUnanswered", "SlipwayCollectorFailing"} {
		if !alerts[name] {
			t.Errorf("no alert %s", name)
		}
	}
	if !strings.Contains(prExpr(pr, "SlipwayRequestsUnanswered"), `outcome=~"unanswered|cut"`) {
		t.Errorf("SlipwayRequestsUnanswered does not watch the unanswered and cut connections: %s", prExpr(pr, "SlipwayRequestsUnanswered"))
	}
	t.Logf("%d alerts over %d metrics", len(alerts), len(used))

	// Values: labels, alert labels, runbooks, a disabled alert, extra rules, another selector.
	r = render(t, "-f", fullValues(t), "--set", `prometheusRule.selector=service="slipway-api"`)
	pr = one(t, "PrometheusRule", r.PrometheusRules)
	if pr.Labels["release"] != "kube-prometheus-stack" {
		t.Error("prometheusRule.labels not applied")
	}
	names := map[string]bool{}
	for _, rule := range pr.Spec.Groups[0].Rules {
		names[rule.Alert] = true
		if rule.Alert == "SlipwayNoDownloads" {
			continue
		}
		if rule.Labels["team"] != "mobile-platform" || !strings.HasPrefix(rule.Annotations["runbook_url"], "https://wiki.example.com/slipway/runbooks#slipway") {
			t.Errorf("%s: labels %v, runbook %q", rule.Alert, rule.Labels, rule.Annotations["runbook_url"])
		}
		if strings.HasPrefix(rule.Expr, "sum(rate(slipway_") && !strings.Contains(rule.Expr, `service="slipway-api"`) {
			t.Errorf("%s: the selector value is not used: %s", rule.Alert, rule.Expr)
		}
		checkPromQL(t, rule.Alert, rule.Expr, known)
	}
	if names["SlipwaySlowReads"] || !names["SlipwayNoDownloads"] {
		t.Errorf("disabled/extra rules not applied: %v", sortedKeys(names))
	}
}

func prExpr(pr *prometheusRule, alert string) string {
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == alert {
				return r.Expr
			}
		}
	}
	return ""
}

// The Grafana dashboard: one file in two places (the chart can only read its own folder), valid
// JSON whose every query parses and uses exported metrics; the ConfigMap carries it with the
// sidecar's label.
func TestGrafanaDashboard(t *testing.T) {
	docPath := filepath.Join(repoRoot(t), "docs", "monitoring", "grafana-dashboard.json")
	doc, chart := readFile(t, docPath), readFile(t, filepath.Join(chartDir(t), "dashboards", "slipway.json"))
	if doc != chart {
		t.Fatal("docs/monitoring/grafana-dashboard.json and charts/slipway/dashboards/slipway.json differ: copy one over the other")
	}
	var dash struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			ID      int    `json:"id"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(doc), &dash); err != nil {
		t.Fatalf("%s: %v", docPath, err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Error("the dashboard has no uid or title")
	}
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	for _, v := range []string{"datasource", "namespace", "job"} {
		if !vars[v] {
			t.Errorf("no dashboard variable %s", v)
		}
	}
	known := knownMetrics(t)
	ids := map[int]bool{}
	var queries int
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			queries++
			if !strings.Contains(target.Expr, `namespace="$namespace"`) {
				t.Errorf("panel %q: %s ignores the namespace variable", p.Title, target.Expr)
			}
			expr := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m").Replace(target.Expr)
			for _, m := range checkPromQL(t, "panel "+p.Title, expr, known) {
				used[m] = true
			}
		}
	}
	if !used["slipway_http_connections_closed_total"] || !used["slipway_uploads_refused_total"] {
		t.Error("the dashboard misses the connection outcomes or the refused uploads")
	}
	t.Logf("%d panels, %d queries, %d metrics", len(dash.Panels), queries, len(used))

	if n := len(render(t).ConfigMaps); n != 1 {
		t.Errorf("%d ConfigMaps by default, want 1 (no dashboard)", n)
	}
	r := render(t, "--set", "grafanaDashboard.enabled=true", "--set", "grafanaDashboard.namespace=grafana")
	var cm *corev1.ConfigMap
	for _, c := range r.ConfigMaps {
		if strings.HasSuffix(c.Name, "-dashboard") {
			cm = c
		}
	}
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "grafana" {
		t.Errorf("dashboard ConfigMap labels %v, namespace %q", cm.Labels, cm.Namespace)
	}
	if strings.TrimSpace(cm.Data["slipway.json"]) != strings.TrimSpace(doc) {
		t.Error("the ConfigMap's slipway.json differs from the dashboard file")
	}
}

// The HTTPRoute: off by default; on, attached to the given Gateways, answering the hostnames, sending
// everything to the Service's port; timeouts only when asked for; parentRefs required.
func TestChartHTTPRoute(t *testing.T) {
	if n := len(render(t).HTTPRoutes); n != 0 {
		t.Fatalf("%d HTTPRoutes by default", n)
	}
	r := render(t, "--set", "httpRoute.enabled=true", "--set", "httpRoute.parentRefs[0].name=public",
		"--set", "httpRoute.parentRefs[0].namespace=gateways", "--set", "httpRoute.hostnames[0]=apps.example.com")
	s := checkServer(t, r)
	cfg := checkConfigLoads(t, r, s)
	route := one(t, "HTTPRoute", r.HTTPRoutes)
	svc := one(t, "Service", r.Services)
	if len(route.Spec.ParentRefs) != 1 || route.Spec.ParentRefs[0].Name != "public" || route.Spec.ParentRefs[0].Namespace == nil || *route.Spec.ParentRefs[0].Namespace != "gateways" {
		t.Errorf("parentRefs %+v", route.Spec.ParentRefs)
	}
	if !reflect.DeepEqual(route.Spec.Hostnames, []string{"apps.example.com"}) {
		t.Errorf("hostnames %v", route.Spec.Hostnames)
	}
	if len(route.Spec.Rules) != 1 {
		t.Fatalf("%d rules", len(route.Spec.Rules))
	}
	rule := route.Spec.Rules[0]
	if len(rule.BackendRefs) != 1 || rule.BackendRefs[0].Name != svc.Name || rule.BackendRefs[0].Port == nil || *rule.BackendRefs[0].Port != svc.Spec.Ports[0].Port {
		t.Errorf("backendRefs %+v, want Service %s port %d", rule.BackendRefs, svc.Name, svc.Spec.Ports[0].Port)
	}
	if len(rule.Matches) != 1 || rule.Matches[0].Path == nil || rule.Matches[0].Path.Type != "PathPrefix" || rule.Matches[0].Path.Value != "/" {
		t.Errorf("matches %+v, want PathPrefix /", rule.Matches)
	}
	if rule.Timeouts != nil {
		t.Errorf("timeouts %+v by default: NGINX Gateway Fabric refuses rules that set them", rule.Timeouts)
	}
	if cfg.PublicURL != "https://apps.example.com" {
		t.Errorf("SLIPWAY_PUBLIC_URL %q, want https://apps.example.com from the route's hostname", cfg.PublicURL)
	}

	// Full values: filters and timeouts pass through, beside the Ingress.
	r = render(t, "-f", fullValues(t))
	route = one(t, "HTTPRoute", r.HTTPRoutes)
	one(t, "Ingress", r.Ingresses)
	rule = route.Spec.Rules[0]
	if rule.Timeouts == nil || rule.Timeouts.Request != "0s" || len(rule.Filters) != 1 || rule.Filters[0]["type"] != "RequestHeaderModifier" {
		t.Errorf("timeouts %+v, filters %v", rule.Timeouts, rule.Filters)
	}
	if route.Annotations["example.com/route"] != "slipway" || route.Spec.ParentRefs[0].SectionName == nil {
		t.Errorf("annotations %v, parentRefs %+v", route.Annotations, route.Spec.ParentRefs)
	}

	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"httpRoute.enabled=true"}, "parentRefs"},
		{[]string{"httpRoute.enabled=true", "httpRoute.parentRefs[0].name=gw", "httpRoute.timeouts.request=15 seconds"}, "request"},
	} {
		args := []string{"template", releaseName, chartDir(t), "--namespace", namespace, "--kube-version", kubeVersion}
		for _, s := range tc.sets {
			args = append(args, "--set", s)
		}
		if _, err := helm(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want an error mentioning %q, got %v", tc.sets, tc.want, err)
		}
	}
}

// `helm test`: a hook pod, hardened like Slipway's, that fetches /healthz and /api/version through
// the Service.
func TestChartHelmTestPod(t *testing.T) {
	r := render(t)
	s := checkServer(t, r)
	pod := one(t, "Pod", r.Pods)
	if pod.Annotations["helm.sh/hook"] != "test" {
		t.Errorf("helm.sh/hook %q, want test", pod.Annotations["helm.sh/hook"])
	}
	if pod.Annotations["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
		t.Errorf("hook-delete-policy %q", pod.Annotations["helm.sh/hook-delete-policy"])
	}
	spec := pod.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q", spec.RestartPolicy)
	}
	if !reflect.DeepEqual(spec.SecurityContext, s.deploy.Spec.Template.Spec.SecurityContext) {
		t.Errorf("pod securityContext %+v differs from Slipway's %+v", spec.SecurityContext, s.deploy.Spec.Template.Spec.SecurityContext)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken || spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("the test pod mounts an API token or gets service links")
	}
	c := one(t, "test container", spec.Containers)
	checkContainerHardening(t, c.Name, c)
	if !reflect.DeepEqual(c.SecurityContext, s.container.SecurityContext) {
		t.Errorf("container securityContext %+v differs from Slipway's", c.SecurityContext)
	}
	if c.Image != "curlimages/curl:8.20.0" {
		t.Errorf("image %q", c.Image)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Error("no memory limit on the test container")
	}
	svc := one(t, "Service", r.Services)
	base := fmt.Sprintf("http://%s.%s.svc:%d", svc.Name, namespace, svc.Spec.Ports[0].Port)
	args := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
	for _, want := range []string{"curl", "--fail", "--fail-early", base + "/healthz", base + "/api/version"} {
		if !strings.Contains(args, want) {
			t.Errorf("test command %q lacks %q", args, want)
		}
	}

	// Pinned by digest, and switched off.
	digest := "sha256:" + strings.Repeat("ab", 32)
	r = render(t, "--set", "tests.image.digest="+digest)
	if got := one(t, "Pod", r.Pods).Spec.Containers[0].Image; got != "curlimages/curl@"+digest {
		t.Errorf("pinned image %q", got)
	}
	if n := len(render(t, "--set", "tests.enabled=false").Pods); n != 0 {
		t.Errorf("%d test pods with tests.enabled=false", n)
	}
}

// The values.yaml sizing comment and the chart README agree (issue 26, point 10): both give the
// shared part-buffer budget, not per-upload buffers.
func TestSizingCommentsAgree(t *testing.T) {
	values := readFile(t, filepath.Join(chartDir(t), "values.yaml"))
	readme := readFile(t, filepath.Join(chartDir(t), "README.md"))
	formula := "40 + 64 + 128 + 16 x 3 = 280 MiB"
	if !strings.Contains(values, formula) {
		t.Errorf("values.yaml's resources comment does not give %q", formula)
	}
	if !strings.Contains(readme, "40 + 64 + 128 + 16 × 3 = 280 MiB") {
		t.Error("the chart README's Sizing does not give 40 + 64 + 128 + 16 × 3 = 280 MiB")
	}
	for _, stale := range []string{"16 x 24", "(concurrency+1) x"} {
		if strings.Contains(values, stale) {
			t.Errorf("values.yaml still sizes memory per upload (%q)", stale)
		}
	}
}

// The internal port (issue 26, #6): by default /metrics and the detailed readiness are served on
// a port of their own (SLIPWAY_INTERNAL_ADDR), which the Service names `metrics` and the
// ServiceMonitor and the NetworkPolicy's monitoring rule use; the Ingress routes to http only.
// internalPort 0 puts them back on the http port. With the hook Job migrating, the pods do not
// (SLIPWAY_MIGRATE_ON_START=false); without it, they do.
func TestChartInternalPort(t *testing.T) {
	r := render(t, "--set", "serviceMonitor.enabled=true", "--set", "networkPolicy.enabled=true", "--set", "ingress.enabled=true")
	s := checkServer(t, r)
	cfg := checkConfigLoads(t, r, s)
	port := portNamed(t, s.container, "metrics")
	if cfg.InternalAddr != fmt.Sprintf(":%d", port) || port == portNamed(t, s.container, "http") {
		t.Errorf("SLIPWAY_INTERNAL_ADDR %q, metrics container port %d: want the same, apart from http", cfg.InternalAddr, port)
	}
	if cfg.MigrateOnStart {
		t.Error("SLIPWAY_MIGRATE_ON_START is true although the hook Job migrates")
	}
	if sm := one(t, "ServiceMonitor", r.ServiceMonitors); sm.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("ServiceMonitor scrapes port %q, want metrics", sm.Spec.Endpoints[0].Port)
	}
	for _, ing := range r.Ingresses {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if p.Backend.Service == nil || p.Backend.Service.Port.Name != "http" {
					t.Errorf("Ingress path %s goes to %+v, want port http only", p.Path, p.Backend.Service)
				}
			}
		}
	}
	if len(r.Ingresses) == 0 {
		t.Error("no Ingress rendered")
	}
	np := serverNetworkPolicy(t, r)
	monitoring := false
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			monitoring = monitoring || p.Port.StrVal == "metrics"
		}
	}
	if !monitoring {
		t.Error("the NetworkPolicy admits no one to the metrics port")
	}

	r = render(t, "--set", "internalPort=0", "--set", "migrations.enabled=false", "--set", "serviceMonitor.enabled=true")
	s = checkServer(t, r)
	cfg = checkConfigLoads(t, r, s)
	if cfg.InternalAddr != "" || !cfg.MigrateOnStart {
		t.Errorf("internalPort=0, no hook Job: SLIPWAY_INTERNAL_ADDR %q, MigrateOnStart %v; want empty and true", cfg.InternalAddr, cfg.MigrateOnStart)
	}
	for _, p := range s.container.Ports {
		if p.Name == "metrics" {
			t.Error("a metrics port although internalPort is 0")
		}
	}
	if sm := one(t, "ServiceMonitor", r.ServiceMonitors); sm.Spec.Endpoints[0].Port != "http" {
		t.Errorf("internalPort=0: the ServiceMonitor scrapes %q, want http", sm.Spec.Endpoints[0].Port)
	}
}

// serverNetworkPolicy is the NetworkPolicy of the server pods (the migration Job has its own,
// TestChartMigrationHooksForGitOps).
func serverNetworkPolicy(t *testing.T, r *rendered) *networkingv1.NetworkPolicy {
	t.Helper()
	var out []*networkingv1.NetworkPolicy
	for _, np := range r.NetworkPolicies {
		if np.Name == releaseName {
			out = append(out, np)
		}
	}
	return one(t, "server NetworkPolicy", out)
}
