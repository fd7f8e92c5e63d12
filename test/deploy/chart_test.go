// Package deploy tests Slipway's deployment artefacts: the Helm chart (charts/slipway), the
// Dockerfile and the compose file (deploy/). The chart tests run Helm (see helmBinary) and decode
// every rendered manifest strictly into the Kubernetes API types, so a misspelt field, a field at
// the wrong level or a wrong type fails here rather than at `kubectl apply`.
package deploy

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/repokey"
)

func fullValues(t testing.TB) string { return filepath.Join(chartDir(t), "ci", "full-values.yaml") }

func TestHelmLint(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default values", nil},
		{"full values", []string{"-f", fullValues(t)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "--strict", "--kube-version", kubeVersion, chartDir(t)}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

// server is what one render's server side looks like, gathered for the shared checks.
type server struct {
	deploy    *appsv1.Deployment
	container corev1.Container
	configMap *corev1.ConfigMap
	// env is every variable the container gets: ConfigMap keys and env entries, by name.
	env map[string]bool
}

func serverOf(t *testing.T, r *rendered) server {
	t.Helper()
	d := one(t, "Deployment", r.Deployments)
	c := container(t, d.Spec.Template.Spec, "slipway")
	var cm *corev1.ConfigMap
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		for _, m := range r.ConfigMaps {
			if m.Name == from.ConfigMapRef.Name {
				cm = m
			}
		}
	}
	if cm == nil {
		t.Fatal("the container reads no rendered ConfigMap through envFrom")
	}
	env := map[string]bool{}
	for k := range cm.Data {
		env[k] = true
	}
	for _, e := range c.Env {
		if env[e.Name] {
			t.Errorf("%s is set twice (ConfigMap and env)", e.Name)
		}
		env[e.Name] = true
	}
	return server{deploy: d, container: c, configMap: cm, env: env}
}

// checkServer asserts what every rendering must satisfy.
func checkServer(t *testing.T, r *rendered) server {
	t.Helper()
	s := serverOf(t, r)
	d, c, pod := s.deploy, s.container, s.deploy.Spec.Template.Spec

	// Hardening.
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod seccompProfile is not RuntimeDefault")
	}
	checkContainerHardening(t, "slipway", c)
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("enableServiceLinks is not false: Services named like the release would inject SLIPWAY_* variables")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a Kubernetes API token it never uses")
	}
	checkTmp(t, pod, c)

	// The command and the port.
	if !reflect.DeepEqual(c.Args, []string{"serve"}) {
		t.Errorf("container args %q, want [serve]", c.Args)
	}
	addr := s.configMap.Data["SLIPWAY_ADDR"]
	port := portNamed(t, c, "http")
	if addr != fmt.Sprintf(":%d", port) {
		t.Errorf("SLIPWAY_ADDR %q but the container port is %d", addr, port)
	}

	// Probes: startup and liveness on /healthz (no dependencies), readiness on /readyz.
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{
		{"startupProbe", c.StartupProbe, "/healthz"},
		{"livenessProbe", c.LivenessProbe, "/healthz"},
		{"readinessProbe", c.ReadinessProbe, "/readyz"},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: missing or not httpGet", p.what)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s: GET %s on port %s, want %s on http", p.what, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
		}
	}
	if rp := c.ReadinessProbe; rp != nil && rp.TimeoutSeconds <= 3 {
		t.Errorf("readinessProbe timeout %ds: /readyz gives its checks 3s", rp.TimeoutSeconds)
	}

	// Graceful shutdown: the grace period outlasts the preStop sleep plus the drain timeout.
	drain, err := time.ParseDuration(s.configMap.Data["SLIPWAY_DRAIN_TIMEOUT"])
	if err != nil {
		t.Fatalf("SLIPWAY_DRAIN_TIMEOUT: %v", err)
	}
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if c.Lifecycle.PreStop.Sleep == nil {
			t.Error("preStop is not a sleep action (the image has no shell)")
		} else {
			preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("terminationGracePeriodSeconds is not set")
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if want := preStop + drain + shutdownAfterDrain; grace != want {
		t.Errorf("terminationGracePeriodSeconds %s, want preStop %s + SLIPWAY_DRAIN_TIMEOUT %s + %s (what serve does after the drain) = %s",
			grace, preStop, drain, shutdownAfterDrain, want)
	}

	// Pods roll when the settings change.
	ann := d.Spec.Template.Annotations
	if !isSHA256(ann["checksum/config"]) {
		t.Errorf("checksum/config annotation %q", ann["checksum/config"])
	}

	// Selectors: the Deployment's selects its pods; the Service selects them and not the
	// migration job's pods.
	podLabels := d.Spec.Template.Labels
	if d.Spec.Selector == nil || !selects(d.Spec.Selector.MatchLabels, podLabels) {
		t.Error("the Deployment's selector does not match its pod labels")
	}
	svc := one(t, "Service", r.Services)
	if !selects(svc.Spec.Selector, podLabels) {
		t.Error("the Service does not select the Deployment's pods")
	}
	// http (what the Ingress and HTTPRoute route to) and metrics, the internal port (/metrics and
	// /internal/readyz) when internalPort is set.
	wantPorts := []string{"http"}
	if s.configMap.Data["SLIPWAY_INTERNAL_ADDR"] != "" {
		wantPorts = append(wantPorts, "metrics")
	}
	var gotPorts []string
	for _, p := range svc.Spec.Ports {
		gotPorts = append(gotPorts, p.Name)
		if p.TargetPort.String() != p.Name {
			t.Errorf("Service port %s targets %s, want the container port of its name", p.Name, p.TargetPort.String())
		}
	}
	if !reflect.DeepEqual(gotPorts, wantPorts) {
		t.Errorf("Service ports %v, want %v", gotPorts, wantPorts)
	}
	for _, j := range r.Jobs {
		if selects(svc.Spec.Selector, j.Spec.Template.Labels) {
			t.Errorf("the Service also selects the pods of Job %s", j.Name)
		}
		if selects(d.Spec.Selector.MatchLabels, j.Spec.Template.Labels) {
			t.Errorf("the Deployment's selector also matches the pods of Job %s", j.Name)
		}
	}
	for _, p := range r.PDBs {
		if p.Spec.Selector == nil || !selects(p.Spec.Selector.MatchLabels, podLabels) {
			t.Errorf("PodDisruptionBudget %s does not select the pods", p.Name)
		}
	}

	// The ServiceAccount the pods use exists or is named on purpose.
	for _, sa := range r.ServiceAccounts {
		if sa.Name != pod.ServiceAccountName {
			t.Errorf("ServiceAccount %s rendered, pods use %s", sa.Name, pod.ServiceAccountName)
		}
	}

	// GOMEMLIMIT follows the memory limit, and the limit covers the upload buffers.
	checkMemory(t, s)

	// Every SLIPWAY_* variable exists in pkg/config.
	for _, name := range sortedKeys(s.env) {
		checkKnownVar(t, "Deployment env", name)
	}
	return s
}

