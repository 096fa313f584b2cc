package taskstate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
)

// TestBillingProperty drives thousands of concurrent priced and free tasks
// through every script on a real redis-server, the way workers, clients,
// the takeover scan and the reaper would at once: duplicate deliveries,
// deliveries that die after their claim (a worker killed with SIGKILL:
// nothing more is written; the takeover scan takes the task back and, past
// the lost-delivery limit, fails it), metered usage (also past the
// ceiling), input waits answered by the client, cancels at any time,
// failures, completions, and TTLs that run out while the task works. Then
// every live task is ended (cancel, overdue takeover, reaper) and the
// books are checked for every principal: credited = balance + reserved +
// charged, nothing reserved, one settle or release per reserved task (the
// ledger replayed in order never takes a balance below zero), and every
// task is terminal or reaped.
func TestBillingProperty(t *testing.T) {
	b := redistest.Real(t)
	tasks, parallel := 4000, 48
	if testing.Short() {
		tasks = 400
	}
	opts := taskstate.Options{Prefix: b.Prefix, LostAfter: 30 * time.Millisecond, CancelGrace: 20 * time.Millisecond,
		ExpiryGrace: time.Hour}
	st := taskstate.New(b.Client, opts)
	// later is the same store an hour on: every TTL has run out, every
	// heartbeat and cancel grace is overdue.
	later := opts
	later.Clock = func() time.Time { return time.Now().Add(time.Hour) }
	stLater := taskstate.New(b.Client, later)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	principals := make([]string, 6)
	for i := range principals {
		principals[i] = fmt.Sprintf("%s-p%d", t.Name(), i)
		if _, err := st.Accounts().Credit(ctx, principals[i], int64(2000+i*1500)); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu      sync.Mutex
		created []taskstate.Ref
		runs    sync.WaitGroup // deliveries and client actions
		keySeq  atomic.Int64
		refused atomic.Int64
		unknown = make(chan error, 1)
	)
	fail := func(what string, err error) {
		select {
		case unknown <- fmt.Errorf("%s: %w", what, err):
		default:
		}
	}
	// expected: the refusals a script may answer under this concurrency.
	expected := func(err error) bool {
		return err == nil || taskstate.NotOwned(err) || errors.Is(err, taskstate.ErrCancelled) ||
			errors.Is(err, taskstate.ErrIllegal)
	}
	var deliver func(ref taskstate.Ref, seq int64)
	deliver = func(ref taskstate.Ref, seq int64) {
		defer runs.Done()
		claim, err := st.Claim(ctx, ref, seq, taskstate.Share{})
		if err != nil {
			if !expected(err) {
				fail("claim", err)
			}
			return
		}
		a := claim.Attempt
		if rand.IntN(8) == 0 {
			return // killed after its claim: nothing more from this delivery
		}
		for range rand.IntN(4) {
			if _, _, err := st.Meter(ctx, ref, a, rand.Int64N(25)+1); !expected(err) {
				fail("meter", err)
			}
		}
		if rand.IntN(12) == 0 {
			return // killed after metering
		}
		var o taskstate.Outcome
		switch rand.IntN(8) {
		case 0:
			key := fmt.Sprint("k", keySeq.Add(1))
			err := st.RequestInput(ctx, ref, a, map[string]json.RawMessage{key: json.RawMessage(`{"method":"elicitation/create"}`)})
			if err != nil {
				if !expected(err) {
					fail("input", err)
				}
				return
			}
			if rand.IntN(5) == 0 {
				return // never answered: ended by the final cancel
			}
			runs.Add(1)
			go func() { // the client answers; the last answer resumes the task
				defer runs.Done()
				res, err := st.Answer(ctx, ref, map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept"}`)})
				if !expected(err) {
					fail("answer", err)
				}
				if err == nil && res.Resume > 0 {
					runs.Add(1)
					go deliver(ref, res.Resume)
				}
			}()
			return
		case 1:
			o = outcome(proto.StatusFailed)
		case 2:
			o = outcome(proto.StatusCancelled)
		default:
			o = outcome(proto.StatusCompleted)
		}
		if err := st.Finish(ctx, ref, a, o); !expected(err) {
			fail("finish", err)
		}
	}

	// The takeover scan and the reaper run all along.
	bgCtx, stopBG := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Go(func() {
		for bgCtx.Err() == nil {
			taken, _, err := st.TakeOver(bgCtx, 2, true)
			if err != nil && bgCtx.Err() == nil {
				fail("takeover", err)
			}
			for _, tb := range taken {
				if rand.IntN(4) != 0 { // sometimes the new job is lost as well
					runs.Add(1)
					go deliver(tb.Ref, tb.Seq)
				}
			}
			time.Sleep(5 * time.Millisecond) // pacing only
		}
	})
	bg.Go(func() {
		for bgCtx.Err() == nil {
			if _, err := st.Reap(bgCtx, nil); err != nil && bgCtx.Err() == nil {
				fail("reap", err)
			}
			time.Sleep(5 * time.Millisecond) // pacing only
		}
	})

	sem := make(chan struct{}, parallel)
	var clients sync.WaitGroup
	for i := range tasks {
		sem <- struct{}{}
		clients.Go(func() {
			defer func() { <-sem }()
			p := taskstate.CreateParams{Principal: principals[rand.IntN(len(principals))], Tool: fmt.Sprint("tool", i%7)}
			if i%7 != 0 { // tool0 is free
				p.Reserve = amount(rand.Int64N(60))
			}
			if rand.IntN(3) == 0 {
				p.TTLMs = ttl(rand.Int64N(80) + 1) // runs out while the task works
			}
			rec, err := st.Create(ctx, p)
			switch {
			case errors.Is(err, billing.ErrFunds):
				refused.Add(1)
				return
			case err != nil:
				fail("create", err)
				return
			}
			mu.Lock()
			created = append(created, rec.Ref)
			mu.Unlock()
			deliveries := 1
			if rand.IntN(4) == 0 {
				deliveries = 2 // asynq delivered the job twice
			}
			for range deliveries {
				runs.Add(1)
				go deliver(rec.Ref, 0)
			}
			if rand.IntN(5) == 0 {
				runs.Add(1)
				go func() {
					defer runs.Done()
					if err := st.RequestCancel(ctx, rec.Ref); err != nil && !errors.Is(err, taskstate.ErrNotFound) {
						fail("cancel", err)
					}
				}()
			}
		})
	}
	clients.Wait()
	runs.Wait()
	stopBG()
	bg.Wait()
	runs.Wait() // deliveries the takeover scan started last
	select {
	case err := <-unknown:
		t.Fatal(err)
	default:
	}

	// End what is still live: cancel (ends queued and parked tasks at once,
	// flags held ones), then the overdue takeover and the reaper an hour on.
	for _, ref := range created {
		if err := st.RequestCancel(ctx, ref); err != nil && !errors.Is(err, taskstate.ErrNotFound) {
			t.Fatalf("final cancel: %v", err)
		}
	}
	if _, _, err := stLater.TakeOver(ctx, 2, true); err != nil {
		t.Fatal(err)
	}
	if _, err := stLater.Reap(ctx, nil); err != nil {
		t.Fatal(err)
	}

	e := &env{b: b, s: st}
	settled := map[string]proto.LedgerEntry{}
	for _, p := range principals {
		for id, s := range e.books(t, p, 0) {
			settled[id] = s
		}
		if a := e.account(t, p); a.Balance < 0 {
			t.Fatalf("%s: balance %d", p, a.Balance)
		}
	}
	outcomes := map[string]int{}
	for _, ref := range created {
		rec, err := st.Get(ctx, ref)
		switch {
		case errors.Is(err, taskstate.ErrNotFound):
			// Reaped at its TTL: ended by then, or expired working (the
			// books hold its one settlement either way).
			if s, ok := settled[ref.ID]; ok {
				outcomes["reaped after "+s.Outcome]++
			} else {
				outcomes["reaped"]++
			}
		case err != nil:
			t.Fatal(err)
		case !rec.Status.Terminal():
			t.Fatalf("task %s still %s after the end", ref.ID, rec.Status)
		default:
			outcomes[string(rec.Status)]++
			if s, ok := settled[ref.ID]; ok && s.Outcome != string(rec.Status) {
				t.Fatalf("task %s %s but settled %+v", ref.ID, rec.Status, s)
			}
		}
	}
	t.Logf("%d tasks created (%d refused for funds), %d settled or released; outcomes %v",
		len(created), refused.Load(), len(settled), outcomes)
	if refused.Load() == 0 || outcomes["reaped after expired"] == 0 || outcomes["cancelled"] == 0 || outcomes["failed"] == 0 ||
		outcomes["completed"] == 0 {
		t.Fatalf("the run did not reach every ending: %v, %d refused", outcomes, refused.Load())
	}
}
