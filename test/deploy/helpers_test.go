package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// repoRoot is the module's root folder (where go.mod is).
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's folder")
		}
		dir = parent
	}
}

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), "charts", "slipway") }

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	helmHomeOnce sync.Once
	helmHome     string
	helmHomeErr  error
)

// helmBinary finds Helm: $SLIPWAY_TEST_HELM (set by test/with-services.sh from test/tools.sh),
// else helm in PATH. Without it the test fails under with-services.sh
// (SLIPWAY_TEST_REQUIRE_SERVICES=1) and is skipped otherwise.
func helmBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SLIPWAY_TEST_HELM"); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			t.Fatalf("SLIPWAY_TEST_HELM=%s is not an executable file", p)
		}
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	const msg = "helm not found: set SLIPWAY_TEST_HELM (bash test/tools.sh helm builds it) or put helm in PATH"
	if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// helm runs Helm with its cache, config and data folders in a private temporary folder, so the
// tests neither read nor write the user's Helm setup. It returns stdout, and stderr in the error.
func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin := helmBinary(t)
	helmHomeOnce.Do(func() { helmHome, helmHomeErr = os.MkdirTemp("", "slipway-helm-home-") })
	if helmHomeErr != nil {
		t.Fatal(helmHomeErr)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"),
		"HELM_DATA_HOME="+filepath.Join(helmHome, "data"),
		"KUBECONFIG="+filepath.Join(helmHome, "no-kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

const (
	releaseName = "slipway"
	namespace   = "apps"
	// kubeVersion is the oldest Kubernetes the chart supports (Chart.yaml kubeVersion). Passed
	// explicitly: a Helm built with plain `go install` assumes v1.20 otherwise.
	kubeVersion = "1.30.0"
)

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor (monitoring.coreos.com/v1)
// the chart uses, with the CRD's field names; strict decoding rejects anything else.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// prometheusRule is the part of the Prometheus Operator's PrometheusRule (monitoring.coreos.com/v1)
// the chart uses, with the CRD's field names.
type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert,omitempty"`
				Record      string            `json:"record,omitempty"`
				Expr        string            `json:"expr"`
				For         string            `json:"for,omitempty"`
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// httpRoute is the part of Gateway API's HTTPRoute (gateway.networking.k8s.io/v1,
// sigs.k8s.io/gateway-api apis/v1 httproute_types.go) the chart renders, with its field names.
type httpRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ParentRefs []struct {
			Group       *string `json:"group,omitempty"`
			Kind        *string `json:"kind,omitempty"`
			Namespace   *string `json:"namespace,omitempty"`
			Name        string  `json:"name"`
			SectionName *string `json:"sectionName,omitempty"`
			Port        *int32  `json:"port,omitempty"`
		} `json:"parentRefs"`
		Hostnames []string `json:"hostnames,omitempty"`
		Rules     []struct {
			Matches []struct {
				Path *struct {
					Type  string `json:"type"`
					Value string `json:"value"`
				} `json:"path,omitempty"`
				Headers     []map[string]string `json:"headers,omitempty"`
				QueryParams []map[string]string `json:"queryParams,omitempty"`
				Method      string              `json:"method,omitempty"`
			} `json:"matches,omitempty"`
			Filters     []map[string]any `json:"filters,omitempty"`
			BackendRefs []struct {
				Group     *string `json:"group,omitempty"`
				Kind      *string `json:"kind,omitempty"`
				Name      string  `json:"name"`
				Namespace *string `json:"namespace,omitempty"`
				Port      *int32  `json:"port,omitempty"`
				Weight    *int32  `json:"weight,omitempty"`
			} `json:"backendRefs,omitempty"`
			Timeouts *struct {
				Request        string `json:"request,omitempty"`
				BackendRequest string `json:"backendRequest,omitempty"`
			} `json:"timeouts,omitempty"`
		} `json:"rules"`
	} `json:"spec"`
}

// kinds maps each kind the chart may render to its apiVersion and a fresh typed object.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Deployment":              {"apps/v1", func() any { return &appsv1.Deployment{} }},
	"Service":                 {"v1", func() any { return &corev1.Service{} }},
	"Ingress":                 {"networking.k8s.io/v1", func() any { return &networkingv1.Ingress{} }},
	"HorizontalPodAutoscaler": {"autoscaling/v2", func() any { return &autoscalingv2.HorizontalPodAutoscaler{} }},
	"PodDisruptionBudget":     {"policy/v1", func() any { return &policyv1.PodDisruptionBudget{} }},
	"ServiceAccount":          {"v1", func() any { return &corev1.ServiceAccount{} }},
	"Job":                     {"batch/v1", func() any { return &batchv1.Job{} }},
	"ConfigMap":               {"v1", func() any { return &corev1.ConfigMap{} }},
	"Secret":                  {"v1", func() any { return &corev1.Secret{} }},
	"PersistentVolumeClaim":   {"v1", func() any { return &corev1.PersistentVolumeClaim{} }},
	"ServiceMonitor":          {"monitoring.coreos.com/v1", func() any { return &serviceMonitor{} }},
	"PrometheusRule":          {"monitoring.coreos.com/v1", func() any { return &prometheusRule{} }},
	"NetworkPolicy":           {"networking.k8s.io/v1", func() any { return &networkingv1.NetworkPolicy{} }},
	"HTTPRoute":               {"gateway.networking.k8s.io/v1", func() any { return &httpRoute{} }},
	"Pod":                     {"v1", func() any { return &corev1.Pod{} }},
}

