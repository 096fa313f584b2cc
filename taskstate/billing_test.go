package taskstate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
)

func amount(n int64) *int64 { return &n }

// settlements collects what a store's Options.Settled is told.
type settlements struct {
	mu   sync.Mutex
	list []billing.Settlement
}

func (s *settlements) add(st billing.Settlement) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, st)
}

func (s *settlements) all() []billing.Settlement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// credit adds n to who's account.
func (e *env) credit(t *testing.T, who string, n int64) {
	t.Helper()
	if _, err := e.s.Accounts().Credit(ctx(t), who, n); err != nil {
		t.Fatalf("Credit: %v", err)
	}
}

// account reads who's account.
func (e *env) account(t *testing.T, who string) billing.Account {
	t.Helper()
	a, err := e.s.Accounts().Get(ctx(t), who)
	if err != nil {
		t.Fatalf("Account: %v", err)
	}
	return a
}

// ledger reads who's whole ledger, page by page.
func (e *env) ledger(t *testing.T, who string) []proto.LedgerEntry {
	t.Helper()
	var all []proto.LedgerEntry
	cursor := ""
	for {
		page, next, err := e.s.Accounts().Ledger(ctx(t), who, cursor, 7) // small pages: the cursor is exercised
		if err != nil {
			t.Fatalf("Ledger: %v", err)
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

// books checks who's account against its ledger: credited = balance +
// reserved + charged; replayed in order, the balance never went below 0
// and ends where the account is; each task reserved once and settled (or
// released) at most once, exactly once when it ended; nothing stays
// reserved once every task ended (open: the tasks still live). It returns
// the settle/release entries by task.
func (e *env) books(t *testing.T, who string, open int) map[string]proto.LedgerEntry {
	t.Helper()
	a := e.account(t, who)
	if a.Credited != a.Balance+a.Reserved+a.Charged {
		t.Fatalf("credited %d != balance %d + reserved %d + charged %d", a.Credited, a.Balance, a.Reserved, a.Charged)
	}
	var balance, reserved, charged int64
	reserves := map[string]int64{}
	settles := map[string]proto.LedgerEntry{}
	for _, en := range e.ledger(t, who) {
		switch en.Kind {
		case "credit":
			balance += en.Amount
		case "reserve":
			if _, dup := reserves[en.Task]; dup {
				t.Fatalf("task %s reserved twice", en.Task)
			}
			reserves[en.Task] = en.Reserved
			balance -= en.Reserved
			reserved += en.Reserved
		case "settle", "release":
			if _, dup := settles[en.Task]; dup {
				t.Fatalf("task %s settled twice: %+v", en.Task, en)
			}
			if reserves[en.Task] != en.Reserved || en.Charged+en.Released != en.Reserved || en.Charged > en.Reserved {
				t.Fatalf("settlement does not add up: %+v (reserved %d)", en, reserves[en.Task])
			}
			if en.Kind == "release" && en.Charged != 0 {
				t.Fatalf("a release charged: %+v", en)
			}
			settles[en.Task] = en
			balance += en.Released
			reserved -= en.Reserved
			charged += en.Charged
		default:
			t.Fatalf("unknown ledger entry %+v", en)
		}
		if balance < 0 {
			t.Fatalf("the balance went to %d at entry %+v", balance, en)
		}
	}
	if balance != a.Balance || reserved != a.Reserved || charged != a.Charged {
		t.Fatalf("ledger replays to balance %d reserved %d charged %d; account %+v", balance, reserved, charged, a)
	}
	if got := len(reserves) - len(settles); got != open {
		t.Fatalf("%d reservations open, want %d", got, open)
	}
	if open == 0 && a.Reserved != 0 {
		t.Fatalf("reserved %d with every task ended", a.Reserved)
	}
	return settles
}

// receipt decodes the record's receipt.
func receipt(t *testing.T, r *taskstate.Record) billing.Receipt {
	t.Helper()
	var rc billing.Receipt
	if err := json.Unmarshal(r.Receipt, &rc); err != nil {
		t.Fatalf("receipt %q: %v", r.Receipt, err)
	}
	return rc
}

// TestBillingSettles: every way a task ends settles its reservation once,
// by the policy: completed, cancelled and expired charge the metered
// usage (capped at the ceiling), failed releases everything.
func TestBillingSettles(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		type end func(e *env, ref taskstate.Ref, attempt int64) error
		finish := func(status proto.TaskStatus) end {
			return func(e *env, ref taskstate.Ref, a int64) error {
				return e.s.Finish(ctx(t), ref, a, outcome(status))
			}
		}
		cases := []struct {
			name    string
			usage   int64
			end     end
			outcome string
			charged int64
		}{
			{"completed charges the usage", 30, finish(proto.StatusCompleted), "completed", 30},
			{"usage past the ceiling is capped", 250, finish(proto.StatusCompleted), "completed", 100},
			{"failed releases everything", 30, finish(proto.StatusFailed), "failed", 0},
			{"a worker's cancelled charges the work done", 40, finish(proto.StatusCancelled), "cancelled", 40},
			{"tasks/cancel of a parked task charges the work done", 20, func(e *env, ref taskstate.Ref, a int64) error {
				if err := e.s.RequestInput(ctx(t), ref, a, map[string]json.RawMessage{"k": json.RawMessage(`{"method":"elicitation/create"}`)}); err != nil {
					return err
				}
				return e.s.RequestCancel(ctx(t), ref)
			}, "cancelled", 20},
			{"a cancel acknowledged before the outcome charges the work done", 10, func(e *env, ref taskstate.Ref, a int64) error {
				if err := e.s.RequestCancel(ctx(t), ref); err != nil {
					return err
				}
				err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCompleted))
				if !errors.Is(err, taskstate.ErrCancelled) {
					t.Fatalf("Finish after cancel: %v", err)
				}
				return nil
			}, "cancelled", 10},
			{"an overdue cancel the takeover ends charges the work done", 5, func(e *env, ref taskstate.Ref, a int64) error {
				if err := e.s.RequestCancel(ctx(t), ref); err != nil {
					return err
				}
				e.clock.Advance(time.Minute)
				_, stats := e.takeover(t, 3)
				if stats.Cancelled != 1 {
					t.Fatalf("takeover: %+v", stats)
				}
				return nil
			}, "cancelled", 5},
			{"failed after lost deliveries releases everything", 5, func(e *env, ref taskstate.Ref, a int64) error {
				e.clock.Advance(time.Minute)
				_, stats := e.takeover(t, 0)
				if stats.Failed != 1 {
					t.Fatalf("takeover: %+v", stats)
				}
				return nil
			}, "failed", 0},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var told settlements
				e := newEnvOpts(t, b, taskstate.Options{Settled: told.add})
				who := t.Name() // each case its own account
				e.credit(t, who, 1000)
				ref := e.create(t, taskstate.CreateParams{Principal: who, Reserve: amount(100), TTLMs: ttl(3600_000)})
				if a := e.account(t, who); a.Balance != 900 || a.Reserved != 100 || a.Available != 900 {
					t.Fatalf("after reserve: %+v", a)
				}
				a := e.claim(t, ref)
				if usage, reserved, err := e.s.Meter(ctx(t), ref, a, c.usage); err != nil || usage != c.usage || reserved != 100 {
					t.Fatalf("Meter: %d %d %v", usage, reserved, err)
				}
				if err := c.end(e, ref, a); err != nil {
					t.Fatalf("end: %v", err)
				}
				// A duplicate delivery's late outcome settles nothing more.
				_ = e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCompleted))
				if _, _, err := e.s.Meter(ctx(t), ref, a, 1); !taskstate.NotOwned(err) {
					t.Fatalf("Meter after the end: %v", err)
				}
				settles := e.books(t, who, 0)
				s := settles[ref.ID]
				if s.Outcome != c.outcome || s.Charged != c.charged || s.Released != 100-c.charged || s.Usage != c.usage {
					t.Fatalf("settlement %+v", s)
				}
				if a := e.account(t, who); a.Balance != 1000-c.charged || a.Charged != c.charged {
					t.Fatalf("account %+v", a)
				}
				r := e.get(t, ref)
				rc := receipt(t, r)
				if rc.Reserved != 100 || rc.Charged != c.charged || rc.Released != 100-c.charged ||
					rc.Capped != (c.usage > 100) || len(rc.Entries) != 2 || rc.Entries[1] != s.ID {
					t.Fatalf("receipt %+v, settlement %+v", rc, s)
				}
				// The store told of the one settlement, as the receipt has it.
				if got := told.all(); len(got) != 1 || got[0].Tool != "echo" || !reflect.DeepEqual(got[0].Receipt, rc) {
					t.Fatalf("Options.Settled told %+v, want one of echo with %+v", got, rc)
				}
				if r.Status == proto.StatusCompleted {
					var res struct {
						Meta map[string]billing.Receipt `json:"_meta"`
					}
					if err := json.Unmarshal(r.Result, &res); err != nil || res.Meta[proto.MetaReceipt].Entries[1] != s.ID {
						t.Fatalf("result %s: %v", r.Result, err)
					}
				}
			})
		}
		t.Run("expiry charges the work done, also when Redis dropped the record first", func(t *testing.T) {
			for _, dropped := range []bool{false, true} {
				var told settlements
				e := newEnvOpts(t, b, taskstate.Options{Settled: told.add})
				who := fmt.Sprint(t.Name(), dropped)
				e.credit(t, who, 500)
				ref := e.create(t, taskstate.CreateParams{Principal: who, Reserve: amount(200), TTLMs: ttl(1000)})
				a := e.claim(t, ref)
				if _, _, err := e.s.Meter(ctx(t), ref, a, 70); err != nil {
					t.Fatal(err)
				}
				if dropped {
					if err := b.Client.Del(ctx(t), e.s.Keys().Task(ref)).Err(); err != nil {
						t.Fatal(err)
					}
				}
				e.clock.Advance(2 * time.Second)
				if _, err := e.s.Reap(ctx(t), nil); err != nil {
					t.Fatal(err)
				}
				s := e.books(t, who, 0)[ref.ID]
				if s.Outcome != "expired" || s.Charged != 70 || s.Released != 130 {
					t.Fatalf("dropped %v: settlement %+v", dropped, s)
				}
				if got := told.all(); len(got) != 1 || got[0].Receipt.Charged != 70 || got[0].Receipt.Released != 130 ||
					got[0].Receipt.Entries[1] != s.ID {
					t.Fatalf("dropped %v: Options.Settled told %+v", dropped, got)
				}
			}
		})
		t.Run("free tools and billing off touch no account", func(t *testing.T) {
			var told settlements
			e := newEnvOpts(t, b, taskstate.Options{Settled: told.add})
			ref := e.create(t, taskstate.CreateParams{Principal: t.Name()})
			a := e.claim(t, ref)
			if _, reserved, err := e.s.Meter(ctx(t), ref, a, 5); err != nil || reserved != -1 {
				t.Fatalf("Meter of a free task: %d %v", reserved, err)
			}
			if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCompleted)); err != nil {
				t.Fatal(err)
			}
			if r := e.get(t, ref); r.Receipt != nil {
				t.Fatalf("receipt of a free task: %s", r.Receipt)
			}
			if got := told.all(); len(got) != 0 {
				t.Fatalf("Options.Settled told of a free task: %+v", got)
			}
			for _, k := range []string{e.s.Keys().Account(ref.Owner), e.s.Keys().Ledger(ref.Owner), e.s.Keys().Holds(ref.Owner)} {
				if n, _ := b.Client.Exists(ctx(t), k).Result(); n != 0 {
					t.Fatalf("%s exists", k)
				}
			}
		})
	})
}