func checkContainerHardening(t *testing.T, name string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("container %s has no securityContext", name)
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("container %s: runAsNonRoot is not true", name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s: readOnlyRootFilesystem is not true", name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container %s: allowPrivilegeEscalation is not false", name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("container %s is privileged", name)
	}
	if sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container %s: capabilities %+v, want drop [ALL] and nothing added", name, sc.Capabilities)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container %s: seccompProfile is not RuntimeDefault", name)
	}
}

// checkTmp: /tmp is a writable emptyDir (the root filesystem is read-only).
func checkTmp(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/tmp" {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil && !m.ReadOnly {
				return
			}
		}
	}
	t.Errorf("container %s has no writable emptyDir at /tmp", c.Name)
}

func portNamed(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %q", c.Name, name)
	return 0
}

// checkMemory: about 40 MiB base, plus SLIPWAY_READ_CACHE_BYTES, plus SLIPWAY_UPLOAD_MEMORY (the part buffers all S3 uploads of
// a pod share, pkg/blob/s3), plus about 3 MiB per upload being received
// (SLIPWAY_MAX_CONCURRENT_UPLOADS of them), must fit the memory limit.
func checkMemory(t *testing.T, s server) {
	t.Helper()
	limit, ok := s.container.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		t.Error("no memory limit: the pod's memory is bounded by SLIPWAY_UPLOAD_MEMORY and should be declared")
		return
	}
	checkGoMemLimit(t, s.container)
	uploads, err := strconv.ParseInt(s.configMap.Data["SLIPWAY_MAX_CONCURRENT_UPLOADS"], 10, 64)
	if err != nil {
		t.Fatalf("SLIPWAY_MAX_CONCURRENT_UPLOADS: %v", err)
	}
	buffers, err := strconv.ParseInt(s.configMap.Data["SLIPWAY_UPLOAD_MEMORY"], 10, 64)
	if err != nil {
		t.Fatalf("SLIPWAY_UPLOAD_MEMORY: %v", err)
	}
	cache, err := strconv.ParseInt(s.configMap.Data["SLIPWAY_READ_CACHE_BYTES"], 10, 64)
	if err != nil {
		t.Fatalf("SLIPWAY_READ_CACHE_BYTES: %v", err)
	}
	need := resource.MustParse(fmt.Sprintf("%dMi", 40+cache>>20+buffers>>20+uploads*3))
	if limit.Cmp(need) < 0 {
		t.Errorf("memory limit %s is below 40Mi + %d MiB of read cache + %d MiB of buffers + %d uploads x 3 MiB = %s",
			limit.String(), cache>>20, buffers>>20, uploads, need.String())
	}
}

