package taskstate

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// ListOptions select a page of one owner's tasks.
type ListOptions struct {
	// Status keeps only tasks in that status (empty: all).
	Status proto.TaskStatus
	// Tool keeps only calls of that tool (empty: all).
	Tool string
	// Since and Until keep only tasks created in [Since, Until) (zero: no bound).
	Since, Until time.Time
	// Limit is the page size (default 50, at most 500).
	Limit int
	// Cursor continues after the previous page (from ListResult.Next).
	Cursor string
}

// ListResult is one page of tasks, newest first.
type ListResult struct {
	// Tasks are the page's records, read with listFields only: enough for
	// Record.Task, never arguments, results, checkpoints or input.
	Tasks []*Record
	// Next is the cursor of the following page; empty on the last page.
	Next string
}

// listFields are the fields ListTasks reads of each record (HMGET): what
// Record.Task and Record.Expired need, and the owner and tool. A listing never loads arguments,
// results or checkpoints, so its cost does not grow with their size
// (issue 13, finding 5; docs/security.md). 'x' says an ended task keeps
// long values in its companion (Keys.TaskExtra): a statusMessage longer
// than 64 bytes is then read from there (extraMessages).
// 'startedAt' and 'cost' (scripts/timeline.lua) are short, so they stay
// in the record and a listing shows queued time and money without the
// timeline or receipt.
var listFields = []string{"status", "statusMessage", "owner", "tool", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs", "x",
	"startedAt", "cost"}

// keeps reports whether rec passes the options' filters.
func (o *ListOptions) keeps(rec *Record) bool {
	return (o.Status == "" || rec.Status == o.Status) && (o.Tool == "" || rec.Tool == o.Tool) &&
		(o.Since.IsZero() || !rec.CreatedAt.Before(o.Since)) && (o.Until.IsZero() || rec.CreatedAt.Before(o.Until))
}

// ErrBadCursor: the cursor was not made by ListTasks.
var ErrBadCursor = errors.New("taskstate: invalid cursor")

// ListTasks pages through the tasks of the principal, newest first. Only
// that principal's index is read, so another principal's tasks can never
// appear. Entries whose record expired are skipped (the reaper drops them).
func (s *Store) ListTasks(ctx context.Context, principal string, o ListOptions) (*ListResult, error) {
	if o.Limit <= 0 {
		o.Limit = 50
	}
	o.Limit = min(o.Limit, 500)
	owner := OwnerTag(principal)
	max, afterID := "+inf", ""
	if o.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(o.Cursor)
		score, id, ok := strings.Cut(string(b), ":")
		if _, perr := strconv.ParseInt(score, 10, 64); err != nil || !ok || perr != nil || !ValidID(id) {
			return nil, ErrBadCursor
		}
		max, afterID = score, id
	}
	res := &ListResult{}
	now := s.now()
	// Batches walk the index from max down. offset counts the entries of
	// score max already walked, so a run of equal createdAt values longer
	// than a batch still advances.
	const batchSize = 64
	cursorScore, offset := max, int64(0)
	for {
		batch, err := s.rdb.ZRevRangeByScoreWithScores(ctx, s.keys.tasks(owner), &redis.ZRangeBy{
			Max: max, Min: "-inf", Offset: offset, Count: batchSize}).Result()
		if err != nil {
			return nil, err
		}
		cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, z := range batch {
				p.HMGet(ctx, s.keys.Task(Ref{Owner: owner, ID: z.Member.(string)}), listFields...)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		fields := make([]map[string]string, len(batch))
		for i := range batch {
			f := make(map[string]string, len(listFields))
			for j, v := range cmds[i].(*redis.SliceCmd).Val() {
				if v, ok := v.(string); ok {
					f[listFields[j]] = v
				}
			}
			fields[i] = f
		}
		if err := s.extraMessages(ctx, owner, batch, fields); err != nil {
			return nil, err
		}
		for i, z := range batch {
			id := z.Member.(string)
			if !o.Since.IsZero() && int64(z.Score) < o.Since.UnixMilli() {
				return res, nil // newest first: every later entry is older still
			}
			if strconv.FormatInt(int64(z.Score), 10) == cursorScore && afterID != "" && id >= afterID {
				continue // returned on the previous page
			}
			rec, ok := decodeRecord(Ref{Owner: owner, ID: id}, fields[i])
			if !ok || rec.Expired(now) || !o.keeps(rec) {
				continue
			}
			if len(res.Tasks) == o.Limit {
				res.Next = base64.RawURLEncoding.EncodeToString([]byte(res.cursorOf()))
				return res, nil
			}
			res.Tasks = append(res.Tasks, rec)
		}
		if len(batch) < batchSize {
			return res, nil
		}
		last := strconv.FormatInt(int64(batch[len(batch)-1].Score), 10)
		if last == max {
			offset += int64(len(batch))
			continue
		}
		max, offset = last, 0
		for _, z := range batch {
			if strconv.FormatInt(int64(z.Score), 10) == last {
				offset++
			}
		}
	}
}

// cursorOf is the position of the page's last task.
func (r *ListResult) cursorOf() string {
	last := r.Tasks[len(r.Tasks)-1]
	return strconv.FormatInt(last.CreatedAt.UnixMilli(), 10) + ":" + last.Ref.ID
}

// extraMessages fills in the statusMessage of the batch's ended tasks that
// keep it in their companion (field 'x' set, no statusMessage in the
// record: it was longer than 64 bytes), in one pipeline; most pages have
// none and make no call.
func (s *Store) extraMessages(ctx context.Context, owner string, batch []redis.Z, fields []map[string]string) error {
	var at []int
	for i, f := range fields {
		if _, ok := f["statusMessage"]; !ok && f["x"] != "" {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return nil
	}
	cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, i := range at {
			p.Get(ctx, s.keys.TaskExtra(Ref{Owner: owner, ID: batch[i].Member.(string)}))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	for k, i := range at {
		x, err := cmds[k].(*redis.StringCmd).Result()
		if errors.Is(err, redis.Nil) {
			continue // reaped since: the record reads as gone below, or soon
		}
		extra := map[string]string{}
		if err := mergeExtra(extra, x); err != nil {
			return err
		}
		if m, ok := extra["statusMessage"]; ok {
			fields[i]["statusMessage"] = m
		}
	}
	return nil
}