// TestBillingRefusesWithoutFunds: a call the balance does not cover writes
// nothing and says what it needed and what is available; a principal
// never credited has a zero balance.
func TestBillingRefusesWithoutFunds(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		principal := t.Name()
		for _, credit := range []int64{0, 99} {
			if credit > 0 {
				e.credit(t, principal, credit)
			}
			rec, err := e.s.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo", Reserve: amount(100)})
			var fe *billing.FundsError
			if !errors.As(err, &fe) || !errors.Is(err, billing.ErrFunds) || fe.Needed != 100 || fe.Available != credit || rec != nil {
				t.Fatalf("credit %d: Create = %v, %v", credit, rec, err)
			}
		}
		if list, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{}); err != nil || len(list.Tasks) != 0 {
			t.Fatalf("tasks after refusals: %+v %v", list, err)
		}
		e.books(t, principal, 0)
		if a := e.account(t, principal); a.Balance != 99 || a.Reserved != 0 {
			t.Fatalf("account %+v", a)
		}
	})
}

// TestBillingConcurrentCreates: two creates that together exceed the
// balance, at once: exactly one succeeds, every round.
func TestBillingConcurrentCreates(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		for round := range 50 {
			who := fmt.Sprint(t.Name(), round)
			e.credit(t, who, 100)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Go(func() {
					_, errs[i] = e.s.Create(ctx(t), taskstate.CreateParams{Principal: who, Tool: "gpu", Reserve: amount(60)})
				})
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, billing.ErrFunds):
					t.Fatalf("round %d: %v", round, err)
				}
			}
			if ok != 1 {
				t.Fatalf("round %d: %d of 2 creates succeeded", round, ok)
			}
			if a := e.account(t, who); a.Balance != 40 || a.Reserved != 60 {
				t.Fatalf("round %d: %+v", round, a)
			}
		}
	})
}

