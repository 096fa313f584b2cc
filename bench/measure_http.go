package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/taskstate"
)

// getFixtures is how many task records the tasks/get loads read.
const getFixtures = 1000

// httpGroups measures groups 1 to 4 at each concurrency, back to back so
// that the machine's drift hits every figure of a concurrency alike: raw
// asynq enqueue, the two HTTP floors, the go-sdk peer, mcpq create and
// mcpq tasks/get. All servers are child processes on the same Redis; Redis
// is flushed before each concurrency.
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

		raw, err := s.loadRow(ctx, "1", fmt.Sprintf("asynq Client.Enqueue c=%d", c), c, nil, rawEnqueueOp(enq))
		if err != nil {
			return err
		}
		s.rep.add(raw)
		fEnq, err := s.loadRow(ctx, "1", fmt.Sprintf("HTTP+enqueue floor c=%d", c), c, floorEnq, fixedOp(floorEnq.addr, floorReq, isTask))
		if err != nil {
			return err
		}
		s.rep.add(fEnq)
		fRead, err := s.loadRow(ctx, "1", fmt.Sprintf("HTTP+HGETALL floor c=%d", c), c, floorRead, idOp(floorRead.addr, readTpl, taskIDs, expect200(`"status":"working"`)))
		if err != nil {
			return err
		}
		s.rep.add(fRead)
		pr, err := s.loadRow(ctx, "4", fmt.Sprintf("go-sdk stateless tools/call c=%d", c), c, peer, fixedOp(peer.addr, peerReq, isOK))
		if err != nil {
			return err
		}
		s.rep.add(pr)

		var stop func() *memory
		if c == s.maxConc() {
			stop = sampleMemory(fe)
		}
		create, err := s.loadRow(ctx, "2", fmt.Sprintf("mcpq create c=%d", c), c, fe, fixedOp(fe.addr, createReq, isTask))
		if err != nil {
			return err
		}
		get, err := s.loadRow(ctx, "3", fmt.Sprintf("mcpq tasks/get c=%d", c), c, fe, idOp(fe.addr, getTpl, taskIDs, isWorking))
		if stop != nil {
			keepMax(&s.feLoad, stop())
		}
		if err != nil {
			return err
		}
		create.Baseline, create.BaselineValue, create.Target = fEnq.Figure, fEnq.Value, &Target{"ratio>=", 0.6}
		s.rep.add(create)
		vsPeer := *create
		vsPeer.Figure += " vs peer"
		vsPeer.Baseline, vsPeer.BaselineValue, vsPeer.Target = pr.Figure, pr.Value, &Target{"ratio>=", 1.5}
		vsPeer.CPU, vsPeer.Stats = nil, nil
		s.rep.add(&vsPeer)

		get.Baseline, get.BaselineValue, get.Target = fRead.Figure, fRead.Value, &Target{"ratio>=", 0.7}
		s.rep.add(get)
		getPeer := *get
		getPeer.Figure += " vs peer"
		getPeer.Baseline, getPeer.BaselineValue, getPeer.Target = pr.Figure, pr.Value, &Target{"ratio>=", 2}
		getPeer.CPU, getPeer.Stats = nil, nil
		s.rep.add(&getPeer)
		s.rep.add(&Row{Group: "3", Figure: fmt.Sprintf("mcpq tasks/get p50 c=%d", c), Value: ms(get.Stats.P50), Unit: "ms",
			Baseline: fRead.Figure + " p50", BaselineValue: ms(fRead.Stats.P50)})
		s.rep.add(&Row{Group: "3", Figure: fmt.Sprintf("mcpq tasks/get p99 c=%d", c), Value: ms(get.Stats.P99), Unit: "ms",
			Baseline: fRead.Figure + " p99", BaselineValue: ms(fRead.Stats.P99)})
	}
	return nil
}

// rawEnqueueOp enqueues a job like the front end's straight through the
// asynq client, with no HTTP.
func rawEnqueueOp(enq *asynq.Client) NewOp {
	return func(int) (Op, func(), error) {
		return func(ctx context.Context) error {
			ref := taskstate.Ref{Owner: anonymousOwner, ID: taskstate.NewID()}
			_, err := enq.EnqueueContext(ctx, asynq.NewTask(taskstate.JobType, taskstate.EncodeJob(ref)),
				asynq.TaskID(ref.ID), asynq.Queue(floorQueue), asynq.MaxRetry(3), asynq.Timeout(jobTimeout))
			return err
		}, nil, nil
	}
}