// checkGoMemLimit: GOMEMLIMIT is 90% of the container's memory limit (values.yaml,
// goMemLimitPercent: the rest is for what the Go runtime does not count).
func checkGoMemLimit(t *testing.T, c corev1.Container) {
	t.Helper()
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return
	}
	for _, e := range c.Env {
		if e.Name != "GOMEMLIMIT" {
			continue
		}
		got, err := strconv.ParseInt(e.Value, 10, 64)
		if want := limit.Value() * 90 / 100; err != nil || got != want {
			t.Errorf("%s: GOMEMLIMIT %q, want 90%% of the memory limit %s = %d", c.Name, e.Value, limit.String(), want)
		}
		return
	}
	t.Errorf("%s: no GOMEMLIMIT beside the memory limit", c.Name)
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var knownVars = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range config.Vars {
		m[v.Name] = true
	}
	return m
}()

func checkKnownVar(t *testing.T, where, name string) {
	t.Helper()
	if strings.HasPrefix(name, "SLIPWAY_") && !knownVars[name] {
		t.Errorf("%s: %s is not a Slipway variable (pkg/config.Vars)", where, name)
	}
}

// checkMigrationJob: a pre-install/pre-upgrade hook running `slipway migrate up` with the
// Deployment's image and environment, hardened the same way.
func checkMigrationJob(t *testing.T, r *rendered, s server) *batchv1.Job {
	t.Helper()
	j := one(t, "Job", r.Jobs)
	if got := j.Annotations["helm.sh/hook"]; got != "pre-install,pre-upgrade" {
		t.Errorf("Job helm.sh/hook %q", got)
	}
	if got := j.Annotations["helm.sh/hook-delete-policy"]; got != "before-hook-creation,hook-succeeded" {
		t.Errorf("Job helm.sh/hook-delete-policy %q", got)
	}
	pod := j.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever && pod.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("Job restartPolicy %q", pod.RestartPolicy)
	}
	c := one(t, "Job container", pod.Containers)
	if !reflect.DeepEqual(c.Args, []string{"migrate", "up"}) {
		t.Errorf("Job args %q, want [migrate up]", c.Args)
	}
	if c.Image != s.container.Image {
		t.Errorf("Job image %q, Deployment image %q", c.Image, s.container.Image)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("Job pod runAsNonRoot is not true")
	}
	checkContainerHardening(t, c.Name, c)
	checkTmp(t, pod, c)
	checkGoMemLimit(t, c)

	// Same environment: every name the Deployment sets, with the ConfigMap's values inline.
	jobEnv := map[string]bool{}
	for _, e := range c.Env {
		jobEnv[e.Name] = true
		checkKnownVar(t, "Job env", e.Name)
		if want, ok := s.configMap.Data[e.Name]; ok && (e.Value != want || e.ValueFrom != nil) {
			t.Errorf("Job %s = %q, ConfigMap has %q", e.Name, e.Value, want)
		}
	}
	if !reflect.DeepEqual(sortedKeys(jobEnv), sortedKeys(s.env)) {
		t.Errorf("Job env %v differs from the Deployment's %v", sortedKeys(jobEnv), sortedKeys(s.env))
	}
	// The files config.Load reads at start are mounted in the Job too: without one, `migrate up`
	// fails before it migrates anything (the Sparkle key once was not).
	for _, e := range c.Env {
		if !loadedFiles[e.Name] || e.Value == "" {
			continue
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(e.Value, strings.TrimSuffix(m.MountPath, "/")+"/") {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("the Job's %s names %s, which no volume of the Job mounts: config.Load fails there", e.Name, e.Value)
		}
	}
	// Secret references point at a Secret that is a hook of the same phases (created first), or at
	// the user's existing Secret.
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		name := e.ValueFrom.SecretKeyRef.Name
		sec := secretNamed(r, name)
		if sec == nil {
			continue // existingSecret: checked by its own test
		}
		if !strings.HasPrefix(sec.Annotations["helm.sh/hook"], "pre-install,pre-upgrade") {
			t.Errorf("Job reads Secret %s, which is not a pre-install,pre-upgrade hook (it would not exist yet on install)", name)
		}
		w, _ := strconv.Atoi(sec.Annotations["helm.sh/hook-weight"])
		jw, _ := strconv.Atoi(j.Annotations["helm.sh/hook-weight"])
		if w >= jw {
			t.Errorf("hook Secret %s weight %d is not below the Job's %d", name, w, jw)
		}
	}
	return j
}

