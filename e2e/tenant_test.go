package e2e

// Hostile tenants across processes (issue 13): two front ends and a worker
// on a real Redis; alice and bob hold static keys, carol a managed key.
// Each probe of the review is sent as the review sent it and must now be
// refused or bounded: a huge tasks/update, duplicate member names, a listen
// naming the same tasks many times, oversized arguments, long-lived
// requests of a revoked key, and the lower findings an HTTP client sees.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

func TestHostileTenants(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, testHostileTenants)
}

func testHostileTenants(t *testing.T, b *redistest.Backend) {
	t.Parallel()
	keyAlice, keyBob := "k1-"+taskstate.NewID(), "k2-"+taskstate.NewID()
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix}
	// Four slots, and a share of two per principal (by environment, which
	// a worker without shares ignores: alice's flood then takes every slot).
	start(t, "worker", append([]string{"MCPQ_CONCURRENCY=4", "MCPQ_MAX_RUNNING_PER_PRINCIPAL=2"}, env...), nil,
		"worker", "--fixtures", "conformance")
	var fes []*authFE
	for i := range 2 {
		port, err := redistest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		start(t, fmt.Sprintf("frontend%d", i+1), append([]string{"MCPQ_API_KEYS=alice:" + keyAlice + ",bob:" + keyBob}, env...), nil,
			"frontend", "--addr", addr, "--auth-recheck", "1s")
		fes = append(fes, &authFE{base: "http://" + addr, b: b, env: env})
		waitHealthy(t, "http://"+addr)
	}
	fe1, fe2 := fes[0], fes[1]
	ctx := within(t)
	for { // the worker publishes its catalog on its own schedule
		a := fe1.post(t, ctx, keyAlice, 1, proto.MethodToolsList, "", nil)
		if a.status == 200 && strings.Contains(string(a.body), `"slow_compute"`) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("catalog never listed slow_compute: %d %s", a.status, a.body)
		case <-time.After(50 * time.Millisecond):
		}
	}
	code := func(a answer) any { c, _ := lookupPath(a.json(t), "error", "code"); return c }

	t.Run("finding 1: a huge tasks/update is refused before Redis", func(t *testing.T) {
		responses := map[string]any{}
		for i := range 100_000 {
			responses[fmt.Sprintf("k%d", i)] = map[string]any{}
		}
		began := time.Now()
		a := fe1.post(t, ctx, keyAlice, 1, proto.MethodTasksUpd, "AAAAAAAAAAAAAAAAAAAAAA",
			map[string]any{"taskId": "AAAAAAAAAAAAAAAAAAAAAA", "inputResponses": responses})
		if code(a) != float64(proto.CodeInvalidParams) || !strings.Contains(string(a.body), "more than 256 entries") {
			t.Errorf("100000 answers: HTTP %d %s", a.status, a.body)
		}
		t.Logf("refused in %s", time.Since(began).Round(time.Millisecond))
	})

	t.Run("finding 2: a flooding tenant leaves others a worker", func(t *testing.T) {
		// alice asks for more hour-long tasks than the fleet has slots (as
		// the review did: 25, well under the live-task cap).
		// Five at a time: each create waits out the tool's sync budget (0.5 s).
		flood := make([]string, 25)
		aliceClient := &client.Client{URL: fe1.base + "/mcp", Tasks: true, Header: http.Header{"Authorization": {"Bearer " + keyAlice}}}
		var wg sync.WaitGroup
		for w := range 5 {
			wg.Go(func() {
				for i := w; i < len(flood); i += 5 {
					if a, err := aliceClient.CallTool(ctx, "slow_compute", map[string]any{"seconds": 3600}); err == nil && a.Task != nil {
						flood[i] = a.Task.TaskID
					}
				}
			})
		}
		wg.Wait()
		if slices.Contains(flood, "") {
			t.Fatalf("alice's flood was not all created: %q", flood)
		}
		defer func() {
			for _, id := range flood {
				fe1.task(t, ctx, keyAlice, proto.MethodTasksCncl, id)
			}
		}()
		keys := taskstate.Keys{Prefix: b.Prefix}
		running := func() (ids []string) { // held by a delivery now (the record's running attempt)
			for _, id := range flood {
				v, _ := b.Client.HGet(ctx, keys.Task(taskstate.Ref{Owner: taskstate.OwnerTag("alice"), ID: id}), "running").Result()
				if v != "" && v != "0" {
					ids = append(ids, id)
				}
			}
			return ids
		}
		waitFor := func(what string, ok func() bool) {
			t.Helper()
			for !ok() {
				select {
				case <-ctx.Done():
					t.Fatalf("%s: never (alice runs %v)", what, running())
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
		waitFor("alice's flood runs", func() bool { return len(running()) >= 2 })
		// bob's call of 0 seconds starts and ends while alice floods.
		began := time.Now()
		a := fe2.post(t, ctx, keyBob, 1, proto.MethodToolsCall, "slow_compute",
			map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0}})
		if id, ok := lookupPath(a.json(t), "result", "taskId"); ok {
			fe2.await(t, ctx, keyBob, id.(string), proto.StatusCompleted)
		} else if text, _ := lookupPath(a.json(t), "result", "content"); a.status != 200 || text == nil {
			t.Fatalf("bob's call: HTTP %d %s", a.status, a.body)
		}
		t.Logf("bob's 0-second call answered %s after it was sent, alice flooding with %d tasks on 4 slots",
			time.Since(began).Round(time.Millisecond), len(flood))
		if n := len(running()); n > 2 {
			t.Errorf("alice runs %d tasks at once, more than her share of 2", n)
		}
		// A slot alice frees goes to one of her waiting tasks: none is lost.
		before := running()
		fe1.task(t, ctx, keyAlice, proto.MethodTasksCncl, before[0])
		waitFor("a waiting task of alice's takes the freed slot", func() bool {
			now := running()
			return len(now) == 2 && !slices.Contains(now, before[0])
		})
	})

	t.Run("finding 4: duplicate member names are refused", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + proto.ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}},"name":null}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fe2.base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", proto.ProtocolVersion)
		req.Header.Set("Mcp-Method", proto.MethodToolsCall)
		setKey(req, keyAlice)
		if a := do(t, req); a.status != 400 || code(a) != float64(proto.CodeInvalidRequest) {
			t.Errorf("duplicate name: HTTP %d %s", a.status, a.body)
		}
	})

	t.Run("finding 5: listen ids are de-duplicated and capped", func(t *testing.T) {
		id := fe1.create(t, ctx, keyAlice, "slow_compute", map[string]any{"seconds": 30})
		defer fe1.task(t, ctx, keyAlice, proto.MethodTasksCncl, id)
		ids := []string{}
		for range 500 {
			ids = append(ids, id)
		}
		if st, ack := fe1.listenAck(t, ctx, keyAlice, ids...); st != 200 || strings.Count(ack, id) != 1 {
			t.Errorf("listen naming one task 500 times: HTTP %d %s", st, ack)
		}
		var many []string
		for range 101 {
			many = append(many, taskstate.NewID())
		}
		a := fe1.post(t, ctx, keyAlice, 1, proto.MethodListen, "", map[string]any{"notifications": map[string]any{"taskIds": many}})
		if code(a) != float64(proto.CodeInvalidParams) {
			t.Errorf("listen with 101 ids: HTTP %d %s", a.status, a.body)
		}
		if r := fe1.get(t, ctx, keyAlice, "/v1/tasks"); r.status != 200 || r.header.Get("Cache-Control") != "no-store" ||
			r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET /v1/tasks: HTTP %d %v", r.status, r.header)
		}
	})

	t.Run("finding 6: arguments are bounded", func(t *testing.T) {
		a := fe2.post(t, ctx, keyBob, 1, proto.MethodToolsCall, "slow_compute",
			map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0, "pad": strings.Repeat("x", 2<<20)}})
		if code(a) != float64(proto.CodeInvalidParams) || !strings.Contains(string(a.body), "allowed per call") {
			t.Errorf("2 MiB arguments: HTTP %d %.300s", a.status, a.body)
		}
	})

	t.Run("finding 3: a revoked key's long requests end on both front ends", func(t *testing.T) {
		created := fe1.mcpqCmd(t, "keys", "create", "carol")
		carol := strings.TrimSpace(strings.SplitN(created, "\n", 2)[0])
		carolID := strings.SplitN(carol, "_", 3)[1]
		auth := http.Header{"Authorization": {"Bearer " + carol}}
		l, err := (&client.Client{URL: fe1.base + "/mcp", Header: auth}).Listen(ctx, map[string]any{"toolsListChanged": true})
		if err != nil {
			t.Fatal(err)
		}
		if m := <-l.C; m.Method != proto.NotifySubscribed {
			t.Fatalf("listen opened with %+v", m)
		}
		held := make(chan error, 1)
		go func() { // no Tasks extension: held until the 30 s task ends
			_, err := (&client.Client{URL: fe2.base + "/mcp", Header: auth}).CallTool(ctx, "slow_compute", map[string]any{"seconds": 30})
			held <- err
		}()
		for fe2.ids(t, ctx, carol) == nil { // the held call's task exists
			select {
			case <-ctx.Done():
				t.Fatal("carol's call never made a task")
			case <-time.After(20 * time.Millisecond):
			}
		}
		fe1.mcpqCmd(t, "keys", "revoke", carolID)
		revokedAt := time.Now()
		var last client.Message
		for m := range l.C {
			last = m
		}
		if last.Error == nil || last.Error.Message != "Unauthorized: the API key was revoked" {
			t.Errorf("listen stream ended with %+v", last)
		}
		var re *client.RPCError
		if err := <-held; !errors.As(err, &re) || re.HTTPStatus != http.StatusUnauthorized {
			t.Errorf("held call ended with %v, want HTTP 401", err)
		}
		t.Logf("both ended %s after the revocation", time.Since(revokedAt).Round(time.Millisecond))
	})

	t.Run("finding 7: a 401 closes the connection without reading a slow body", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(fe2.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Headers promising 100000 bytes of body, then only a few: before
		// the fix the front end waited for the rest until its read timeout.
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Type: application/json\r\n"+
			"Content-Length: 100000\r\n\r\n{\"jsonrpc\":")
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // a failure bound: the close comes at once
		got, err := io.ReadAll(conn)
		if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 401") || !strings.Contains(string(got), "Connection: close") {
			t.Errorf("after a 401 with a slow body: %v\n%s", err, got)
		}
	})
}
