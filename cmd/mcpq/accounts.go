package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
)

const accountsUsage = "usage: mcpq accounts credit PRINCIPAL AMOUNT | show PRINCIPAL | ledger PRINCIPAL [--limit N] [--cursor C]"

// runAccounts manages billing accounts in Redis (docs/billing.md): mcpq
// accounts credit PRINCIPAL AMOUNT | show PRINCIPAL | ledger PRINCIPAL.
// Each prints JSON.
func runAccounts(ctx context.Context, args []string) error {
	if len(args) < 2 {
		return errors.New(accountsUsage)
	}
	rdb, err := redisClient()
	if err != nil {
		return err
	}
	defer rdb.Close()
	store := taskstate.New(rdb, taskstate.Options{Prefix: env("MCPQ_PREFIX", "")})
	principal := args[1]
	var out any
	switch args[0] {
	case "credit":
		if len(args) != 3 {
			return errors.New("usage: mcpq accounts credit PRINCIPAL AMOUNT")
		}
		n, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil {
			return fmt.Errorf("AMOUNT must be a whole number of units: %q", args[2])
		}
		if out, err = store.Accounts().Credit(ctx, principal, n); err != nil {
			return err
		}
	case "show":
		if len(args) != 2 {
			return errors.New("usage: mcpq accounts show PRINCIPAL")
		}
		if out, err = store.Accounts().Get(ctx, principal); err != nil {
			return err
		}
	case "ledger":
		fs := flag.NewFlagSet("accounts ledger", flag.ExitOnError)
		limit := fs.Int("limit", 100, fmt.Sprintf("entries to show (1-%d)", billing.MaxPage))
		cursor := fs.String("cursor", "", "show the entries after this one (nextCursor of the page before)")
		_ = fs.Parse(args[2:])
		entries, next, err := store.Accounts().Ledger(ctx, principal, *cursor, *limit)
		if err != nil {
			return err
		}
		out = struct {
			Entries    []proto.LedgerEntry `json:"entries"`
			NextCursor string              `json:"nextCursor,omitempty"`
		}{entries, next}
	default:
		return fmt.Errorf("unknown accounts command %q (credit, show, ledger)", args[0])
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
