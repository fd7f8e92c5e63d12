package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// The migration's deadlines nest: a lock wait (SLIPWAY_MIGRATE_LOCK_TIMEOUT) inside the retries
// (SLIPWAY_MIGRATE_TIMEOUT), inside the Job's activeDeadlineSeconds, inside helm's default
// --timeout of 5 minutes; docs/deploy.md says so beside the values. A deadline too short for the
// retries is refused.
func TestChartMigrationDeadlines(t *testing.T) {
	r := render(t)
	j := one(t, "Job", r.Jobs)
	env := map[string]string{}
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	lock, err1 := time.ParseDuration(env["SLIPWAY_MIGRATE_LOCK_TIMEOUT"])
	retry, err2 := time.ParseDuration(env["SLIPWAY_MIGRATE_TIMEOUT"])
	if err1 != nil || err2 != nil {
		t.Fatalf("the Job's SLIPWAY_MIGRATE_LOCK_TIMEOUT %q / SLIPWAY_MIGRATE_TIMEOUT %q", env["SLIPWAY_MIGRATE_LOCK_TIMEOUT"], env["SLIPWAY_MIGRATE_TIMEOUT"])
	}
	if j.Spec.ActiveDeadlineSeconds == nil {
		t.Fatal("the Job has no activeDeadlineSeconds")
	}
	deadline := time.Duration(*j.Spec.ActiveDeadlineSeconds) * time.Second
	const helmTimeout = 5 * time.Minute // helm install/upgrade --timeout's default
	if !(lock < retry && retry+30*time.Second <= deadline && deadline < helmTimeout) {
		t.Errorf("lock wait %s, retries %s, Job deadline %s, helm --timeout %s: want each (with 30 s to spare for the retries) below the next",
			lock, retry, deadline, helmTimeout)
	}
	// The Deployment's pods (which migrate with migrations.enabled=false) get the same settings.
	s := serverOf(t, r)
	for _, k := range []string{"SLIPWAY_MIGRATE_LOCK_TIMEOUT", "SLIPWAY_MIGRATE_TIMEOUT", "SLIPWAY_DB_MAX_CONNS", "SLIPWAY_ACCESS_LOG"} {
		if s.configMap.Data[k] == "" || s.configMap.Data[k] != env[k] {
			t.Errorf("%s: ConfigMap %q, Job %q", k, s.configMap.Data[k], env[k])
		}
	}
	if _, err := helm(t, "template", releaseName, chartDir(t), "--namespace", namespace, "--kube-version", kubeVersion,
		"--set", "migrations.activeDeadlineSeconds=120"); err == nil || !strings.Contains(err.Error(), "lockRetrySeconds") {
		t.Errorf("a Job deadline below the lock retries was accepted: %v", err)
	}
	deploy := readFile(t, filepath.Join(repoRoot(t), "docs", "deploy.md"))
	for _, want := range []string{"activeDeadlineSeconds", "--timeout", "lockRetrySeconds", "SLIPWAY_MIGRATE_LOCK_TIMEOUT"} {
		if !strings.Contains(deploy, want) {
			t.Errorf("docs/deploy.md does not explain %s beside the migration's deadlines", want)
		}
	}
}