// loadedFiles are the variables naming files config.Load reads at start (every command's, the
// migration Job's too).
var loadedFiles = map[string]bool{"SLIPWAY_SPARKLE_KEY_FILE": true, "SLIPWAY_REPO_KEY_FILE": true, "SLIPWAY_SMTP_PASSWORD_FILE": true, "SLIPWAY_SMTP_CA_FILE": true}

func secretNamed(r *rendered, name string) *corev1.Secret {
	for _, s := range r.Secrets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// checkConfigLoads feeds the rendered environment (ConfigMap and Secret values) to the binary's
// own configuration loader: what the chart renders is what Slipway accepts.
func checkConfigLoads(t *testing.T, r *rendered, s server) *config.Config {
	t.Helper()
	env := map[string]string{}
	for k, v := range s.configMap.Data {
		env[k] = v
	}
	for _, e := range s.container.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			sec := secretNamed(r, e.ValueFrom.SecretKeyRef.Name)
			if sec == nil {
				t.Fatalf("%s reads Secret %s, which is not rendered", e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
			v, ok := sec.Data[e.ValueFrom.SecretKeyRef.Key]
			if !ok && (e.ValueFrom.SecretKeyRef.Optional == nil || !*e.ValueFrom.SecretKeyRef.Optional) {
				t.Errorf("%s reads key %s, missing from Secret %s", e.Name, e.ValueFrom.SecretKeyRef.Key, sec.Name)
			}
			env[e.Name] = string(v)
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		}
	}
	if file := env["SLIPWAY_SPARKLE_KEY_FILE"]; file != "" {
		env["SLIPWAY_SPARKLE_KEY_FILE"] = mountedSecretFile(t, s, file)
	}
	if file := env["SLIPWAY_REPO_KEY_FILE"]; file != "" {
		key, err := repokey.Generate("chart test", "")
		if err != nil {
			t.Fatal(err)
		}
		env["SLIPWAY_REPO_KEY_FILE"] = mountedSecretFileHolding(t, s, file, key)
	}
	if file := env["SLIPWAY_SMTP_PASSWORD_FILE"]; file != "" {
		env["SLIPWAY_SMTP_PASSWORD_FILE"] = mountedSecretFile(t, s, file) // any one line is a password
	}
	if file := env["SLIPWAY_SMTP_CA_FILE"]; file != "" {
		env["SLIPWAY_SMTP_CA_FILE"] = mountedSecretFileHolding(t, s, file, testCAPEM(t))
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the rendered environment is refused by config.Load: %v", err)
	}
	if cfg.SecretGenerated {
		t.Error("SLIPWAY_SECRET is not set: replicas would not share signed URLs")
	}
	return cfg
}

func TestChartDefaultValues(t *testing.T) {
	r := render(t)
	want := map[string]int{"Deployment": 1, "Service": 1, "ConfigMap": 1, "Secret": 2, "ServiceAccount": 1, "Job": 1, "PodDisruptionBudget": 1, "Pod": 1}
	if !reflect.DeepEqual(r.Kinds, want) {
		t.Errorf("kinds %v, want %v", r.Kinds, want)
	}
	s := checkServer(t, r)
	checkMigrationJob(t, r, s)
	cfg := checkConfigLoads(t, r, s)
	if d := s.deploy; d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	if !isSHA256(s.deploy.Spec.Template.Annotations["checksum/secret"]) {
		t.Error("no checksum/secret annotation")
	}
	if cfg.DrainTimeout != 240*time.Second || cfg.MaxUploadBytes != 4<<30 || cfg.MaxConcurrentUploads != 16 {
		t.Errorf("defaults: drain %s, max upload %d, concurrent %d", cfg.DrainTimeout, cfg.MaxUploadBytes, cfg.MaxConcurrentUploads)
	}
	if got := *s.deploy.Spec.Template.Spec.TerminationGracePeriodSeconds; got != 285 {
		t.Errorf("terminationGracePeriodSeconds %d, want 285 (5 preStop + 240 drain + 40)", got)
	}
	if s.deploy.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("strategy %s, want RollingUpdate", s.deploy.Spec.Strategy.Type)
	}
	// The generated SLIPWAY_SECRET is the same in the Secret and the migration hook's copy.
	main, hook := secretNamed(r, "slipway"), secretNamed(r, "slipway-migrate")
	if main == nil || hook == nil {
		t.Fatal("want Secrets slipway and slipway-migrate")
	}
	if len(main.Data["SLIPWAY_SECRET"]) < 32 || !reflect.DeepEqual(main.Data, hook.Data) {
		t.Error("the hook Secret's data differs from the release Secret's (or SLIPWAY_SECRET is short)")
	}
	if _, ok := main.Data["AWS_ACCESS_KEY_ID"]; ok {
		t.Error("AWS keys rendered although none were given (the pod identity should be used)")
	}
}