// rendered is one `helm template` output, every document decoded strictly into its API type.
type rendered struct {
	Deployments     []*appsv1.Deployment
	Services        []*corev1.Service
	Ingresses       []*networkingv1.Ingress
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	PDBs            []*policyv1.PodDisruptionBudget
	ServiceAccounts []*corev1.ServiceAccount
	Jobs            []*batchv1.Job
	ConfigMaps      []*corev1.ConfigMap
	Secrets         []*corev1.Secret
	PVCs            []*corev1.PersistentVolumeClaim
	ServiceMonitors []*serviceMonitor
	PrometheusRules []*prometheusRule
	NetworkPolicies []*networkingv1.NetworkPolicy
	HTTPRoutes      []*httpRoute
	Pods            []*corev1.Pod
	// Kinds counts the documents of each kind.
	Kinds map[string]int
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decode splits a multi-document YAML stream and decodes every document with UnmarshalStrict
// (unknown or duplicate fields are errors), so a misspelt or misplaced field fails the test.
func decode(t testing.TB, out string) *rendered {
	t.Helper()
	r := &rendered{Kinds: map[string]int{}}
	for _, doc := range docSeparator.Split(out, -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		if head.Kind == "" && head.APIVersion == "" {
			if strings.TrimSpace(stripComments(doc)) != "" {
				t.Fatalf("a rendered document has no kind:\n%s", doc)
			}
			continue
		}
		k, ok := kinds[head.Kind]
		if !ok {
			t.Fatalf("unexpected kind %q (%s) in the chart's output", head.Kind, head.Metadata.Name)
		}
		if head.APIVersion != k.apiVersion {
			t.Errorf("%s %s: apiVersion %q, want %q", head.Kind, head.Metadata.Name, head.APIVersion, k.apiVersion)
		}
		obj := k.new()
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s %s does not decode strictly into its API type: %v\n%s", head.Kind, head.Metadata.Name, err, doc)
		}
		if head.Metadata.Name == "" {
			t.Errorf("%s without metadata.name", head.Kind)
		}
		r.Kinds[head.Kind]++
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.Deployments = append(r.Deployments, o)
		case *corev1.Service:
			r.Services = append(r.Services, o)
		case *networkingv1.Ingress:
			r.Ingresses = append(r.Ingresses, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.HPAs = append(r.HPAs, o)
		case *policyv1.PodDisruptionBudget:
			r.PDBs = append(r.PDBs, o)
		case *corev1.ServiceAccount:
			r.ServiceAccounts = append(r.ServiceAccounts, o)
		case *batchv1.Job:
			r.Jobs = append(r.Jobs, o)
		case *corev1.ConfigMap:
			r.ConfigMaps = append(r.ConfigMaps, o)
		case *corev1.Secret:
			r.Secrets = append(r.Secrets, o)
		case *corev1.PersistentVolumeClaim:
			r.PVCs = append(r.PVCs, o)
		case *serviceMonitor:
			r.ServiceMonitors = append(r.ServiceMonitors, o)
		case *prometheusRule:
			r.PrometheusRules = append(r.PrometheusRules, o)
		case *networkingv1.NetworkPolicy:
			r.NetworkPolicies = append(r.NetworkPolicies, o)
		case *httpRoute:
			r.HTTPRoutes = append(r.HTTPRoutes, o)
		case *corev1.Pod:
			r.Pods = append(r.Pods, o)
		}
	}
	return r
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// render runs `helm template` on the chart with extra arguments (-f FILE, --set K=V).
func render(t testing.TB, args ...string) *rendered {
	t.Helper()
	out, err := helm(t, append([]string{"template", releaseName, chartDir(t), "--namespace", namespace, "--kube-version", kubeVersion}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

// one returns the single element of xs, failing unless there is exactly one.
func one[T any](t testing.TB, what string, xs []T) T {
	t.Helper()
	if len(xs) != 1 {
		t.Fatalf("want exactly one %s, got %d", what, len(xs))
	}
	return xs[0]
}

func container(t testing.TB, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

// selects reports whether every selector label is among labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
