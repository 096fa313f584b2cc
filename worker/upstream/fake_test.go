package upstream

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEnv switches the test binary into a fake stdio upstream; its value
// is the era: "legacy" (needs initialize) or "stateless".
const fakeEnv = "UPSTREAM_FAKE"

// recordEnv names a file the fake appends every notification it gets to.
const recordEnv = "UPSTREAM_RECORD"

func TestMain(m *testing.M) {
	if era := os.Getenv(fakeEnv); era != "" {
		fake(era)
		os.Exit(0)
	}
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}

// fakeTools are the fake's tools, listed two to a page.
var fakeTools = []string{
	`{"name":"echo","description":"Echoes.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"icons":[{"src":"https://x/i.png"}]}`,
	`{"name":"rich","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}`,
	`{"name":"slow","inputSchema":{"type":"object"}}`,
	`{"name":"misbehave","inputSchema":{"type":"object"}}`,
	`{"name":"again","inputSchema":{"type":"object"},"annotations":{"idempotentHint":true}}`,
	`{"name":"study","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`,
	`{"name":"chatty","inputSchema":{"type":"object"}}`,
}

type fakeMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string                     `json:"name"`
		Cursor    string                     `json:"cursor"`
		TaskID    string                     `json:"taskId"`
		Arguments map[string]json.RawMessage `json:"arguments"`
		Meta      map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// fake serves the fake tools on stdio until stdin closes.
func fake(era string) {
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	write := func(s string) { mu.Lock(); out.WriteString(s + "\n"); out.Flush(); mu.Unlock() }
	answer := func(id json.RawMessage, result string) {
		write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
	}
	tasks := &fakeTasks{until: map[string]string{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m fakeMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if f := os.Getenv(recordEnv); f != "" && (len(m.ID) == 0 || m.Method == "tools/call" || m.Method == "tasks/cancel") {
			fh, _ := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			fh.Write(append(append([]byte{}, sc.Bytes()...), '\n'))
			fh.Close()
		}
		if len(m.ID) == 0 {
			continue
		}
		switch {
		case m.Method == "initialize" && era == "legacy":
			answer(m.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1"}}`)
		case m.Method == "initialize":
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID))
		case era == "stateless" && string(m.Params.Meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"`:
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"no protocolVersion in _meta"}}`, m.ID))
		case m.Method == "tools/list":
			page := 0
			if m.Params.Cursor != "" {
				fmt.Sscan(m.Params.Cursor, &page)
			}
			end := min(page+2, len(fakeTools))
			next := ""
			if end < len(fakeTools) {
				next = fmt.Sprintf(`,"nextCursor":"%d"`, end)
			}
			answer(m.ID, `{"tools":[`+strings.Join(fakeTools[page:end], ",")+`]`+next+`}`)
		case m.Method == "tools/call" && m.Params.Name == "study":
			tasks.create(m, answer)
		case m.Method == "tools/call":
			fakeCall(m, write, answer)
		case strings.HasPrefix(m.Method, "tasks/"):
			tasks.serve(m, write, answer)
		default:
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID))
		}
	}
}

// fakeCall runs one tool of the fake.
func fakeCall(m fakeMsg, write func(string), answer func(json.RawMessage, string)) {
	token := string(m.Params.Meta["progressToken"])
	mode := ""
	_ = json.Unmarshal(m.Params.Arguments["mode"], &mode)
	switch m.Params.Name {
	case "echo", "again":
		b, _ := json.Marshal(m.Params.Arguments)
		answer(m.ID, `{"content":[{"type":"text","text":`+string(mustJSON(string(b)))+`}]}`)
	case "rich":
		answer(m.ID, `{"content":[{"type":"text","text":"see"},{"type":"resource_link","uri":"file:///a.txt","name":"a.txt","title":"A","mimeType":"text/plain","icons":[{"src":"https://x/a.png"}]},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"structuredContent":{"n":1},"isError":true}`)
	case "chatty": // log messages and progress, the last right before the answer
		for i, word := range []string{"one", "two", "three"} {
			write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%q}}`, word))
			write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":3,"message":"%s done"}}`, token, i+1, word))
		}
		answer(m.ID, `{"content":[{"type":"text","text":"said three"}]}`)
	case "slow": // progress, then no answer: the caller cancels or times out
		write(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + token + `,"progress":1,"total":3,"message":"step 1 of 3"}}`)
	case "misbehave":
		misbehave(mode, m, token, write, answer)
	}
}

