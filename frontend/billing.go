package frontend

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
)

// Billing on the front end (docs/billing.md): with Config.Billing, a call
// of a priced tool reserves the ceiling its Price computes from the
// arguments, in the create script; a call the balance does not cover is
// answered by fundsResult and leaves no record and no job.

// headerIdempotencyKey names a tools/call retry, as proto.MetaIdempotencyKey does.
const headerIdempotencyKey = "Idempotency-Key"

// maxIdempotencyKey bounds an idempotency key (bytes).
const maxIdempotencyKey = 256

// bill fills in what billing adds to a new task of inv: its reservation
// (Config.Billing and a priced tool) and the request's idempotency key.
// With billing off and no key it reads nothing and allocates nothing.
func (s *Server) bill(c *call, inv invocation, p *taskstate.CreateParams) error {
	if s.cfg.Billing && inv.def.Price != nil {
		ceiling, err := inv.def.Price.Ceiling(inv.args)
		if err != nil {
			return proto.NewError(proto.CodeInvalidParams, "Invalid params: the price of this call: %v", err)
		}
		p.Reserve = &ceiling
	}
	key := c.meta.IdempotencyKey
	if h := c.httpReq.Header.Get(headerIdempotencyKey); h != "" {
		if key != "" && key != h {
			return proto.NewError(proto.CodeInvalidParams, "Invalid params: the %s header and _meta[%q] differ",
				headerIdempotencyKey, proto.MetaIdempotencyKey)
		}
		key = h
	}
	if len(key) > maxIdempotencyKey {
		return proto.NewError(proto.CodeInvalidParams, "Invalid params: an idempotency key is at most %d bytes", maxIdempotencyKey)
	}
	if key != "" {
		// The key names this call: the same key with other arguments is
		// another call, not a retry. Arguments compare by their canonical
		// form, so a client that re-serialises them on retry (other member
		// order, whitespace, 3e1 for 30, \u0041 for A) retries.
		args, err := canonicalArguments(inv.args)
		if err != nil {
			return proto.NewError(proto.CodeInvalidParams, "Invalid params: arguments: %v", err)
		}
		p.IdempotencyKey = inv.def.Key() + "\x00" + key + "\x00" + args
		p.IdempotencyTTL = s.cfg.IdempotencyTTL
	}
	return nil
}

// fundsResult answers a call the caller's balance does not cover. It is a
// tool error (a CallToolResult with isError), not a JSON-RPC error: the
// 2026-07-28 spec allocates no code for it (-32000..-32019 take no new
// allocations, -32020..-32099 are MCP's own), and a tool error is what the
// model sees and can act on. _meta[proto.MetaFunds] says what the call
// needed and what was available; no task record or job exists.
func fundsResult(name string, fe *billing.FundsError) *proto.CallToolResult {
	return &proto.CallToolResult{
		ResultBase: proto.ResultBase{ResultType: proto.ResultComplete, Meta: proto.ResultMeta{
			proto.MetaFunds: map[string]int64{"needed": fe.Needed, "available": fe.Available}}},
		Content: []proto.Content{proto.TextContent(fmt.Sprintf(
			"Insufficient funds: %s reserves %d units for this call and %d are available", name, fe.Needed, fe.Available))},
		IsError: true,
	}
}

// getMyAccount serves GET /v1/account: the caller's billing account.
func (s *Server) getMyAccount(w http.ResponseWriter, r *http.Request) {
	principal, err := s.admit(w, r)
	if err != nil {
		s.restFail(w, err)
		return
	}
	a, err := s.store.Accounts().Get(r.Context(), principal)
	if err != nil {
		s.restFail(w, err)
		return
	}
	writeREST(w, http.StatusOK, a)
}

// ledgerPage is the body of GET /v1/ledger.
type ledgerPage struct {
	// Entries are the caller's ledger entries, oldest first.
	Entries []proto.LedgerEntry `json:"entries"`
	// NextCursor continues the ledger; absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// getMyLedger serves GET /v1/ledger?cursor=&limit=: the caller's ledger,
// oldest first, limit (1..500, default 100) entries after cursor.
func (s *Server) getMyLedger(w http.ResponseWriter, r *http.Request) {
	principal, err := s.admit(w, r)
	if err != nil {
		s.restFail(w, err)
		return
	}
	q := r.URL.Query()
	limit, ok := queryLimit(w, q, 100, billing.MaxPage)
	if !ok {
		return
	}
	entries, next, err := s.store.Accounts().Ledger(r.Context(), principal, q.Get("cursor"), limit)
	if errors.Is(err, billing.ErrBadCursor) {
		writeREST(w, http.StatusBadRequest, restError{Error: "invalid cursor"})
		return
	}
	if err != nil {
		s.restFail(w, err)
		return
	}
	writeREST(w, http.StatusOK, ledgerPage{Entries: entries, NextCursor: next})
}

// canonicalArguments is args in the canonical form of RFC 8785 (JSON
// Canonicalization Scheme: members sorted, no whitespace, strings with
// minimal escapes, numbers as the shortest double), except that integers
// keep their digits: JCS would make 2^53+1 and 2^53 one number, and two
// calls that differ there are two calls.
func canonicalArguments(args json.RawMessage) (string, error) {
	v := jsontext.Value(slices.Clone(args))
	if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false)); err != nil {
		return "", err
	}
	return string(v), nil
}
