// Package queue is mcpq's one seam to asynq, which only delivers jobs: the
// task record (taskstate) is the source of truth. It holds the job
// contract (job.go: type, payload, ids, options), asynq's names under
// mcpq's prefix (keys.go), the enqueues (Client: enqueue, enqueue later,
// drop, revive a stranded job, queue depths), the capture that sends a
// new task's job in the same round trip as its record (capture.go), the
// wake-up that goes with every enqueue (waking.go), and the worker side:
// asynq servers whose idle dequeue waits for a wake-up instead of polling
// (server.go, dequeue.go), whose deliveries run on goroutines kept from
// job to job (runners.go), and queue shards: a queue split into asynq
// queues on separate Redis Cluster slots (shards.go).
//
// Two paths lean on asynq v0.26.0's internals for speed: the capture
// (its enqueue script) and the woken dequeue (its dequeue script). Each
// pins the script's SHA-1, passes anything else through or refuses it,
// and has a test that fails when asynq changes (capture_test.go,
// server_test.go). No other package of mcpq imports asynq, but for the
// benchmark's raw-asynq floor (internal/bench).
package queue