// misbehave acts out one bad upstream.
func misbehave(mode string, m fakeMsg, token string, write func(string), answer func(json.RawMessage, string)) {
	switch mode {
	case "crash":
		fmt.Fprintln(os.Stderr, "panic: the model file is missing")
		os.Exit(3)
	case "garbage":
		write("this is not JSON")
		write(`{"jsonrpc":"2.0","id":987654,"result":{"content":[]}}`) // never sent
		write(`{"jsonrpc":"2.0","id":"nope","result":{}}`)
		answer(m.ID, `{"content":[{"type":"text","text":"fine"}]}`)
	case "long":
		write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", MaxLine+10) + `"}]}}`)
	case "flood":
		var b strings.Builder
		for i := 1; i <= 20000; i++ {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"message":"n%d"}}`+"\n", token, i, i)
		}
		b.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
		write(b.String())
		answer(m.ID, `{"content":[{"type":"text","text":"flooded"}]}`)
	case "hang":
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// fakeTasks are the fake's 2025-11-25 tasks (tool study): a task runs
// until the file its "until" argument names exists; tasks/result waits for
// that, tasks/cancel ends it.
type fakeTasks struct {
	mu    sync.Mutex
	n     int
	until map[string]string // task id → file ("" once cancelled)
}

func (f *fakeTasks) create(m fakeMsg, answer func(json.RawMessage, string)) {
	var until string
	_ = json.Unmarshal(m.Params.Arguments["until"], &until)
	f.mu.Lock()
	f.n++
	id := fmt.Sprintf("T%d", f.n)
	f.until[id] = until
	f.mu.Unlock()
	answer(m.ID, `{"task":{"taskId":"`+id+`","status":"working","createdAt":"2026-01-01T00:00:00Z","ttl":60000,"pollInterval":20}}`)
}

// state is the task's status, or "" for a task never made.
func (f *fakeTasks) state(id string) string {
	f.mu.Lock()
	until, ok := f.until[id]
	f.mu.Unlock()
	switch {
	case !ok:
		return ""
	case until == "":
		return "cancelled"
	}
	if _, err := os.Stat(until); err == nil {
		return "completed"
	}
	return "working"
}

func (f *fakeTasks) serve(m fakeMsg, write func(string), answer func(json.RawMessage, string)) {
	id := m.Params.TaskID
	st := f.state(id)
	if st == "" {
		write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"Task not found: %s"}}`, m.ID, id))
		return
	}
	switch m.Method {
	case "tasks/get":
		answer(m.ID, `{"taskId":"`+id+`","status":"`+st+`","statusMessage":"researching (task `+id+`)","createdAt":"2026-01-01T00:00:00Z","ttl":60000,"pollInterval":20}`)
	case "tasks/cancel":
		f.mu.Lock()
		f.until[id] = ""
		f.mu.Unlock()
		answer(m.ID, `{"taskId":"`+id+`","status":"cancelled","createdAt":"2026-01-01T00:00:00Z","ttl":60000}`)
	case "tasks/result":
		go func() {
			for f.state(id) == "working" {
				time.Sleep(20 * time.Millisecond)
			}
			if f.state(id) == "cancelled" {
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"Task %s was cancelled"}}`, m.ID, id))
				return
			}
			answer(m.ID, `{"content":[{"type":"text","text":"report of task `+id+`"}]}`)
		}()
	}
}
