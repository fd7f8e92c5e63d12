package deploy

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/slipwayhq/slipway/pkg/config"
)

// composeFile is the part of the compose specification deploy/docker-compose.yml uses.
type composeFile struct {
	Name     string `json:"name"`
	Services map[string]struct {
		Image       string                                `json:"image"`
		Build       *struct{ Context, Dockerfile string } `json:"build"`
		NetworkMode string                                `json:"network_mode"`
		Ports       []string                              `json:"ports"`
		Environment map[string]string                     `json:"environment"`
		DependsOn   map[string]struct {
			Condition string `json:"condition"`
		} `json:"depends_on"`
		StopGracePeriod string `json:"stop_grace_period"`
		Healthcheck     *struct {
			Test []string `json:"test"`
		} `json:"healthcheck"`
	} `json:"services"`
}

var composeVar = regexp.MustCompile(`\$\{([A-Z0-9_]+)(:-([^}]*))?\}`)

// interpolate resolves ${NAME:-default} to its default (no .env), as compose does without one.
func interpolate(s string) string {
	s = composeVar.ReplaceAllString(s, "$3")
	return strings.ReplaceAll(s, "$$", "$")
}

// The compose setup's Slipway environment, with its defaults, is accepted by config.Load, points
// at the services it starts, and stops within its grace period.
func TestComposeSetup(t *testing.T) {
	root := repoRoot(t)
	var c composeFile
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(root, "deploy", "docker-compose.yml"))), &c); err != nil {
		t.Fatalf("deploy/docker-compose.yml: %v", err)
	}
	s, ok := c.Services["slipway"]
	if !ok {
		t.Fatal("no slipway service")
	}
	if s.Build == nil || filepath.Clean(filepath.Join(root, "deploy", s.Build.Context)) != root || s.Build.Dockerfile != "Dockerfile" {
		t.Errorf("slipway is not built from the repository's Dockerfile: %+v", s.Build)
	}
	env := map[string]string{}
	for k, v := range s.Environment {
		env[k] = interpolate(v)
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the compose environment is refused by config.Load: %v", err)
	}
	if cfg.SecretGenerated {
		t.Error("SLIPWAY_SECRET is not set")
	}
	if !strings.HasPrefix(cfg.StorageURL, "s3://") || !strings.Contains(cfg.StorageURL, "path_style=true") {
		t.Errorf("storage %q: want MinIO over S3 with path-style addressing", cfg.StorageURL)
	}
	if env["AWS_ACCESS_KEY_ID"] == "" || env["AWS_SECRET_ACCESS_KEY"] == "" {
		t.Error("no S3 credentials for MinIO")
	}
	for _, dep := range []string{"postgres", "createbucket"} {
		if _, ok := s.DependsOn[dep]; !ok {
			t.Errorf("slipway does not wait for %s", dep)
		}
	}
	if c.Services["createbucket"].Image == "" || !strings.Contains(c.Services["createbucket"].Image, "minio/mc:") {
		t.Error("no one-shot minio/mc bucket service")
	}
	if img := c.Services["minio"].Image; !strings.Contains(img, ":RELEASE.") {
		t.Errorf("MinIO image %q is not pinned to a release tag", img)
	}
	if img := c.Services["postgres"].Image; !strings.HasPrefix(img, "postgres:15") {
		t.Errorf("Postgres image %q, want 15, the version the tests run on (docs/deploy.md, Postgres versions)", img)
	}
	// Shared network namespace: the S3 endpoint in presigned URLs is the one the browser reaches.
	if s.NetworkMode != "service:minio" || !strings.Contains(cfg.StorageURL, "endpoint=http://localhost:9000") {
		t.Errorf("network_mode %q, storage %q: presigned URLs must name an address both Slipway and the browser reach", s.NetworkMode, cfg.StorageURL)
	}
	published := strings.Join(c.Services["minio"].Ports, " ")
	for _, p := range []string{":8080:8080", ":9000:9000"} {
		if !strings.Contains(published, p) {
			t.Errorf("port %s is not published (ports of network_mode: service:minio live on minio)", p)
		}
	}
	grace, err := time.ParseDuration(s.StopGracePeriod)
	if err != nil || grace <= cfg.DrainTimeout {
		t.Errorf("stop_grace_period %q is not longer than SLIPWAY_DRAIN_TIMEOUT %s", s.StopGracePeriod, cfg.DrainTimeout)
	}
}
