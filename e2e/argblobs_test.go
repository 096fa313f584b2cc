package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/s3test"
	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// argsInlineMax is the front end's --inline-max-argument-bytes in
// TestLargeArguments: the batches it sends are several times larger.
const argsInlineMax = 4096

// TestLargeArguments: a front end and a command-tool worker as processes
// on a real redis-server, sharing an object store (a folder, and a real S3
// server when its binary is there): a batch whose arguments are over the
// front end's inline limit completes with the right digests; while such a
// task lives its Redis record holds only the key of its arguments (and
// the owner's argument-byte count their real size); the stored arguments
// are gone once the task ends, completed or cancelled.
func TestLargeArguments(t *testing.T) {
	t.Parallel()
	needPython(t)
	for _, kind := range []string{"dir", "s3"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var blobURL string
			var creds objstore.Credentials
			env := []string{}
			if kind == "dir" {
				blobURL = "file://" + t.TempDir()
			} else {
				srv := s3test.Start(t)
				blobURL = "s3://mcpq-e2e/args-" + taskstate.NewID() + "?insecure=true&endpoint=" + srv.Endpoint
				creds = objstore.Credentials{AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey}
				env = append(env, "MCPQ_BLOB_ACCESS_KEY="+creds.AccessKey, "MCPQ_BLOB_SECRET_KEY="+creds.SecretKey)
			}
			store, err := objstore.Open(context.Background(), blobURL, creds)
			if err != nil {
				t.Fatal(err)
			}
			b := redistest.Real(t)
			env = append(env, "REDIS_URL="+b.URL, "MCPQ_PREFIX="+b.Prefix, "MCPQ_BLOB_URL="+blobURL,
				"BATCH_RESULTS_DIR="+t.TempDir())
			start(t, "worker", env, nil, "worker", "--tools", toolsFile, "--concurrency", "4")
			url := startFrontend(t, append(env, "MCPQ_INLINE_MAX_ARGUMENT_BYTES="+strconv.Itoa(argsInlineMax)))
			waitCatalog(t, url, "batch_digest")
			ctx := within(t)
			c := taskClient(url)

			items := make([]string, 40)
			for i := range items {
				items[i] = fmt.Sprintf("%02d ünïcode; rm -rf / $(id)\n--flag %s", i, strings.Repeat("x", 400))
			}
			args, _ := json.Marshal(map[string]any{"items": items, "delay": 0})
			if len(args) < 3*argsInlineMax {
				t.Fatalf("the batch's arguments are only %d bytes", len(args))
			}
			gone := func(id string) {
				t.Helper()
				for {
					_, err := store.Get(ctx, objstore.ArgumentsKey(id))
					if errors.Is(err, objstore.ErrNotFound) {
						return
					}
					select {
					case <-ctx.Done():
						t.Fatalf("task %s ended, yet its stored arguments are still there (%v)", id, err)
					case <-time.After(20 * time.Millisecond):
					}
				}
			}

			t.Run("completes with the whole arguments", func(t *testing.T) {
				task := createTask(t, ctx, c, "batch_digest", json.RawMessage(args))
				g := waitTask(t, ctx, c, task.TaskID, "completed", hasStatus(proto.StatusCompleted))
				r := toolResult(t, g)
				if r.IsError || len(r.Content) != 1 {
					t.Fatalf("result %s", g.Result)
				}
				var out struct {
					Results []struct{ Item, Sha256 string } `json:"results"`
				}
				if err := json.Unmarshal([]byte(r.Content[0].Text), &out); err != nil || len(out.Results) != len(items) {
					t.Fatalf("batch output %.300q: %v", r.Content[0].Text, err)
				}
				for i, res := range out.Results {
					sum := sha256.Sum256([]byte(items[i]))
					if res.Item != items[i] || res.Sha256 != hex.EncodeToString(sum[:])[:16] {
						t.Fatalf("result %d: %+v, want item %q", i, res, items[i])
					}
				}
				gone(task.TaskID)
			})

			t.Run("the record holds only the key", func(t *testing.T) {
				slow, _ := json.Marshal(map[string]any{"items": items, "delay": 60})
				task := createTask(t, ctx, c, "batch_digest", json.RawMessage(slow))
				// An item takes 60 s: the task is live (working) until the
				// cancel below, whatever this machine's speed.
				owner := taskstate.OwnerTag(frontend.AnonymousPrincipal)
				keys := taskstate.Keys{Prefix: b.Prefix}
				rec, err := b.Client.HGetAll(ctx, keys.Task(taskstate.Ref{Owner: owner, ID: task.TaskID})).Result()
				if err != nil || rec["status"] != string(proto.StatusWorking) {
					t.Fatalf("task record: %v %v", rec, err)
				}
				size := 0
				for k, v := range rec {
					size += len(k) + len(v)
				}
				if _, ok := rec["arguments"]; ok || rec["argsRef"] != objstore.ArgumentsKey(task.TaskID) || size > 1024 {
					t.Fatalf("the record of a task with %d bytes of arguments holds %d bytes: %v", len(slow), size, rec)
				}
				t.Logf("record: %d bytes for %d bytes of arguments", size, len(slow))
				held, err := b.Client.HGet(ctx, keys.Live(owner), task.TaskID).Result()
				if err != nil || held != strconv.Itoa(len(slow)) {
					t.Fatalf("argument bytes counted %q (%v), want the real %d", held, err, len(slow))
				}
				o, err := store.Get(ctx, objstore.ArgumentsKey(task.TaskID))
				if err != nil || string(o.Data) != string(slow) {
					t.Fatalf("stored arguments: %d bytes, %v", len(o.Data), err)
				}
				cancelTask(t, ctx, c, task.TaskID)
				waitTask(t, ctx, c, task.TaskID, "cancelled", hasStatus(proto.StatusCancelled))
				gone(task.TaskID)
			})
		})
	}
}
