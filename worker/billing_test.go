package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/worker"
)

// TestMeter: a handler's metered usage is charged when its task completes,
// capped at the reservation, and the overrun is logged; a tool with an
// invalid price is refused at registration.
func TestMeter(t *testing.T) {
	h := mini(t)
	tl := h.tool("gpu", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		for _, units := range []int64{30, 90} {
			if err := c.Meter(ctx, units); err != nil {
				return nil, err
			}
		}
		if err := c.Meter(ctx, 0); err == nil {
			return nil, proto.NewError(proto.CodeInternalError, "Meter(0) accepted")
		}
		return worker.TextResult("done"), nil
	})
	tl.Price = &proto.Price{Base: 100}
	h.start(t, h.config(), tl)
	ctx := context.Background()
	if _, err := h.store.Accounts().Credit(ctx, "alice", 500); err != nil {
		t.Fatal(err)
	}
	ceiling := int64(100)
	rec, err := h.store.Create(ctx, taskstate.CreateParams{Principal: "alice", Tool: "gpu", Reserve: &ceiling})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := h.hub.Subscribe(ctx, h.store.Keys().Events(rec.Ref))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	tk := task{ref: rec.Ref, sub: sub}
	h.enqueue(t, tk, "gpu", "")
	end := h.terminal(t, tk)
	if end.Status != proto.StatusCompleted {
		t.Fatalf("ended %s: %+v", end.Status, end.Error)
	}
	var rc billing.Receipt
	if err := json.Unmarshal(end.Receipt, &rc); err != nil || rc.Charged != 100 || rc.Usage != 120 || !rc.Capped {
		t.Fatalf("receipt %s: %v", end.Receipt, err)
	}
	if a, _ := h.store.Accounts().Get(ctx, "alice"); a.Balance != 400 || a.Charged != 100 || a.Reserved != 0 {
		t.Fatalf("account %+v", a)
	}
	if !strings.Contains(h.logs.String(), "past the reservation") {
		t.Fatalf("the overrun was not logged:\n%s", h.logs.String())
	}

	bad := h.tool("bad", tl.Handler)
	bad.Price = &proto.Price{Base: -1}
	if _, err := worker.New(h.config(), bad); err == nil || !strings.Contains(err.Error(), "price") {
		t.Fatalf("a negative price: %v", err)
	}
}

// ledgerHook sends what it is offered to a channel, failing the first
// offer: the entries must come again.
type ledgerHook struct {
	failed bool
	got    chan []proto.LedgerEntry
}

func (h *ledgerHook) Forward(_ context.Context, principal, _ string, entries []proto.LedgerEntry) error {
	if principal != "hooked" {
		return nil
	}
	if !h.failed {
		h.failed = true
		return errors.New("payment system down")
	}
	h.got <- entries
	return nil
}

// TestLedgerHookForwarding: a worker with a LedgerHook offers the ledger's
// entries to it outside any transition, again after a failure.
func TestLedgerHookForwarding(t *testing.T) {
	h := mini(t)
	hook := &ledgerHook{got: make(chan []proto.LedgerEntry, 4)}
	cfg := h.config()
	cfg.LedgerHook, cfg.LedgerInterval = hook, 5*time.Millisecond
	h.start(t, cfg, h.tool("noop", func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
		return worker.TextResult("ok"), nil
	}))
	if _, err := h.store.Accounts().Credit(context.Background(), "hooked", 7); err != nil {
		t.Fatal(err)
	}
	entries := recv(t, hook.got, "the credit entry, offered again after the failure")
	if len(entries) != 1 || entries[0].Kind != "credit" || entries[0].Amount != 7 {
		t.Fatalf("forwarded %+v", entries)
	}
}
