package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/taskstate"
)

// getFixtures is how many task records the tasks/get loads read.
const getFixtures = 1000

// httpGroups measures groups 1 to 4 at each concurrency: raw asynq
// enqueue, the two HTTP floors, the go-sdk peer, mcpq create and mcpq
// tasks/get. At each concurrency the windows run in Config.Rounds rounds,
// each round measuring every figure once, back to back, so that the
// machine's drift hits a round's figures alike; the rows give the medians
// of the rounds and each ratio the median of the per-round ratios
// (rounds.go). Within a round each mcpq figure runs next to its baselines
// (enqueue floor, create, peer, tasks/get, HGETALL floor). All servers are
// child processes on the same Redis, started once for the run with the
// same load generator for every window; Redis is flushed before each
// concurrency (not between rounds: the front end's catalog cache would
// miss the catalog for a second after a flush).
func (s *suite) httpGroups(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	fe, err := s.spawn(ctx, RoleFrontend)
	if err != nil {
		return err
	}
	defer fe.stop()
	time.Sleep(time.Second)
	if m, err := fe.memory(); err == nil {
		s.feIdle = &m
	}
	floorEnq, err := s.spawn(ctx, RoleFloorEnqueue)
	if err != nil {
		return err
	}
	defer floorEnq.stop()
	floorRead, err := s.spawn(ctx, RoleFloorRead)
	if err != nil {
		return err
	}
	defer floorRead.stop()
	peer, err := s.spawn(ctx, RolePeer)
	if err != nil {
		return err
	}
	defer peer.stop()

	enq := asynq.NewClientFromRedisClient(s.rdb)
	createReq := toolCallRequest(fe.addr, toolNoop, metaTasks)
	floorReq := toolCallRequest(floorEnq.addr, toolNoop, metaTasks) // the same request, for the same parsing cost
	peerReq := toolCallRequest(peer.addr, toolNoop, metaPlain)
	getTpl, readTpl := newIDTemplate(fe.addr, "tasks/get"), newIDTemplate(floorRead.addr, "tasks/get")
	isTask, isWorking, isOK := expect200(`"resultType":"task"`), expect200(`"status":"working"`), expect200(`"text":"ok"`)

	// The figures of a round, in the order they are measured.
	const (
		figRaw = iota
		figFloorEnq
		figCreate
		figPeer
		figGet
		figFloorRead
		nFigs
	)
	type figure struct {
		group, name string
		server      *proc // nil: in this process
		op          NewOp
	}
	for _, c := range s.cfg.Concurrency {
		if err := s.flush(ctx); err != nil {
			return err
		}
		if err := s.publishCatalog(ctx); err != nil {
			return err
		}
		refs, err := s.createTasks(ctx, getFixtures, 16, false)
		if err != nil {
			return err
		}
		taskIDs := ids(refs)
		time.Sleep(1200 * time.Millisecond) // the front end's catalog cache (1 s) sees the new catalog

		figs := [nFigs]figure{
			figRaw:       {"1", fmt.Sprintf("asynq Client.Enqueue c=%d", c), nil, rawEnqueueOp(enq)},
			figFloorEnq:  {"1", fmt.Sprintf("HTTP+enqueue floor c=%d", c), floorEnq, fixedOp(floorEnq.addr, floorReq, isTask)},
			figCreate:    {"2", fmt.Sprintf("mcpq create c=%d", c), fe, fixedOp(fe.addr, createReq, isTask)},
			figPeer:      {"4", fmt.Sprintf("go-sdk stateless tools/call c=%d", c), peer, fixedOp(peer.addr, peerReq, isOK)},
			figGet:       {"3", fmt.Sprintf("mcpq tasks/get c=%d", c), fe, idOp(fe.addr, getTpl, taskIDs, isWorking)},
			figFloorRead: {"1", fmt.Sprintf("HTTP+HGETALL floor c=%d", c), floorRead, idOp(floorRead.addr, readTpl, taskIDs, isWorking)},
		}
		var rounds [nFigs][]*Row
		for r := range s.cfg.Rounds {
			for i, f := range figs {
				var stop func() *memory
				if f.server == fe && c == s.maxConc() {
					stop = sampleMemory(fe)
				}
				row, err := s.loadRow(ctx, f.group, f.name, c, f.server, f.op)
				if stop != nil {
					keepMax(&s.feLoad, stop())
				}
				if err != nil {
					return err
				}
				s.roundDone(r, row)
				rounds[i] = append(rounds[i], row)
			}
		}

		raw, fEnq, fRead, pr := rounds[figRaw], rounds[figFloorEnq], rounds[figFloorRead], rounds[figPeer]
		for _, rows := range [][]*Row{raw, fEnq, fRead, pr} {
			s.rep.add(combine(rows))
		}
		create := combine(rounds[figCreate])
		create.compareRows(rounds[figCreate], fEnq, &Target{"ratio>=", 0.6})
		s.rep.add(create)
		vsPeer := combine(rounds[figCreate])
		vsPeer.Figure += " vs peer"
		vsPeer.CPU, vsPeer.Stats, vsPeer.detail = nil, nil, ""
		vsPeer.compareRows(rounds[figCreate], pr, &Target{"ratio>=", 1.5})
		s.rep.add(vsPeer)

		get := combine(rounds[figGet])
		get.compareRows(rounds[figGet], fRead, &Target{"ratio>=", 0.7})
		s.rep.add(get)
		getPeer := combine(rounds[figGet])
		getPeer.Figure += " vs peer"
		getPeer.CPU, getPeer.Stats, getPeer.detail = nil, nil, ""
		getPeer.compareRows(rounds[figGet], pr, &Target{"ratio>=", 2})
		s.rep.add(getPeer)

		for _, q := range []struct {
			name string
			at   func(*Stats) time.Duration
		}{{"p50", func(st *Stats) time.Duration { return st.P50 }}, {"p99", func(st *Stats) time.Duration { return st.P99 }}} {
			lat := func(rows []*Row) []float64 {
				out := make([]float64, len(rows))
				for i, r := range rows {
					out[i] = ms(q.at(r.Stats))
				}
				return out
			}
			row := &Row{Group: "3", Figure: fmt.Sprintf("mcpq tasks/get %s c=%d", q.name, c), Unit: "ms"}
			row.compare(fRead[0].Figure+" "+q.name, lat(rounds[figGet]), lat(fRead), nil, "", "")
			s.rep.add(row)
		}
	}
	return nil
}

// rawEnqueueOp enqueues a job like the front end's straight through the
// asynq client, with no HTTP.
func rawEnqueueOp(enq *asynq.Client) NewOp {
	return func(int) (Op, func(), error) {
		return func(ctx context.Context) error {
			ref := taskstate.Ref{Owner: anonymousOwner, ID: taskstate.NewID()}
			_, err := enq.EnqueueContext(ctx, asynq.NewTask(queue.Type, queue.Payload(queue.Job{Ref: ref, Tool: toolNoop})),
				asynq.TaskID(ref.ID), asynq.Queue(floorQueue), asynq.MaxRetry(queue.MaxRetry), asynq.Timeout(jobTimeout))
			return err
		}, nil, nil
	}
}