func TestChartFullValues(t *testing.T) {
	r := render(t, "-f", fullValues(t))
	want := map[string]int{"Deployment": 1, "Service": 1, "ConfigMap": 2, "Secret": 2, "ServiceAccount": 1, "Job": 1,
		"PodDisruptionBudget": 1, "Ingress": 1, "HorizontalPodAutoscaler": 1, "ServiceMonitor": 1,
		"PrometheusRule": 1, "NetworkPolicy": 2, "HTTPRoute": 1, "Pod": 1} // NetworkPolicies: the server's and the Job's
	if !reflect.DeepEqual(r.Kinds, want) {
		t.Errorf("kinds %v, want %v", r.Kinds, want)
	}
	s := checkServer(t, r)
	checkMigrationJob(t, r, s)
	cfg := checkConfigLoads(t, r, s)

	// Every variable of pkg/config is settable through the chart.
	for _, v := range config.Vars {
		if !s.env[v.Name] {
			t.Errorf("%s (pkg/config.Vars) is not set by the chart with every feature on: add it to charts/slipway", v.Name)
		}
	}
	for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "HTTPS_PROXY"} {
		if !s.env[name] {
			t.Errorf("%s is not set", name)
		}
	}
	if cfg.PublicURL != "https://apps.example.com" || cfg.CDNURL != "https://cdn.example.com/slipway" || cfg.DrainTimeout != 600*time.Second {
		t.Errorf("config: public %q, cdn %q, drain %s", cfg.PublicURL, cfg.CDNURL, cfg.DrainTimeout)
	}
	if got := *s.deploy.Spec.Template.Spec.TerminationGracePeriodSeconds; got != 650 {
		t.Errorf("terminationGracePeriodSeconds %d, want 650 (10 preStop + 600 drain + 40)", got)
	}

	// Autoscaling owns the replica count.
	if s.deploy.Spec.Replicas != nil {
		t.Error("replicas is set although the HPA scales the Deployment")
	}
	hpa := one(t, "HorizontalPodAutoscaler", r.HPAs)
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != s.deploy.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("HPA targets %+v", ref)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas != 12 || len(hpa.Spec.Metrics) != 2 {
		t.Errorf("HPA spec %+v", hpa.Spec)
	}

	// Ingress: streamed uploads through ingress-nginx, the user's annotations winning.
	ing := one(t, "Ingress", r.Ingresses)
	a := ing.Annotations
	bodySize, err := strconv.ParseInt(a["nginx.ingress.kubernetes.io/proxy-body-size"], 10, 64)
	if err != nil || bodySize < cfg.MaxUploadBytes || bodySize > cfg.MaxUploadBytes+8<<20 {
		t.Errorf("proxy-body-size %q does not follow SLIPWAY_MAX_UPLOAD_BYTES %d", a["nginx.ingress.kubernetes.io/proxy-body-size"], cfg.MaxUploadBytes)
	}
	for k, v := range map[string]string{
		"nginx.ingress.kubernetes.io/proxy-request-buffering": "off",
		"nginx.ingress.kubernetes.io/proxy-send-timeout":      "600",
		"nginx.ingress.kubernetes.io/proxy-read-timeout":      "900", // values' override
		"cert-manager.io/cluster-issuer":                      "letsencrypt",
	} {
		if a[k] != v {
			t.Errorf("Ingress annotation %s = %q, want %q", k, a[k], v)
		}
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" || len(ing.Spec.TLS) != 1 {
		t.Errorf("Ingress class %v, tls %+v", ing.Spec.IngressClassName, ing.Spec.TLS)
	}
	svc := one(t, "Service", r.Services)
	for _, rule := range ing.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			if p.Backend.Service == nil || p.Backend.Service.Name != svc.Name || p.Backend.Service.Port.Name != "http" {
				t.Errorf("Ingress path %s goes to %+v, want Service %s port http", p.Path, p.Backend.Service, svc.Name)
			}
		}
	}

	// ServiceMonitor scrapes /metrics on the Service's internal port.
	sm := one(t, "ServiceMonitor", r.ServiceMonitors)
	if !selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
		t.Error("the ServiceMonitor does not select the Service")
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
	}
	if sm.Labels["release"] != "kube-prometheus-stack" {
		t.Error("serviceMonitor.labels not applied")
	}

	// ServiceAccount for IRSA; the hook Job must not need it (it does not exist on pre-install).
	sa := one(t, "ServiceAccount", r.ServiceAccounts)
	if sa.Annotations["eks.amazonaws.com/role-arn"] == "" || sa.Name != "slipway-server" {
		t.Errorf("ServiceAccount %s annotations %v", sa.Name, sa.Annotations)
	}
	if j := one(t, "Job", r.Jobs); j.Spec.Template.Spec.ServiceAccountName == sa.Name {
		t.Error("the pre-install Job uses the ServiceAccount the release creates after it")
	}
	pdb := one(t, "PodDisruptionBudget", r.PDBs)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.String() != "50%" || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("PDB %+v", pdb.Spec)
	}
}

