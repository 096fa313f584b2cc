package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/mcpq/mcpq/internal/access"
)

// runPrincipals manages principal mappings in Redis (docs/auth.md):
// mcpq principals map FROM TO | unmap FROM | list. FROM is an OAuth
// principal (issuer#subject), TO the existing principal it acts as.
func runPrincipals(ctx context.Context, args []string) error {
	const usage = "usage: mcpq principals map FROM TO | unmap FROM | list"
	if len(args) == 0 {
		return errors.New(usage)
	}
	rdb, err := redisClient()
	if err != nil {
		return err
	}
	defer rdb.Close()
	store := access.New(rdb, env("MCPQ_PREFIX", ""), nil)
	switch {
	case args[0] == "map" && len(args) == 3:
		if err := store.MapPrincipal(ctx, args[1], args[2]); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "mapped %s to %s (front ends apply it to new tokens at once, to tokens in use within 5m)\n", args[1], args[2])
	case args[0] == "unmap" && len(args) == 2:
		ok, err := store.UnmapPrincipal(ctx, args[1])
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s has no mapping", args[1])
		}
		fmt.Fprintf(os.Stderr, "unmapped %s\n", args[1])
	case args[0] == "list" && len(args) == 1:
		ms, err := store.ListMappings(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FROM\tTO")
		for _, m := range ms {
			fmt.Fprintf(tw, "%s\t%s\n", m.From, m.To)
		}
		return tw.Flush()
	default:
		return errors.New(usage)
	}
	return nil
}
