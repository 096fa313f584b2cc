package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The event log of a session's SSE streams (2025-11-25 Streamable
// HTTP, "Resumability and Redelivery"): every message a front end writes
// on a session's stream is first appended to that stream's Redis stream,
// whose entry id becomes (part of) the SSE event id. A client that lost
// the connection sends GET with Last-Event-ID to any front end, which
// replays the entries after it from Redis and carries the stream on.

// MaxStreamEvents bounds the messages kept per SSE stream for replay: the
// oldest go first (XADD MAXLEN), so a client resuming further back than
// this misses those. With progress and input requests a held call rarely
// sends more; the bytes kept are bounded by the messages' own caps.
const MaxStreamEvents = 256

// ErrNoStream: no resumable call stream of that name in this session.
var ErrNoStream = errors.New("legacy: stream not found")

// ErrTakenOver: a resume elsewhere took the stream over, so this writer
// logs nothing more of it (AppendStreamEvent).
var ErrTakenOver = errors.New("legacy: the stream was resumed elsewhere")

// StreamEvent is one logged SSE message.
type StreamEvent struct {
	// ID is the Redis stream entry id ("ms-seq"), increasing in the stream.
	ID string
	// Data is the JSON-RPC message; empty for a priming event.
	Data []byte
	// Final marks the request's final response (the stream ends there).
	Final bool
}

// StreamCall is the held request a POST stream answers.
type StreamCall struct {
	// RequestID is the JSON-RPC id of the request.
	RequestID json.RawMessage
	// TaskID is the task the call waits for.
	TaskID string
	// ProgressToken is the request's progressToken (empty: none).
	ProgressToken json.RawMessage
}

// The stream call hash's fields are req (the request id), task, token
// (the progress token) and w (the stream's writer): append.lua and
// takestream.lua name them.

// AppendStreamEvent logs data (empty: a priming event) as the next message
// of the session's stream for writer (a request's stream; "" for a GET
// stream) and returns its entry id. With call non-nil it also records the
// held request the stream answers, and writer as the stream's. Once
// another writer took the stream over (TakeStream), nothing is logged and
// it answers ErrTakenOver. Both keys expire after idle, as the session
// does. One script (append.lua).
func (s *Store) AppendStreamEvent(ctx context.Context, owner, session, stream, writer string, data []byte, final bool,
	call *StreamCall, idle time.Duration) (string, error) {
	args := []any{data, "", idle.Milliseconds(), writer, MaxStreamEvents}
	if final {
		args[1] = "1"
	}
	if call != nil {
		args = append(args, string(call.RequestID), call.TaskID, string(call.ProgressToken))
	}
	id, err := appendScript.Run(ctx, s.rdb, []string{s.keys.SessionEvents(owner, session, stream),
		s.keys.SessionStreamCall(owner, session, stream)}, args...).Text()
	if errors.Is(err, redis.Nil) {
		return "", ErrTakenOver
	}
	return id, err
}

// StreamEvents reads the messages kept for the session's stream, oldest
// first (at most MaxStreamEvents).
func (s *Store) StreamEvents(ctx context.Context, owner, session, stream string) ([]StreamEvent, error) {
	msgs, err := s.rdb.XRange(ctx, s.keys.SessionEvents(owner, session, stream), "-", "+").Result()
	if err != nil {
		return nil, err
	}
	out := make([]StreamEvent, len(msgs))
	for i, m := range msgs {
		d, _ := m.Values["d"].(string)
		_, final := m.Values["f"]
		out[i] = StreamEvent{ID: m.ID, Data: []byte(d), Final: final}
	}
	return out, nil
}

// TakeStream makes writer the only one that logs the session's request
// stream from now on (a resume of it: takestream.lua) and reads the held
// request the stream answers; ErrNoStream when there is none (not a
// request's stream, or expired).
func (s *Store) TakeStream(ctx context.Context, owner, session, stream, writer string) (*StreamCall, error) {
	f, err := takeStreamScript.Run(ctx, s.rdb, []string{s.keys.SessionStreamCall(owner, session, stream)}, writer).StringSlice()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNoStream
	} else if err != nil {
		return nil, err
	}
	if len(f) != 3 {
		return nil, fmt.Errorf("legacy: takestream returned %d values", len(f))
	}
	return &StreamCall{RequestID: json.RawMessage(f[0]), TaskID: f[1], ProgressToken: json.RawMessage(f[2])}, nil
}

// EntryAfter reports whether stream entry id a comes after b; false when
// either is not an entry id.
func EntryAfter(a, b string) bool {
	am, as, ok1 := entryParts(a)
	bm, bs, ok2 := entryParts(b)
	return ok1 && ok2 && (am > bm || am == bm && as > bs)
}