func TestChartExistingSecret(t *testing.T) {
	r := render(t, "--set", "existingSecret=my-slipway-secrets")
	if len(r.Secrets) != 0 {
		t.Errorf("%d Secrets rendered although existingSecret is set", len(r.Secrets))
	}
	s := checkServer(t, r)
	checkMigrationJob(t, r, s)
	if _, ok := s.deploy.Spec.Template.Annotations["checksum/secret"]; ok {
		t.Error("checksum/secret for a Secret the chart does not render")
	}
	job := one(t, "Job", r.Jobs)
	for _, c := range []corev1.Container{s.container, job.Spec.Template.Spec.Containers[0]} {
		refs := map[string]bool{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ref := e.ValueFrom.SecretKeyRef
				if ref.Name != "my-slipway-secrets" || ref.Key != e.Name {
					t.Errorf("%s: %s reads %s/%s", c.Name, e.Name, ref.Name, ref.Key)
				}
				optional := ref.Optional != nil && *ref.Optional
				if optional != (strings.HasPrefix(e.Name, "AWS_") || e.Name == "SLIPWAY_OIDC_CLIENT_SECRET" || e.Name == "SLIPWAY_SECRET_PREVIOUS") {
					t.Errorf("%s: %s optional=%v (only the S3 keys, the OIDC client secret and the previous keys are optional)", c.Name, e.Name, optional)
				}
				refs[e.Name] = true
			}
		}
		if !reflect.DeepEqual(sortedKeys(refs), []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "SLIPWAY_DATABASE_URL", "SLIPWAY_OIDC_CLIENT_SECRET", "SLIPWAY_SECRET", "SLIPWAY_SECRET_PREVIOUS"}) {
			t.Errorf("%s reads %v from the existing Secret", c.Name, sortedKeys(refs))
		}
	}
}

