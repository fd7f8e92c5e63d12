package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/backends"
	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution/service"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/postgres"
)

// app is the wiring every server-side command shares.
type app struct {
	cfg     *config.Config
	log     *slog.Logger
	db      *postgres.DB
	storage blob.Backend
	metrics *metrics.Metrics
	svc     *service.Service
}

// loadConfig reads and validates the configuration and builds the logger.
func loadConfig(getenv func(string) string, stderr io.Writer) (*config.Config, *slog.Logger, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, nil, err
	}
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewJSONHandler(stderr, opts)
	if cfg.LogFormat == "text" {
		h = slog.NewTextHandler(stderr, opts)
	}
	return cfg, slog.New(h), nil
}

// openApp connects to the database and to object storage. It never creates the database nor
// touches the schema: serve prepares both itself (startUp); other commands use openChecked.
func openApp(ctx context.Context, getenv func(string) string, stderr io.Writer) (*app, error) {
	cfg, log, err := loadConfig(getenv, stderr)
	if err != nil {
		return nil, err
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{MaxConns: int32(cfg.DBMaxConns), Log: log})
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	st, err := backends.Open(ctx, cfg.StorageURL, backends.WithMemoryBudget(cfg.UploadMemory),
		backends.WithRequestObserver(func(op string, d time.Duration) {
			m.StorageRequestDuration.WithLabelValues(op).Observe(d.Seconds())
		}))
	if err != nil {
		db.Close()
		return nil, err // backends.Open names SLIPWAY_STORAGE_URL itself
	}
	m.Registry.MustRegister(db.PoolCollector())
	a := &app{cfg: cfg, log: log, db: db, storage: st, metrics: m}
	a.svc = service.New(cfg, db, st, m, log)
	m.WatchDependencies(func(ctx context.Context) []metrics.DependencyState {
		var out []metrics.DependencyState
		for _, c := range a.svc.DependencyChecks(ctx) {
			out = append(out, metrics.DependencyState{Name: c.Name, State: c.State})
		}
		return out
	})
	if a.svc.Devices.UDID.Cert, a.svc.Devices.UDID.Chain, a.svc.Devices.UDID.Key, err = cfg.UDIDSigner(); err != nil {
		db.Close()
		return nil, err
	}
	return a, nil
}

// openChecked is openApp for the commands that use the schema (gc, insights, admin, retention):
// they refuse a database whose schema this binary does not serve, and migrate nothing (only
// `slipway migrate` and serve with SLIPWAY_MIGRATE_ON_START do).
func openChecked(ctx context.Context, getenv func(string) string, stderr io.Writer) (*app, error) {
	a, err := openApp(ctx, getenv, stderr)
	if err != nil {
		return nil, err
	}
	if err := postgres.CheckSchema(ctx, a.db); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *app) close() { a.db.Close() }

// openDB connects to the database only (migrate, token). With create (`migrate up` when
// SLIPWAY_CREATE_DATABASE is true) it creates the database first when it is missing.
func openDB(ctx context.Context, getenv func(string) string, stderr io.Writer, create bool) (*postgres.DB, *config.Config, error) {
	cfg, log, err := loadConfig(getenv, stderr)
	if err != nil {
		return nil, nil, err
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{CreateDatabase: create && cfg.CreateDatabase, MaxConns: 2, Log: log})
	return db, cfg, err
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "slipway %s (commit %s, API %s)\n", buildinfo.Version, buildinfo.CommitOrVCS(), buildinfo.APIVersion)
}
