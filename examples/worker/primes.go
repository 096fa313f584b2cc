package main

import (
	"context"
	"fmt"

	"github.com/mcpq/mcpq/worker"
)

// PrimesArgs are the arguments of count_primes.
type PrimesArgs struct {
	Limit int `json:"limit" jsonschema:"count the primes up to this number" mcpq:"minimum=2,maximum=200000000"`
}

// Primes is count_primes' structured result.
type Primes struct {
	Limit int `json:"limit"`
	Count int `json:"count"`
}

// primesTool counts primes in chunks, streaming progress: statusMessage for
// a task, notifications/progress for a caller that waits with a progressToken.
func primesTool() worker.Tool {
	return worker.NewTool("count_primes", "Counts the primes up to a limit, reporting progress as it goes.",
		func(ctx context.Context, c *worker.Call, in PrimesArgs) (Primes, error) {
			// At least 20 reports, and one at least every 250 000 numbers.
			count, size := 0, min(max(in.Limit/20, 1), 250_000)
			for lo := 2; lo <= in.Limit; lo += size {
				hi := min(lo+size-1, in.Limit)
				if err := c.Step(ctx, func(ctx context.Context) error {
					n, err := countPrimes(ctx, lo, hi)
					count += n
					return err
				}); err != nil {
					return Primes{}, err
				}
				_ = c.Progress(ctx, fmt.Sprintf("%d primes up to %d (%d%%)", count, hi, 100*(hi-1)/(in.Limit-1)))
				_ = c.ReportProgress(ctx, float64(hi), float64(in.Limit), "")
			}
			return Primes{Limit: in.Limit, Count: count}, nil
		})
}

// countPrimes counts the primes in [lo, hi] by trial division, stopping
// early when ctx ends.
func countPrimes(ctx context.Context, lo, hi int) (int, error) {
	n := 0
	for x := max(lo, 2); x <= hi; x++ {
		if x%4096 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		prime := true
		for d := 2; d*d <= x; d++ {
			if x%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			n++
		}
	}
	return n, nil
}
