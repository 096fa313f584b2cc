package frontend

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpq/mcpq/taskstate/series"
)

// depthSampleInterval is how often a front end samples its queues' depth
// into the series (every front end does; the last sample of a minute is
// kept, so replicas agree rather than add up).
const depthSampleInterval = 5 * time.Second

// startSeries runs the series recorder's flush loop and the queue depth
// sampler until stopSeries.
func (s *Server) startSeries() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		s.series.Run(ctx, func(err error) { s.notes.warn(s.log, "series: flush the operator view numbers", "err", err) })
	})
	if s.jobs != nil {
		wg.Go(func() { s.sampleDepth(ctx) })
	}
	s.seriesStop = func() {
		cancel()
		wg.Wait()
	}
}

// stopSeries ends what startSeries started, after a last flush.
func (s *Server) stopSeries() {
	if s.seriesStop != nil {
		s.seriesStop()
	}
}

// sampleDepth records each known queue's pending jobs every
// depthSampleInterval (asynq's inspector: a few commands per queue).
func (s *Server) sampleDepth(ctx context.Context) {
	tick := time.NewTicker(depthSampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		names, err := s.jobs.Queues()
		if err != nil {
			s.notes.warn(s.log, "series: sample queue depth", "err", err)
			continue
		}
		for name := range names {
			if d, err := s.jobs.Depth(name); err == nil {
				s.series.Depth(name, d.Pending)
			}
		}
	}
}

// opsSeries serves GET /v1/ops/series?minutes=N (1 to series.MaxMinutes,
// default 60): the fleet's per-minute numbers (series.View).
func (s *Server) opsSeries(w http.ResponseWriter, r *http.Request) {
	n := 60
	if v := r.URL.Query().Get("minutes"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 1 || m > series.MaxMinutes {
			writeREST(w, http.StatusBadRequest, restError{Error: "minutes must be a whole number from 1 to " + strconv.Itoa(series.MaxMinutes)})
			return
		}
		n = m
	}
	v, err := series.Read(r.Context(), s.cfg.Redis, s.cfg.Prefix, s.store.Now(), n)
	if err != nil {
		s.restFail(w, err)
		return
	}
	writeREST(w, http.StatusOK, v)
}
