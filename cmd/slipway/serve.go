package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/httpapi"
	"github.com/slipwayhq/slipway/pkg/store"
)

// serve migrates the database, then serves HTTP until ctx ends (SIGTERM/SIGINT). On shutdown it
// stops accepting, lets in-flight requests finish for up to the drain timeout, then cancels the
// rest: their uploads abort and nothing half-written is recorded.
func serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	a, err := openApp(ctx, getenv, stderr, true)
	if err != nil {
		return err
	}
	defer a.close()
	log := a.log
	if err := migrateUp(a.db); err != nil {
		return err
	}
	warnings(a, log)
	if getenv("GOMEMLIMIT") == "" {
		limit := a.cfg.MemorySoftLimit()
		debug.SetMemoryLimit(limit)
		log.Debug("memory limit set from the upload settings (GOMEMLIMIT overrides it)", slog.Int64("bytes", limit))
	}

	// Requests get a base context that outlives the signal, so draining requests keep running; it
	// is cancelled only when the drain timeout is over.
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	api := httpapi.New(httpapi.Deps{Config: a.cfg, Service: a.svc, Metrics: a.metrics, Log: log})
	srv := api.HTTPServer(reqCtx)
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return err
	}
	log.Info("serving", slog.String("addr", ln.Addr().String()), slog.String("public_url", a.cfg.PublicURL),
		slog.String("version", buildinfo.Version), slog.String("storage", store.RedactURL(a.cfg.StorageURL)))

	gcDone := make(chan struct{})
	go func() { defer close(gcDone); a.gcLoop(reqCtx) }()
	// Other replicas' changes (and anyone's SQL) reach the read cache through Postgres NOTIFY.
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); _ = a.svc.WatchChanges(reqCtx) }()
	// Retention, webhook delivery and download counts run on every replica; row locks and leases
	// keep them from doing one piece of work twice.
	var background sync.WaitGroup
	background.Go(func() { a.svc.RunRetention(reqCtx) })
	background.Go(func() { a.svc.RunWebhooks(reqCtx) })
	background.Go(func() { a.svc.RunDownloadCounts(reqCtx, a.cfg.DownloadFlushInterval) })

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(api.Listener(ln)) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests", slog.Duration("timeout", a.cfg.DrainTimeout))
	drainCtx, cancel := context.WithTimeout(context.Background(), a.cfg.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		log.Warn("drain timeout over: cancelling the remaining requests", slog.String("error", err.Error()))
	}
	cancelRequests()
	// Give cancelled handlers a moment to abort their uploads and reply.
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelClose()
	_ = srv.Shutdown(closeCtx)
	_ = srv.Close()
	if !waitZero(api.InFlight, handlerCleanupTimeout) {
		log.Warn("handlers still running after the connections were closed; exiting anyway",
			slog.Int64("handlers", api.InFlight()), slog.Duration("waited", handlerCleanupTimeout))
	}
	<-gcDone
	<-watchDone
	background.Wait()
	log.Info("stopped")
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handlerCleanupTimeout bounds the wait for handlers cut by srv.Close to finish cleaning up. Their
// storage calls have their own, similar bounds (Discard's 30 s).
const handlerCleanupTimeout = 30 * time.Second

// waitZero waits until n() is zero, for at most timeout, and reports whether it is.
func waitZero(n func() int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for n() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// gcLoop runs the storage collector every GCInterval until ctx ends.
func (a *app) gcLoop(ctx context.Context) {
	if a.cfg.GCInterval <= 0 {
		return
	}
	t := time.NewTicker(a.cfg.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			res, err := a.svc.CollectGarbage(ctx, a.cfg.GCGrace)
			if err != nil && ctx.Err() == nil {
				a.log.Warn("collector run failed", slog.String("error", err.Error()))
			} else if res.Deleted+res.Failed > 0 {
				a.log.Info("collector run", slog.Int("deleted", res.Deleted), slog.Int("failed", res.Failed))
			}
		}
	}
}

func warnings(a *app, log *slog.Logger) {
	if a.cfg.SecretGenerated {
		log.Warn("SLIPWAY_SECRET is not set: a random secret was generated for this process; signed URLs and " +
			"password cookies will not work across replicas or restarts. Set SLIPWAY_SECRET (32+ characters).")
	}
	if !strings.HasPrefix(a.cfg.PublicURL, "https://") {
		log.Warn("SLIPWAY_PUBLIC_URL is not https: iOS devices refuse to install over plain http " +
			"(itms-services needs an https manifest URL); Android and macOS downloads still work")
	}
}