// A file:// store works for a single replica with a PersistentVolumeClaim.
func TestChartFileStorageSingleReplica(t *testing.T) {
	r := render(t, "--set", "storage.url=file:///var/lib/slipway/objects", "--set", "replicaCount=1",
		"--set", "storage.persistence.enabled=true", "--set", "storage.persistence.size=20Gi")
	s := checkServer(t, r)
	checkConfigLoads(t, r, s)
	pvc := one(t, "PersistentVolumeClaim", r.PVCs)
	if pvc.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Error("the objects' PVC would be deleted with the release")
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "20Gi" {
		t.Errorf("PVC size %s", q.String())
	}
	if s.deploy.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %s: a ReadWriteOnce volume needs Recreate", s.deploy.Spec.Strategy.Type)
	}
	var mounted bool
	for _, m := range s.container.VolumeMounts {
		if m.MountPath == "/var/lib/slipway/objects" {
			for _, v := range s.deploy.Spec.Template.Spec.Volumes {
				if v.Name == m.Name && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
					mounted = true
				}
			}
		}
	}
	if !mounted {
		t.Error("the PVC is not mounted at the storage URL's path")
	}
}

// The chart refuses configurations that cannot work, at template time.
func TestChartRefuses(t *testing.T) {
	file := "storage.url=file:///var/lib/slipway/objects"
	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"file storage with replicas", []string{file, "replicaCount=2", "storage.persistence.enabled=true"}, "file://"},
		{"file storage with autoscaling", []string{file, "replicaCount=1", "autoscaling.enabled=true", "storage.persistence.enabled=true"}, "autoscaling"},
		{"file storage without a volume", []string{file, "replicaCount=1"}, "persistence"},
		{"relative file storage", []string{"storage.url=file://./data", "replicaCount=1", "storage.persistence.enabled=true"}, "storage"},
		{"unknown storage scheme", []string{"storage.url=gs://bucket"}, "storage"},
		{"unknown value", []string{"replicas=3"}, "replicas"},
		{"misspelt nested value", []string{"config.logLevl=debug"}, "logLevl"},
		{"bad enum", []string{"config.logFormat=xml"}, "logFormat"},
		{"short secret", []string{"secret.value=tooshort"}, "value"},
		{"bad duration", []string{"config.presignTTL=15 minutes"}, "presignTTL"},
		{"two PDB bounds", []string{"podDisruptionBudget.minAvailable=1"}, "exactly one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", releaseName, chartDir(t), "--namespace", namespace, "--kube-version", kubeVersion}
			for _, s := range tc.sets {
				args = append(args, "--set", s)
			}
			out, err := helm(t, args...)
			if err == nil {
				t.Fatalf("rendered without error:\n%.2000s", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not mention %q:\n%v", tc.want, err)
			}
		})
	}
}

