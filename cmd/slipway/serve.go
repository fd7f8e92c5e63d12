package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/background"
	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/httpapi"
	"github.com/slipwayhq/slipway/pkg/postgres"
)

// serve listens at once, then brings the database to the schema it needs (startUp) while it
// answers health checks and 503s, then serves HTTP and runs the background components until ctx
// ends (SIGTERM/SIGINT). On shutdown it stops accepting, lets in-flight requests finish for up to
// the drain timeout, then cancels the rest (their uploads abort and nothing half-written is
// recorded); then it stops the background components in order (see stages below).
func serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	// The pool connects lazily: serve starts (and answers /healthz) while Postgres is still down.
	a, err := openApp(ctx, getenv, stderr)
	if err != nil {
		return err
	}
	defer a.close()
	log := a.log
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
	api.Starting("connecting to the database")
	srv := api.HTTPServer(reqCtx)
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return err
	}
	var internal *http.Server
	internalErr := make(chan error, 1)
	if a.cfg.InternalAddr != "" {
		iln, err := net.Listen("tcp", a.cfg.InternalAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("SLIPWAY_INTERNAL_ADDR: %w", err)
		}
		internal = &http.Server{Handler: api.Internal(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		go func() { internalErr <- internal.Serve(iln) }()
		log.Info("serving metrics and the detailed readiness", slog.String("internal_addr", iln.Addr().String()))
	}
	log.Info("serving", slog.String("addr", ln.Addr().String()), slog.String("public_url", a.cfg.PublicURL),
		slog.String("version", buildinfo.Version), slog.String("storage", postgres.RedactURL(a.cfg.StorageURL)), slog.String("mail", mailState(a)))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(api.Listener(ln)) }()

	// Start-up: until the schema is there, /readyz answers 503 and the API 503 with Retry-After.
	// Then the replica is ready and the background components start.
	bgc := make(chan *background.Group, 1)
	go func() {
		if !startUp(ctx, a, api, log) {
			bgc <- nil
			return
		}
		api.Started()
		log.Info("ready")
		bg := startBackground(ctx, a)
		// What start-up left in the heap (configuration, the schema check, the SDKs' set-up) is
		// garbage now: collect it and give the pages back, rather than holding them until the
		// heap grows into them.
		debug.FreeOSMemory()
		// The same for the executable's pages start-up ran (dropStartupPages).
		if _, err := dropStartupPages(); err != nil {
			log.Warn("could not drop the start-up pages of the executable", slog.Any("error", err))
		}
		bgc <- bg
	}()
	stopBackground := func() {
		if bg := <-bgc; bg != nil {
			bg.Stop()
		}
	}

	select {
	case err := <-serveErr:
		stopBackground()
		return err
	case err := <-internalErr:
		_ = srv.Close()
		stopBackground()
		return fmt.Errorf("internal listener: %w", err)
	case <-ctx.Done():
	}
	api.Stopping()
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
	stopBackground()
	if internal != nil {
		_ = internal.Close()
	}
	log.Info("stopped")
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startBackground starts every background component this replica runs, in the order they stop on
// SIGTERM, after the HTTP server has drained its requests (docs/architecture.md, "Shutdown"). All
// run on every replica; row locks and leases keep them from doing one piece of work twice. Nothing
// else starts a goroutine that outlives a request.
func startBackground(ctx context.Context, a *app) *background.Group {
	d := a.svc
	return background.Start(ctx, a.log,
		// 1. Producers of deletions: a run in progress ends with the channel or object it is on
		//    (its transaction commits, and its objects are deleted, or it rolls back).
		//    The checksum verifier abandons the object it is reading (the release stays unverified).
		background.Stage{{Name: "retention", Component: d.Retention}, {Name: "collector", Component: d.Collector},
			{Name: "checksum verifier", Component: d.Verifier}},
		// 2. Download counts: the last requests' counts are written, with their events.
		background.Stage{{Name: "download counts", Component: d.Downloads}, {Name: "tester mail", Component: d.Mailings}},
		// 3. Webhook delivery: the attempts in flight end and are recorded; what else is due stays
		//    due in the outbox, for the other replicas or the next one.
		//    Mail likewise: each send in flight ends (at most the SMTP timeouts) and is recorded;
		//    mail leased but not begun is given back, due at once.
		background.Stage{{Name: "webhook delivery", Component: d.Sender}, {Name: "mail delivery", Component: d.Mailer}},
		// 4. Listeners: the read cache stops following other replicas' changes.
		background.Stage{{Name: "read-cache invalidation", Component: d.Watcher}},
	)
}

// startUp brings the database to the schema this binary serves, retrying until it succeeds or ctx
// ends (false): it creates the database when it is missing and SLIPWAY_CREATE_DATABASE allows it,
// then applies the pending migrations
// (SLIPWAY_MIGRATE_ON_START) or, when a hook Job migrates, waits until the schema is one it can
// serve (postgres.Migrator.Check). Neither a database still coming up nor a failed or dirty
// migration makes serve exit: a crash loop would help neither, and the replica keeps answering
// health checks and 503s with Retry-After meanwhile. What it waits for is logged when it changes,
// and shown by the internal readiness report.
func startUp(ctx context.Context, a *app, api *httpapi.Server, log *slog.Logger) bool {
	delay, last := 250*time.Millisecond, ""
	for {
		reason, err := prepareSchema(ctx, a)
		if err == nil {
			return ctx.Err() == nil
		}
		api.Starting(reason)
		if msg := reason + ": " + err.Error(); msg != last {
			last = msg
			level := slog.LevelError // a schema an operator must repair, or a migration that fails
			if errs.KindOf(err) == errs.Unavailable {
				level = slog.LevelWarn
			}
			log.Log(ctx, level, "not ready: "+reason+" (retrying)", slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// prepareSchema is one attempt of startUp; reason says what it waits for when it fails.
func prepareSchema(ctx context.Context, a *app) (reason string, err error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if a.cfg.CreateDatabase {
		if err := a.db.CreateIfMissing(cctx); err != nil {
			return "waiting for the database", err
		}
	}
	if !a.cfg.MigrateOnStart {
		// Read-only: a replica that does not migrate changes nothing in the database.
		if err := postgres.CheckSchema(cctx, a.db); err != nil {
			return "waiting for the schema (SLIPWAY_MIGRATE_ON_START=false: `slipway migrate up` migrates it)", err
		}
		return "", nil
	}
	m, err := newMigrator(a.db, a.cfg)
	if err != nil {
		return "waiting for the database", err
	}
	defer m.Close()
	if err := m.UpContext(ctx); err != nil {
		return "migrating the schema", err
	}
	return "", nil
}

// mailState is how serve's first line names mail: the relay's URL (it holds no password) or off.
func mailState(a *app) string {
	if !a.cfg.Mail.On {
		return "off (SLIPWAY_SMTP_URL is not set)"
	}
	return a.cfg.Mail.Relay.String()
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
	for _, w := range a.cfg.Warnings {
		log.Warn(w)
	}
	if a.cfg.SecretGenerated {
		log.Warn("SLIPWAY_SECRET is not set: a random secret was generated for this process; signed URLs and " +
			"password cookies will not work across replicas or restarts. Set SLIPWAY_SECRET (32+ characters).")
	}
	if !strings.HasPrefix(a.cfg.PublicURL, "https://") {
		log.Warn("SLIPWAY_PUBLIC_URL is not https: iOS devices refuse to install over plain http " +
			"(itms-services needs an https manifest URL); Android and macOS downloads still work")
	}
}
