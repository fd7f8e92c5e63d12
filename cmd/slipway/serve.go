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
	"time"

	"github.com/slipwayhq/slipway/pkg/background"
	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/httpapi"
	"github.com/slipwayhq/slipway/pkg/store"
)

// serve migrates the database, then serves HTTP and runs the background components until ctx ends
// (SIGTERM/SIGINT). On shutdown it stops accepting, lets in-flight requests finish for up to the
// drain timeout, then cancels the rest (their uploads abort and nothing half-written is recorded);
// then it stops the background components in order (see bg below).
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

	// Every background component this replica runs, in the order they stop on SIGTERM, after the
	// HTTP server has drained its requests (docs/architecture.md, "Shutdown"). All run on every
	// replica; row locks and leases keep them from doing one piece of work twice. Nothing else
	// starts a goroutine that outlives a request.
	d := a.svc
	bg := background.Start(ctx, log,
		// 1. Producers of deletions: a run in progress ends with the channel or object it is on
		//    (its transaction commits, and its objects are deleted, or it rolls back).
		background.Stage{{Name: "retention", Component: d.Retention}, {Name: "collector", Component: d.Collector}},
		// 2. Download counts: the last requests' counts are written, with their events.
		background.Stage{{Name: "download counts", Component: d.Downloads}},
		// 3. Webhook delivery: the attempts in flight end and are recorded; what else is due stays
		//    due in the outbox, for the other replicas or the next one.
		background.Stage{{Name: "webhook delivery", Component: d.Sender}},
		// 4. Listeners: the read cache stops following other replicas' changes.
		background.Stage{{Name: "read-cache invalidation", Component: d.Watcher}},
	)

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(api.Listener(ln)) }()
	select {
	case err := <-serveErr:
		bg.Stop()
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
	log.Info("shutting down: stopping the background components")
	bg.Stop()
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