// GitOps: Argo CD runs the migrate Secret and Job as Sync hooks in waves before the Deployment
// (after an ExternalSecret of an earlier wave exists), and deletes the Secret whether the sync
// succeeds or fails; Helm deletes its copy of the Secret on success and, through the pre-rollback
// and pre-delete hooks, after a failure too (--atomic's rollback, the next upgrade, uninstall).
func TestChartMigrationHooksForGitOps(t *testing.T) {
	r := render(t, "--set", "networkPolicy.enabled=true")
	j := one(t, "Job", r.Jobs)
	if j.Annotations["argocd.argoproj.io/hook"] != "Sync" {
		t.Errorf("Job argocd.argoproj.io/hook %q, want Sync (PreSync runs before an ExternalSecret of the app exists)", j.Annotations["argocd.argoproj.io/hook"])
	}
	jobWave, err := strconv.Atoi(j.Annotations["argocd.argoproj.io/sync-wave"])
	if err != nil || jobWave >= 0 {
		t.Errorf("Job sync-wave %q, want a wave before the Deployment's 0", j.Annotations["argocd.argoproj.io/sync-wave"])
	}
	sec := secretNamed(r, releaseName+"-migrate")
	if sec == nil {
		t.Fatal("no migrate Secret")
	}
	np := (*networkingv1.NetworkPolicy)(nil)
	for _, p := range r.NetworkPolicies {
		if p.Name == releaseName+"-migrate" {
			np = p
		}
	}
	if np == nil {
		t.Fatal("no NetworkPolicy for the migration Job")
	}
	for _, h := range []struct {
		name        string
		annotations map[string]string
	}{{"migrate Secret", sec.Annotations}, {"migrate NetworkPolicy", np.Annotations}} {
		hooks := strings.Split(h.annotations["helm.sh/hook"], ",")
		for _, want := range []string{"pre-install", "pre-upgrade", "pre-rollback", "pre-delete"} {
			if !contains(hooks, want) {
				t.Errorf("%s: helm.sh/hook %q lacks %s (a failed Job would leave it behind)", h.name, h.annotations["helm.sh/hook"], want)
			}
		}
		if h.annotations["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded,hook-failed" {
			t.Errorf("%s: helm.sh/hook-delete-policy %q", h.name, h.annotations["helm.sh/hook-delete-policy"])
		}
		w, _ := strconv.Atoi(h.annotations["helm.sh/hook-weight"])
		jw, _ := strconv.Atoi(j.Annotations["helm.sh/hook-weight"])
		if w >= jw {
			t.Errorf("%s: hook weight %d is not below the Job's %d", h.name, w, jw)
		}
		if h.annotations["argocd.argoproj.io/hook"] != "Sync" || h.annotations["argocd.argoproj.io/hook-delete-policy"] != "BeforeHookCreation,HookSucceeded,HookFailed" {
			t.Errorf("%s: Argo CD hook %q delete policy %q", h.name, h.annotations["argocd.argoproj.io/hook"], h.annotations["argocd.argoproj.io/hook-delete-policy"])
		}
		if wave, err := strconv.Atoi(h.annotations["argocd.argoproj.io/sync-wave"]); err != nil || wave >= jobWave {
			t.Errorf("%s: sync-wave %q, want one before the Job's %d", h.name, h.annotations["argocd.argoproj.io/sync-wave"], jobWave)
		}
	}
	// The Job itself is never a rollback or delete hook: those must not migrate.
	if hooks := j.Annotations["helm.sh/hook"]; strings.Contains(hooks, "rollback") || strings.Contains(hooks, "delete") {
		t.Errorf("the Job is a %s hook", hooks)
	}

	// The Job's NetworkPolicy: its pods, no ingress, egress to DNS and Postgres only.
	pod := j.Spec.Template
	if !selects(np.Spec.PodSelector.MatchLabels, pod.Labels) {
		t.Errorf("the migrate NetworkPolicy selects %v, not the Job's pods %v", np.Spec.PodSelector.MatchLabels, pod.Labels)
	}
	for _, other := range r.NetworkPolicies {
		if other != np && selects(other.Spec.PodSelector.MatchLabels, pod.Labels) {
			t.Errorf("NetworkPolicy %s also selects the Job's pods", other.Name)
		}
	}
	if len(np.Spec.Ingress) != 0 || !contains(policyTypes(np), "Ingress") {
		t.Errorf("the Job's pods accept ingress: %+v", np.Spec.Ingress)
	}
	ports := map[int32]bool{}
	for _, e := range np.Spec.Egress {
		for _, p := range e.Ports {
			ports[p.Port.IntVal] = true
		}
	}
	if !ports[53] || !ports[5432] || ports[443] || len(ports) != 2 {
		t.Errorf("the Job's egress ports %v, want DNS (53) and Postgres (5432) only", ports)
	}
	// No NetworkPolicy without networkPolicy.enabled, none for a Job that does not exist.
	if n := len(render(t, "--set", "networkPolicy.enabled=true", "--set", "migrations.enabled=false").NetworkPolicies); n != 1 {
		t.Errorf("%d NetworkPolicies without the Job, want the server's only", n)
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func policyTypes(np *networkingv1.NetworkPolicy) []string {
	var out []string
	for _, p := range np.Spec.PolicyTypes {
		out = append(out, string(p))
	}
	return out
}

// The HPA can scale on the upload slots in use (a per-pod custom metric) beside CPU.
func TestChartHPAOnUploadSlots(t *testing.T) {
	hpa := one(t, "HPA", render(t, "--set", "autoscaling.enabled=true").HPAs)
	for _, m := range hpa.Spec.Metrics {
		if m.Type == "Pods" {
			t.Errorf("a Pods metric without autoscaling.uploadSlots.enabled: %+v", m)
		}
	}
	hpa = one(t, "HPA", render(t, "--set", "autoscaling.enabled=true", "--set", "autoscaling.uploadSlots.enabled=true").HPAs)
	var cpu, slots bool
	for _, m := range hpa.Spec.Metrics {
		switch {
		case m.Type == "Resource" && m.Resource.Name == corev1.ResourceCPU:
			cpu = true
		case m.Type == "Pods" && m.Pods.Metric.Name == "slipway_upload_demand":
			slots = m.Pods.Target.AverageValue != nil && m.Pods.Target.AverageValue.String() == "8"
		}
	}
	if !cpu || !slots {
		t.Errorf("HPA metrics %+v: want CPU and slipway_upload_demand averaging 8 per pod", hpa.Spec.Metrics)
	}
	deploy := readFile(t, filepath.Join(repoRoot(t), "docs", "deploy.md"))
	for _, want := range []string{"prometheus-adapter", "KEDA", "slipway_upload_demand"} {
		if !strings.Contains(deploy, want) {
			t.Errorf("docs/deploy.md does not document %s for the upload-slot metric", want)
		}
	}
}

// NOTES.txt names the URL users reach: an HTTPRoute's hostname is one, so no note about the
// in-cluster URL then.
func TestChartNotesWithHTTPRoute(t *testing.T) {
	notes := func(args ...string) string {
		t.Helper()
		// helm template skips NOTES.txt: render a copy of the chart where a template renders it
		// (tpl, with the chart's named templates) into a YAML string.
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(chartDir(t))); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "templates", "NOTES.txt"), filepath.Join(dir, "NOTES.txt")); err != nil {
			t.Fatal(err)
		}
		wrapper := "notes: |\n{{ tpl (.Files.Get \"NOTES.txt\") . | indent 2 }}\n"
		if err := os.WriteFile(filepath.Join(dir, "templates", "notes-rendered.yaml"), []byte(wrapper), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := helm(t, append([]string{"template", releaseName, dir, "--namespace", namespace, "--kube-version", kubeVersion,
			"--show-only", "templates/notes-rendered.yaml"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Notes string }
		if err := yaml.Unmarshal([]byte(out), &v); err != nil || v.Notes == "" {
			t.Fatalf("rendered NOTES: %v\n%s", err, out)
		}
		return v.Notes
	}
	route := notes("--set", "httpRoute.enabled=true", "--set", "httpRoute.parentRefs[0].name=gw", "--set", "httpRoute.hostnames[0]=apps.example.com")
	if !strings.Contains(route, "https://apps.example.com") || strings.Contains(route, "in-cluster") {
		t.Errorf("NOTES with an HTTPRoute:\n%s", route)
	}
	if bare := notes(); !strings.Contains(bare, "in-cluster Service URL") {
		t.Errorf("NOTES without ingress or route does not warn about the in-cluster URL:\n%s", bare)
	}
}

// The base images are pinned by digest through the Dockerfile's two digest ARGs (make
// pin-images fills them): each FROM uses its ARG, and a filled ARG is a real sha256 digest.
func TestDockerfileBaseImageDigests(t *testing.T) {
	df := readFile(t, filepath.Join(repoRoot(t), "Dockerfile"))
	digest := regexp.MustCompile(`^@sha256:[0-9a-f]{64}$`)
	for _, arg := range []string{"GO_IMAGE_DIGEST", "RUNTIME_IMAGE_DIGEST"} {
		m := regexp.MustCompile(`(?m)^ARG ` + arg + `=(.*)$`).FindStringSubmatch(df)
		if m == nil {
			t.Errorf("Dockerfile declares no ARG %s", arg)
			continue
		}
		if v := strings.TrimSpace(m[1]); v != "" && !digest.MatchString(v) {
			t.Errorf("ARG %s=%q is not @sha256:<64 hex>", arg, v)
		}
		if !regexp.MustCompile(`(?m)^FROM .*\$\{` + arg + `\}`).MatchString(df) {
			t.Errorf("no FROM line uses ${%s}", arg)
		}
	}
	mk := readFile(t, filepath.Join(repoRoot(t), "Makefile"))
	for _, want := range []string{"pin-images:", "--sbom=true", "--provenance=mode=max"} {
		if !strings.Contains(mk, want) {
			t.Errorf("Makefile lacks %q", want)
		}
	}
}
