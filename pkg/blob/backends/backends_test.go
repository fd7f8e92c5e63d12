package backends_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/backends"
	"github.com/slipwayhq/slipway/pkg/blob/fs"
	"github.com/slipwayhq/slipway/pkg/blob/s3"
	"github.com/slipwayhq/slipway/test/testenv"
)

func TestOpenErrors(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"", "SLIPWAY_STORAGE_URL: empty"},
		{"ftp://host/x", `SLIPWAY_STORAGE_URL: unknown scheme "ftp"`},
		{"/var/lib/slipway", "SLIPWAY_STORAGE_URL: no scheme"},
		{"file://host/x", `file URL host "host" is not supported`},
		{"file:relative", "write file:///absolute/path"},
		{"file:///", "no folder"},
		{"file:///x?y=1", "no query"},
		{"s3://", "no bucket"},
		{"s3://AKIAXXX:topsecret@bucket", "must not contain credentials"},
		{"s3://bucket?secret_key=topsecret", `unknown s3 parameter "secret_key"`},
		{"s3://bucket?endpoint=ftp://x", "endpoint must be an http"},
		{"s3://bucket?endpoint=http://u:topsecret@x", "endpoint must not contain credentials"},
		{"s3://bucket?path_style=maybe", `path_style="maybe"`},
		{"s3://bucket?region=x&part_size_mib=1", "part_size_mib"},
		{"s3://bucket?region=x&concurrency=0", "concurrency"},
		{"s3://bucket?region=x&request_timeout=0s", "request_timeout"},
		{"s3://bucket?region=x&request_timeout=soon", "request_timeout"},
		{"s3://bucket/../up?region=x", "prefix"},
		{"s3://bucket?region=%zz", "malformed query"},
		{"http://[::1:topsecret", "not a valid URL"},
	} {
		_, err := backends.Open(t.Context(), c.url)
		if err == nil {
			t.Errorf("Open(%q) succeeded", c.url)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v, want it to mention %q", c.url, err, c.want)
		}
		if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("Open(%q) error echoes a secret: %v", c.url, err)
		}
	}
}

func TestOpenFile(t *testing.T) {
	abs := t.TempDir()
	b, err := backends.Open(t.Context(), "file://"+filepath.ToSlash(abs)+"/objects")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := b.(*fs.Store); !ok || s.Dir() != filepath.Join(abs, "objects") {
		t.Errorf("Open(file:///abs) = %T %v", b, b)
	}

	t.Chdir(t.TempDir())
	b, err = backends.Open(t.Context(), "file://./data/objects")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := b.(*fs.Store); !ok || s.Dir() != filepath.Join("data", "objects") {
		t.Errorf("Open(file://./rel) = %T %v", b, b)
	}
	if _, err := os.Stat(filepath.Join("data", "objects")); err != nil {
		t.Errorf("relative folder not created: %v", err)
	}
}

func TestOpenS3(t *testing.T) {
	b, err := backends.Open(t.Context(), "s3://bucket/some/prefix?region=eu-west-3&part_size_mib=16&concurrency=4&request_timeout=30s")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.(*s3.Store); !ok {
		t.Errorf("Open(s3://) = %T", b)
	}

	env := testenv.S3(t)
	b, err = backends.Open(t.Context(), env.URL, backends.WithS3Credentials(env.AccessKey, env.SecretKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(t.Context(), "k", strings.NewReader("hello"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, err := b.GetRange(t.Context(), "k", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); !bytes.Equal(got, []byte("ell")) {
		t.Errorf("read %q", got)
	}
}
