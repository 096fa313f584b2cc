package bench

import (
	"context"
	"fmt"
	"time"
)

// upstreamPrefix names the peer's tools in the catalog of a worker that
// fronts it (the -upstream flag of RoleWorker).
const upstreamPrefix = "up."

// upstreamLatency (group 12) times a trivial upstream tool, the go-sdk
// peer's noop over Streamable HTTP, called through mcpq (front end, Redis,
// a worker fronting the peer as an upstream MCP server: a sync tool, so
// the call answers its result) against the same call made directly to the
// peer, in one run: p50 and p99 side by side, closed loops at c=1 and c=16,
// the two measured back to back.
func (s *suite) upstreamLatency(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	peer, err := s.spawn(ctx, RolePeer)
	if err != nil {
		return err
	}
	defer peer.stop()
	wk, err := s.spawn(ctx, RoleWorker, "-upstream", "http://"+peer.addr+"/mcp")
	if err != nil {
		return err
	}
	defer wk.stop()
	fe, err := s.spawn(ctx, RoleFrontend)
	if err != nil {
		return err
	}
	defer fe.stop()
	isOK := expect200(`"text":"ok"`)
	through := fixedOp(fe.addr, toolCallRequest(fe.addr, upstreamPrefix+toolNoop, metaPlain), isOK)
	direct := fixedOp(peer.addr, toolCallRequest(peer.addr, toolNoop, metaPlain), isOK)
	for _, c := range []int{1, 16} {
		up, err := Load(ctx, c, s.cfg.Warmup, s.cfg.Duration, through)
		if err != nil {
			return fmt.Errorf("through mcpq: %w", err)
		}
		dir, err := Load(ctx, c, s.cfg.Warmup, s.cfg.Duration, direct)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		for _, q := range []struct {
			name string
			at   func(*Stats) time.Duration
		}{{"p50", func(st *Stats) time.Duration { return st.P50 }}, {"p99", func(st *Stats) time.Duration { return st.P99 }}} {
			row := &Row{Group: "11", Figure: fmt.Sprintf("upstream tool through mcpq %s c=%d", q.name, c),
				Value: ms(q.at(&up)), Unit: "ms", Baseline: fmt.Sprintf("the same call direct to the upstream %s", q.name),
				BaselineValue: ms(q.at(&dir)),
				Note:          fmt.Sprintf("%d calls through mcpq (%d errors), %d direct (%d errors)", up.Ops, up.Errors, dir.Ops, dir.Errors)}
			if row.BaselineValue > 0 {
				row.Ratio = row.Value / row.BaselineValue
			}
			if q.name == "p50" {
				row.Stats = &up
			}
			s.rep.add(row)
		}
	}
	return nil
}