// A settings change changes the pod template (checksum annotations), so pods roll.
func TestChartRollsOnChange(t *testing.T) {
	base := []string{"--set", "secret.value=" + strings.Repeat("a", 40)}
	annotations := func(extra ...string) map[string]string {
		return one(t, "Deployment", render(t, append(slices.Clone(base), extra...)...).Deployments).Spec.Template.Annotations
	}
	a, b := annotations(), annotations()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two renders of the same values differ: %v / %v", a, b)
	}
	c := annotations("--set", "config.logLevel=debug")
	if c["checksum/config"] == a["checksum/config"] || c["checksum/secret"] != a["checksum/secret"] {
		t.Errorf("config change: checksums %v -> %v", a, c)
	}
	d := annotations("--set", "database.url=postgres://other@db:5432/slipway")
	if d["checksum/secret"] == a["checksum/secret"] || d["checksum/config"] != a["checksum/config"] {
		t.Errorf("secret change: checksums %v -> %v", a, d)
	}
}

// The hook Secret and the release Secret carry the same values (decoded), here with explicit ones.
func TestChartSecretValues(t *testing.T) {
	r := render(t, "-f", fullValues(t))
	main, hook := secretNamed(r, "slipway"), secretNamed(r, "slipway-migrate")
	if main == nil || hook == nil {
		t.Fatal("want Secrets slipway and slipway-migrate")
	}
	if !reflect.DeepEqual(main.Data, hook.Data) {
		t.Error("the hook Secret differs from the release Secret")
	}
	want := map[string]string{
		"SLIPWAY_DATABASE_URL":       "postgres://slipway:s3cret@db.example.internal:5432/slipway?sslmode=require",
		"SLIPWAY_SECRET":             "0123456789abcdef0123456789abcdef0123456789abcdef",
		"AWS_ACCESS_KEY_ID":          "AKIAEXAMPLE",
		"AWS_SECRET_ACCESS_KEY":      "example-secret-access-key",
		"SLIPWAY_OIDC_CLIENT_SECRET": "s3cret-client",
		"SLIPWAY_SECRET_PREVIOUS":    "previous-key-previous-key-previous-key-0123",
	}
	for k, v := range want {
		if string(main.Data[k]) != v {
			t.Errorf("Secret %s = %q, want %q", k, main.Data[k], v)
		}
	}
	if len(main.Data) != len(want) {
		t.Errorf("Secret keys %v", sortedKeys(main.Data))
	}
}

// mountedSecretFile checks that file is a key of a Secret the pod mounts read-only (the Sparkle
// key), and returns a local file with a valid key in its place, for config.Load to read.
func mountedSecretFile(t *testing.T, s server, file string) string {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(nil)
	return mountedSecretFileHolding(t, s, file, []byte(base64.StdEncoding.EncodeToString(priv.Seed())))
}

// testCAPEM is a self-signed CA certificate in PEM, for a rendered SLIPWAY_SMTP_CA_FILE.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// mountedSecretFileHolding is mountedSecretFile with the local copy holding content.
func mountedSecretFileHolding(t *testing.T, s server, file string, content []byte) string {
	t.Helper()
	dir, name := path.Split(file)
	found := false
	for _, m := range s.container.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(dir) {
			continue
		}
		for _, v := range s.deploy.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil && m.ReadOnly {
				for _, it := range v.Secret.Items {
					found = found || it.Path == name
				}
			}
		}
	}
	if !found {
		t.Fatalf("%s is not a file of a Secret mounted read-only", file)
	}
	local := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(local, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return local
}
