package postgres

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector exposes pgxpool's statistics at scrape time.
type poolCollector struct {
	pool                                         *pgxpool.Pool
	acquired, idle, total, max, acquires, waitNS *prometheus.Desc
}

// PoolCollector exposes the connection pool's statistics as slipway_db_pool_* metrics. It lives
// here, beside the pool, so that nothing but the store depends on the Postgres driver.
func (db *DB) PoolCollector() prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("slipway_db_pool_"+name, help, nil, nil)
	}
	c := &poolCollector{
		acquired: d("acquired_connections", "Connections in use."),
		idle:     d("idle_connections", "Idle connections."),
		total:    d("total_connections", "Open connections."),
		max:      d("max_connections", "The pool's size limit."),
		acquires: d("acquires_total", "Connections acquired from the pool."),
		waitNS:   d("acquire_wait_seconds_total", "Time spent waiting for a connection."),
	}
	if db.pool != nil { // a DB never opened (a test that lists the metrics) describes them only
		c.pool = db.Pool
	}
	return c
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.max, c.acquires, c.waitNS} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(c.acquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(c.acquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.waitNS, prometheus.CounterValue, s.AcquireDuration().Seconds())
}
