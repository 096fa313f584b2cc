// Package exampletest stands in for the *testing.T that mcpqtest takes, in
// the runnable Examples of mcpq's packages (an Example function has no T):
// cleanups run at End, as at the end of a test, and a failure panics, so a
// failing Example fails instead of hanging.
package exampletest

import (
	"context"
	"fmt"
	"testing"
)

// T implements the methods of testing.TB that mcpqtest calls; any other
// method panics (its embedded TB is nil).
type T struct {
	testing.TB
	ctx      context.Context
	cancel   context.CancelFunc
	cleanups []func()
}

// New returns a T whose context lives until End.
func New() *T {
	t := &T{}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

func (t *T) Helper()                        {}
func (t *T) Context() context.Context       { return t.ctx }
func (t *T) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *T) Errorf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *T) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

// End cancels the context and runs the cleanups, the last registered
// first, as the end of a test does.
func (t *T) End() {
	t.cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
