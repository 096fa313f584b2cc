package queue

import (
	"context"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
)

// TestMain stops the redis-server redistest may have started.
func TestMain(m *testing.M) { redistest.Main(m) }

// TestCaptureFailsClosed: under a capture, only what asynq v0.26.0 sends for
// an enqueue is accepted. Any other command is an error rather than sent,
// and a script other than the pinned enqueue script is refused rather than
// recorded with a faked answer; outside a capture everything passes.
func TestCaptureFailsClosed(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		jc := newCaptureClient(b.Client, b.Client, Keys{Prefix: b.Prefix})
		job := &capturedJob{}
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cctx := context.WithValue(c, captureKey{}, job)
		key := b.Prefix + "guard"
		if err := jc.Set(cctx, key, "x", 0).Err(); err == nil {
			t.Error("SET under a capture was sent")
		}
		if n, _ := b.Client.Exists(c, key).Result(); n != 0 {
			t.Error("SET under a capture reached Redis")
		}
		const src = "return 1"
		if err := jc.Eval(cctx, src, nil).Err(); err == nil {
			t.Error("an unknown script under a capture was accepted")
		}
		if err := jc.EvalSha(cctx, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", nil).Err(); err == nil {
			t.Error("an unknown script's sha under a capture was accepted")
		}
		if job.captured {
			t.Error("an unknown script was recorded")
		}
		if err := jc.SAdd(cctx, "asynq:queues", b.Prefix+"q").Err(); err != nil {
			t.Errorf("asynq's queue-set SADD under a capture: %v", err)
		}
		_ = b.Client.SRem(c, "asynq:queues", b.Prefix+"q")
		if err := jc.Set(c, key, "x", time.Minute).Err(); err != nil {
			t.Errorf("SET outside a capture: %v", err)
		}
		if n, err := jc.Eval(c, src, nil).Int64(); err != nil || n != 1 {
			t.Errorf("a script outside a capture: %d %v", n, err)
		}
	})
}