// TestIdempotentCreate: a retried create with the same key answers the
// first task and reserves nothing again; another principal's same key is
// its own.
func TestIdempotentCreate(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		principal := t.Name()
		e.credit(t, principal, 100)
		p := taskstate.CreateParams{Principal: principal, Tool: "gpu", Reserve: amount(60), TTLMs: ttl(60_000),
			IdempotencyKey: "retry-1", IdempotencyTTL: time.Hour}
		first, err := e.s.Create(ctx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := e.s.Create(ctx(t), p) // would be refused for funds if it reserved again
		if err != nil || again.Ref != first.Ref {
			t.Fatalf("retry: %+v %v (first %v)", again, err, first.Ref)
		}
		if a := e.account(t, principal); a.Reserved != 60 {
			t.Fatalf("account %+v", a)
		}
		p.Principal = t.Name() + "-bob"
		if _, err := e.s.Create(ctx(t), p); !errors.Is(err, billing.ErrFunds) {
			t.Fatalf("bob's create with the same key: %v", err)
		}
	})
}

// TestLedgerHook: the ledger is the hook's outbox. A failing hook loses
// nothing (the entries are offered again), an acknowledged entry is not
// offered again, and entries come in ledger order with the principal.
func TestLedgerHook(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		who := t.Name()
		e.credit(t, who, 100)
		ref := e.create(t, taskstate.CreateParams{Principal: who, Reserve: amount(40)})
		var got []proto.LedgerEntry
		down := errors.New("payment system down")
		hook := func(fail bool) func(context.Context, string, string, []proto.LedgerEntry) error {
			return func(_ context.Context, principal, owner string, entries []proto.LedgerEntry) error {
				if principal != who || owner != ref.Owner {
					return nil // another test's account on this backend
				}
				if fail {
					return down
				}
				got = append(got, entries...)
				return nil
			}
		}
		if _, err := e.s.Accounts().Forward(ctx(t), 10, hook(true)); !errors.Is(err, down) {
			t.Fatalf("failing hook: %v", err)
		}
		if _, err := e.s.Accounts().Forward(ctx(t), 1, hook(false)); err != nil { // one entry per pass
			t.Fatal(err)
		}
		if _, err := e.s.Accounts().Forward(ctx(t), 10, hook(false)); err != nil {
			t.Fatal(err)
		}
		a := e.claim(t, ref)
		if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusFailed)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.Accounts().Forward(ctx(t), 10, hook(false)); err != nil {
			t.Fatal(err)
		}
		want := e.ledger(t, who)
		if len(got) != 3 || len(want) != 3 {
			t.Fatalf("forwarded %+v, ledger %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("entry %d forwarded %+v, ledger %+v", i, got[i], want[i])
			}
		}
		if got[0].Kind != "credit" || got[1].Kind != "reserve" || got[2].Kind != "release" {
			t.Fatalf("kinds %s %s %s", got[0].Kind, got[1].Kind, got[2].Kind)
		}
	})
}