// entryParts splits a stream entry id "ms-seq".
func entryParts(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ms, seq, err1 == nil && err2 == nil
}

// TakeGetStream makes stream the session's GET stream, the one its
// messages go to (the newest opened takes over), for hold unless renewed.
func (s *Store) TakeGetStream(ctx context.Context, owner, session, stream string, hold time.Duration) error {
	return s.rdb.Set(ctx, s.keys.SessionGetStream(owner, session), stream, hold).Err()
}

// HoldsGetStream reports whether stream is the session's GET stream,
// renewing it for hold; when no stream is (the holder closed or vanished),
// stream takes over. One script (getstream.lua), as SendTaskState's check.
func (s *Store) HoldsGetStream(ctx context.Context, owner, session, stream string, hold time.Duration) (bool, error) {
	return s.getStream(ctx, owner, session, stream, hold, "", 0, "", 0)
}

// SendTaskState reports whether GET stream stream of the owner's session
// should send the state of a task the session follows: the record at
// version, whose status and statusMessage are state. It is true when stream
// holds the session's messages (HoldsGetStream, which it renews or takes
// over as that does) and no GET stream of the session sent this state yet;
// the state is then recorded as sent (Keys.SessionSentStates, which keeps
// the newest 2 × MaxSessionTasks tasks' and expires after idle). One script
// (getstream.lua, which HoldsGetStream runs without a task):
// of two streams that learn of a change, only one sends it, even when the
// second became the holder after the first sent it.
func (s *Store) SendTaskState(ctx context.Context, owner, session, stream, task string, version int64, state string,
	hold, idle time.Duration) (bool, error) {
	return s.getStream(ctx, owner, session, stream, hold, task, version, state, idle)
}

// getStream runs getstream.lua: the hold alone when task is "".
func (s *Store) getStream(ctx context.Context, owner, session, stream string, hold time.Duration, task string,
	version int64, state string, idle time.Duration) (bool, error) {
	n, err := getStreamScript.Run(ctx, s.rdb, []string{s.keys.SessionGetStream(owner, session),
		s.keys.SessionSentStates(owner, session)}, stream, hold.Milliseconds(), task, version, state,
		idle.Milliseconds(), 2*MaxSessionTasks).Int64()
	return n == 1, err
}

// ReleaseGetStream gives up stream's hold on the session's messages, if
// it still has it, so another open GET stream takes them at once.
func (s *Store) ReleaseGetStream(ctx context.Context, owner, session, stream string) error {
	key := s.keys.SessionGetStream(owner, session)
	err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
		if v, err := tx.Get(ctx, key).Result(); err != nil || v != stream {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, key).Err() })
		return err
	}, key)
	if errors.Is(err, redis.Nil) || errors.Is(err, redis.TxFailedErr) {
		return nil // not ours (any more)
	}
	return err
}

// ClaimInput records that stream carries the input request key of task,
// unless a stream of the session did already: it returns the stream that
// carries it, and whether this call claimed it. The record expires after
// idle, with the session.
func (s *Store) ClaimInput(ctx context.Context, owner, session, stream, task, key string,
	idle time.Duration) (holder string, claimed bool, err error) {
	k := s.keys.SessionAsked(owner, session)
	var set *redis.BoolCmd
	var got *redis.StringCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		set = p.HSetNX(ctx, k, task+":"+key, stream)
		got = p.HGet(ctx, k, task+":"+key)
		p.PExpire(ctx, k, idle)
		return nil
	})
	if err != nil {
		return "", false, err
	}
	return got.Val(), set.Val(), nil
}

// MaxSessionTasks bounds the tasks a session's GET stream follows: the
// newest task-augmented calls of the session.
const MaxSessionTasks = 100

// AddSessionTask records a task the session created and announces it to
// the session's GET stream.
func (s *Store) AddSessionTask(ctx context.Context, owner, session, taskID string, idle time.Duration) error {
	key := s.keys.SessionTasks(owner, session)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, key, redis.Z{Score: float64(s.nowMs()), Member: taskID})
		p.ZRemRangeByRank(ctx, key, 0, -MaxSessionTasks-1)
		p.PExpire(ctx, key, idle)
		p.Publish(ctx, s.keys.SessionTaskCreated(owner, session), taskID)
		return nil
	})
	return err
}

// SessionTasks lists the tasks the session created, newest first (at most
// MaxSessionTasks; some may have ended or expired).
func (s *Store) SessionTasks(ctx context.Context, owner, session string) ([]string, error) {
	return s.rdb.ZRevRange(ctx, s.keys.SessionTasks(owner, session), 0, -1).Result()
}
