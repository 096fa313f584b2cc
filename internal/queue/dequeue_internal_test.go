package queue

import (
	"testing"
	"time"
)

// A lost wake-up waits a hold and asynq's longest sleep: no longer than
// the longest sleep of the poll alone, 1.5 × TaskCheckInterval.
func TestPollTimingKeepsTheWorstCase(t *testing.T) {
	t.Parallel()
	for _, interval := range []time.Duration{time.Millisecond, 20 * time.Millisecond, time.Second, time.Minute, time.Hour} {
		hold, asynqInterval := pollTiming(interval)
		if worst := hold + asynqInterval*3/2; worst > interval*3/2 {
			t.Errorf("interval %v: hold %v + 1.5 × %v = %v, over %v", interval, hold, asynqInterval, worst, interval*3/2)
		}
		if hold <= 0 || hold > maxHold || asynqInterval <= 0 {
			t.Errorf("interval %v: hold %v, asynq interval %v", interval, hold, asynqInterval)
		}
	}
	if hold, asynqInterval := pollTiming(20 * time.Millisecond); hold != 28500*time.Microsecond || asynqInterval != time.Millisecond {
		t.Errorf("default: hold %v, asynq interval %v; want 28.5ms and 1ms", hold, asynqInterval)
	}
}
