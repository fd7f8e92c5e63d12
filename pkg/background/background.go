// Package background runs a replica's background components (webhook delivery, download counts,
// retention, the collector, read-cache invalidation) and stops them in a stated order. serve
// (cmd/slipway/serve.go) names every component it runs in one place and stops them, stage by
// stage, after the HTTP server has drained its requests.
package background

import (
	"context"
	"log/slog"
	"time"
)

// Component is work a replica runs in the background. Run works until ctx ends, then finishes
// what it holds (a flush, the attempts in flight) and returns; it may return at once when its
// work is turned off on this replica. An error ends the component early (it is logged); a stop
// returns nil.
type Component interface {
	Run(ctx context.Context) error
}

// Named is a component with the name its log lines carry.
type Named struct {
	Name string
	Component
}

// Stage is components that stop together: their contexts end at once, and the stage is over when
// every one of them has returned.
type Stage []Named

// Group is the running components.
type Group struct {
	log    *slog.Logger
	stages [][]*running
}

type running struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

// Start starts every component of every stage, each in a goroutine under a context of its own,
// detached from ctx's cancellation (a signal does not stop them: Stop does, in order) but carrying
// its values.
func Start(ctx context.Context, log *slog.Logger, stages ...Stage) *Group {
	g := &Group{log: log}
	for _, st := range stages {
		var rs []*running
		for _, n := range st {
			cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			r := &running{name: n.Name, cancel: cancel, done: make(chan struct{})}
			go func(c Component) {
				defer close(r.done)
				if err := c.Run(cctx); err != nil {
					log.Warn("background component ended with an error", slog.String("component", r.name), slog.String("error", err.Error()))
				}
			}(n.Component)
			rs = append(rs, r)
		}
		g.stages = append(g.stages, rs)
	}
	return g
}

// Stop stops the stages in the order they were given: it ends the contexts of a stage's
// components and waits for all of them to return before it goes on to the next stage.
func (g *Group) Stop() {
	for _, st := range g.stages {
		for _, r := range st {
			r.cancel()
		}
		for _, r := range st {
			start := time.Now()
			<-r.done
			g.log.Info("background component stopped", slog.String("component", r.name), slog.Duration("waited", time.Since(start)))
		}
	}
}
