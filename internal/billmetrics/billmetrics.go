// Package billmetrics holds the Prometheus counters of billing totals
// (docs/deploy.md, "Metrics"; docs/billing.md) that front ends and workers
// share: units reserved at create and creates refused for funds (front
// end), units charged and released and usage overruns capped at each
// settlement (whichever process ran the settling transition, told by
// taskstate.Options.Settled). Labelled by catalog entry (tool) only, never
// by task id or principal. Defined once here because both processes count
// settlements, and `mcpq dev` shows both on one registry.
package billmetrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpq/mcpq/taskstate/billing"
)

// Counters are the billing counters of one registry.
type Counters struct {
	reserved *prometheus.CounterVec // tool
	refused  *prometheus.CounterVec // tool
	charged  *prometheus.CounterVec // tool
	released *prometheus.CounterVec // tool
	capped   *prometheus.CounterVec // tool
}

// New registers the counters on reg, or takes those already registered
// there (a front end and a worker in one process).
func New(reg prometheus.Registerer) *Counters {
	vec := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"tool"})
		if err := reg.Register(v); err != nil {
			if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
				if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
					return existing
				}
			}
			panic(err) // a programming error, like MustRegister's
		}
		return v
	}
	return &Counters{
		reserved: vec("mcpq_billing_reserved_units_total",
			"Units reserved by task creates (the price ceiling of priced tools), by catalog entry."),
		refused: vec("mcpq_billing_refused_total",
			"Task creates refused because the caller's available balance did not cover the ceiling, by catalog entry."),
		charged: vec("mcpq_billing_charged_units_total",
			"Units charged by settlements this process ran (completed, cancelled, expired), by catalog entry."),
		released: vec("mcpq_billing_released_units_total",
			"Units released back to balances by settlements this process ran, by catalog entry."),
		capped: vec("mcpq_billing_capped_total",
			"Settlements whose metered usage was above the reservation (only the reservation was charged), by catalog entry."),
	}
}

// Reserved counts a create of tool that reserved units.
func (c *Counters) Reserved(tool string, units int64) {
	c.reserved.WithLabelValues(tool).Add(float64(units))
}

// Refused counts a create of tool refused for funds.
func (c *Counters) Refused(tool string) {
	c.refused.WithLabelValues(tool).Inc()
}

// Settled counts one settlement (taskstate.Options.Settled).
func (c *Counters) Settled(s billing.Settlement) {
	c.charged.WithLabelValues(s.Tool).Add(float64(s.Receipt.Charged))
	c.released.WithLabelValues(s.Tool).Add(float64(s.Receipt.Released))
	if s.Receipt.Capped {
		c.capped.WithLabelValues(s.Tool).Inc()
	}
}
