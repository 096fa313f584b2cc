package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
)

// TestLegacyPollingClient: a 2025-11-25 client that opens the session's
// GET stream, calls a task-required tool that asks for confirmation
// (confirm_delete with a task parameter) and then only polls tasks/get,
// as the MCP Inspector's mcpdo does in its default era, is asked on the
// GET stream; its answer, POSTed to another front end than the one
// holding the stream, completes the task. On mcpq dev, and on two front
// ends and two workers.
func TestLegacyPollingClient(t *testing.T) {
	t.Run("dev", func(t *testing.T) { pollingClient(t, []string{startDev(t)}) })
	t.Run("cluster", func(t *testing.T) { pollingClient(t, startCluster(t, redistest.Real(t), 2, 2)) })
}

// legacyEvent is a message a 2025-11-25 server sends on a stream.
type legacyEvent struct {
	ID     string `json:"id"`
	Method string `json:"method"`
	Params struct {
		URI     string `json:"uri"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Meta    map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	} `json:"params"`
}

// openSession initializes a session at url with caps and opens its GET
// stream at getURL: the stream's messages arrive on the channel.
func openSession(t *testing.T, url, getURL, caps string) (string, <-chan legacyEvent) {
	t.Helper()
	status, session, body := legacyPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+
		caps+`,"clientInfo":{"name":"e2e-poller","version":"1"}}}`)
	if status != 200 || session == "" {
		t.Fatalf("initialize: HTTP %d %s", status, body)
	}
	if status, _, body := legacyPost(t, url, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d %s", status, body)
	}
	req, _ := http.NewRequestWithContext(within(t), http.MethodGet, getURL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", res, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	events := make(chan legacyEvent, 64)
	go func() {
		defer close(events)
		sseMessages(t, res.Body, func(_, data string) bool {
			var ev legacyEvent
			if data != "" && json.Unmarshal([]byte(data), &ev) == nil {
				events <- ev
			}
			return false
		})
	}()
	return session, events
}

func pollingClient(t *testing.T, urls []string) {
	front, getAt := urls[0], urls[len(urls)-1]
	session, events := openSession(t, front, getAt, `{"elicitation":{},"tasks":{}}`)
	status, _, body := legacyPost(t, front, session,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"confirm_delete","arguments":{"filename":"a.txt"},"task":{}}}`)
	var created struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	if status != 200 || json.Unmarshal([]byte(jsonOf(body)), &created) != nil || created.Result.Task.TaskID == "" {
		t.Fatalf("tools/call with a task: HTTP %d %s", status, body)
	}
	id := created.Result.Task.TaskID
	get := func(i int) string {
		_, _, body := legacyPost(t, urls[i%len(urls)], session, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"`+id+`"}}`)
		var r struct {
			Result struct {
				Status string `json:"status"`
			} `json:"result"`
		}
		_ = json.Unmarshal([]byte(jsonOf(body)), &r)
		return r.Result.Status
	}
	asked := 0
	// The GET stream's completed status may come before a poll shows the
	// task completed, or after.
	completedSeen := false
	completed := func(ev legacyEvent) bool {
		return ev.Method == "notifications/tasks/status" && ev.Params.Status == "completed"
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %s after 60s, asked %d times", id, get(i), asked)
		}
		if s := get(i); s == "completed" {
			break
		} else if s == "failed" || s == "cancelled" {
			t.Fatalf("task %s ended %s", id, s)
		}
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the GET stream ended")
			}
			completedSeen = completedSeen || completed(ev)
			if ev.Method != "elicitation/create" {
				continue
			}
			asked++
			if !strings.HasPrefix(ev.ID, "mcpq-input:"+id+":") ||
				ev.Params.Meta["io.modelcontextprotocol/related-task"].TaskID != id {
				t.Fatalf("GET stream asked %+v, want the task's request naming it", ev)
			}
			// The answer goes to another front end than the stream's.
			status, _, body := legacyPost(t, front, session,
				`{"jsonrpc":"2.0","id":"`+ev.ID+`","result":{"action":"accept","content":{"confirm":true}}}`)
			if status != http.StatusAccepted {
				t.Fatalf("answer: HTTP %d %s", status, body)
			}
		case <-time.After(200 * time.Millisecond): // poll again, as the client does
		}
	}
	for ok := !completedSeen; ok; {
		select {
		case ev, open := <-events:
			if ev.Method == "elicitation/create" {
				asked++
			}
			ok = open && !completed(ev)
		case <-time.After(30 * time.Second):
			t.Fatal("no completed status on the GET stream")
		}
	}
	if asked != 1 {
		t.Fatalf("asked %d times on the GET stream, want once", asked)
	}
	_, _, body = legacyPost(t, urls[len(urls)-1], session, `{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":"`+id+`"}}`)
	if !strings.Contains(body, "Deleted a.txt") {
		t.Fatalf("tasks/result: %s", body)
	}
}

// jsonOf is the JSON-RPC message in a POST answer: the body itself, or
// the last data line of an SSE body.
func jsonOf(body string) string {
	if !strings.HasPrefix(body, "{") {
		lines := strings.Split(body, "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if d, ok := strings.CutPrefix(lines[i], "data: "); ok && strings.HasPrefix(d, "{") {
				return d
			}
		}
	}
	return body
}

// TestLegacyResourceUpdatedOnce: with two workers running the conformance
// pack, each change of its watched resource (one every 3 s, at the
// clock's 3 s boundaries) reaches a subscribed session's GET stream once:
// two workers used to announce each change, so updates came in pairs a
// few milliseconds apart.
func TestLegacyResourceUpdatedOnce(t *testing.T) {
	urls := startCluster(t, redistest.Real(t), 1, 2)
	session, events := openSession(t, urls[0], urls[0], `{}`)
	if status, _, body := legacyPost(t, urls[0], session,
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://watched-resource"}}`); status != 200 {
		t.Fatalf("resources/subscribe: HTTP %d %s", status, body)
	}
	// After the first update, 9.5 s hold three more changes: three
	// updates when each reaches the stream once, six when both workers
	// announce each.
	updates := func(within time.Duration) int {
		n, end := 0, time.After(within)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("the GET stream ended")
				}
				if ev.Method == "notifications/resources/updated" && ev.Params.URI == "test://watched-resource" {
					n++
					if within > time.Minute {
						return n
					}
				}
			case <-end:
				return n
			}
		}
	}
	if updates(2*time.Minute) != 1 {
		t.Fatal("no update within 2 minutes")
	}
	if n := updates(9500 * time.Millisecond); n < 2 || n > 4 {
		t.Fatalf("%d updates in the 9.5 s after the first; want 3 (one per change, every 3 s)", n)
	}
}
