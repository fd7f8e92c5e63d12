// Package backends opens a blob.Backend from the storage URL in Slipway's configuration
// (SLIPWAY_STORAGE_URL), so the rest of the program never names a backend:
//
//	file:///var/lib/slipway/objects          a local folder (absolute path)
//	file://./data/objects                    a folder relative to the working directory
//	s3://BUCKET[/PREFIX]?region=R&endpoint=URL&path_style=true&part_size_mib=8&concurrency=2&request_timeout=2m
//
// S3 credentials never appear in the URL: they come from the AWS default chain (environment,
// web identity on Kubernetes, instance roles) or from WithS3Credentials. Errors name the part of
// the URL that is wrong but never repeat the URL itself.
package backends

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/fs"
	"github.com/slipwayhq/slipway/pkg/blob/s3"
)

// Setting is the configuration variable that holds the storage URL; errors start with it.
const Setting = "SLIPWAY_STORAGE_URL"

// Option adjusts how Open builds a backend.
type Option func(*options)

type options struct {
	accessKey, secretKey string
	memoryBudget         int64
	observeRequest       func(operation string, d time.Duration)
}

// WithRequestObserver is told the latency of every request to S3, by operation (the metrics'
// slipway_storage_request_duration_seconds); the filesystem backend makes none.
func WithRequestObserver(f func(operation string, d time.Duration)) Option {
	return func(o *options) { o.observeRequest = f }
}

// WithMemoryBudget bounds the bytes that upload buffers of the backend hold at once, all uploads
// together (SLIPWAY_UPLOAD_MEMORY; S3 part buffers).
func WithMemoryBudget(bytes int64) Option {
	return func(o *options) { o.memoryBudget = bytes }
}

// WithS3Credentials gives static S3 credentials instead of the AWS default chain (tests, or
// deployments that pass keys through their own secret store).
func WithS3Credentials(accessKey, secretKey string) Option {
	return func(o *options) { o.accessKey, o.secretKey = accessKey, secretKey }
}

// Open returns the backend rawURL names. It makes no request: call Ping to check it.
func Open(ctx context.Context, rawURL string, opts ...Option) (blob.Backend, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if rawURL == "" {
		return nil, fmt.Errorf("%s: empty (want file:///path or s3://bucket)", Setting)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid URL", Setting) // url.Parse's error quotes the URL
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s: must not contain credentials (user:password@); use AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY", Setting)
	}
	switch u.Scheme {
	case "file":
		dir, err := filePath(u)
		if err != nil {
			return nil, err
		}
		b, err := fs.New(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Setting, err)
		}
		return b, nil
	case "s3":
		cfg, err := s3Config(u)
		if err != nil {
			return nil, err
		}
		cfg.AccessKey, cfg.SecretKey, cfg.MemoryBudget = o.accessKey, o.secretKey, o.memoryBudget
		cfg.ObserveRequest = o.observeRequest
		b, err := s3.New(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Setting, err)
		}
		return b, nil
	case "":
		return nil, fmt.Errorf("%s: no scheme (want file:///path or s3://bucket)", Setting)
	default:
		return nil, fmt.Errorf("%s: unknown scheme %q (want file or s3)", Setting, u.Scheme)
	}
}

// filePath accepts file:///abs/path, file://localhost/abs/path and file://./rel (or file://../rel).
func filePath(u *url.URL) (string, error) {
	if u.Opaque != "" {
		return "", fmt.Errorf("%s: write file:///absolute/path or file://./relative/path", Setting)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s: file URLs take no query or fragment", Setting)
	}
	p := u.Path
	switch u.Host {
	case "", "localhost":
	case ".", "..":
		p = u.Host + p
	default:
		return "", fmt.Errorf("%s: file URL host %q is not supported (write file:///absolute/path or file://./relative/path)", Setting, u.Host)
	}
	if p == "" || p == "/" {
		return "", fmt.Errorf("%s: file URL has no folder (refusing to use /)", Setting)
	}
	return filepath.Clean(filepath.FromSlash(p)), nil
}

// s3Config reads s3://bucket/prefix?region=&endpoint=&path_style=&part_size_mib=&concurrency=&request_timeout=.
func s3Config(u *url.URL) (s3.Config, error) {
	cfg := s3.Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if cfg.Bucket == "" {
		return cfg, fmt.Errorf("%s: s3 URL has no bucket (write s3://bucket)", Setting)
	}
	if u.Fragment != "" {
		return cfg, fmt.Errorf("%s: s3 URLs take no fragment", Setting)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return cfg, fmt.Errorf("%s: malformed query", Setting)
	}
	for name, vals := range q {
		v := vals[len(vals)-1]
		switch name {
		case "region":
			cfg.Region = v
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return cfg, fmt.Errorf("%s: endpoint must be an http:// or https:// URL with a host", Setting)
			}
			if e.User != nil {
				return cfg, fmt.Errorf("%s: endpoint must not contain credentials; use AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY", Setting)
			}
			cfg.Endpoint = v
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return cfg, fmt.Errorf("%s: path_style=%q is not true or false", Setting, v)
			}
			cfg.PathStyle = b
		case "part_size_mib":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < s3.MinPartSize>>20 || n > 5<<10 {
				return cfg, fmt.Errorf("%s: part_size_mib=%q is not a whole number from %d to 5120", Setting, v, s3.MinPartSize>>20)
			}
			cfg.PartSize = n << 20
		case "request_timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Second || d > time.Hour {
				return cfg, fmt.Errorf("%s: request_timeout=%q is not a duration from 1s to 1h", Setting, v)
			}
			cfg.RequestTimeout = d
		case "concurrency":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 64 {
				return cfg, fmt.Errorf("%s: concurrency=%q is not a whole number from 1 to 64", Setting, v)
			}
			cfg.Concurrency = n
		default:
			return cfg, fmt.Errorf("%s: unknown s3 parameter %q (known: region, endpoint, path_style, part_size_mib, concurrency, request_timeout; credentials come from the environment)", Setting, name)
		}
	}
	return cfg, nil
}
