package proto_test

// Micro-benchmarks of the wire types' JSON: the request envelope and params
// a front end decodes, and the results it encodes on the create and
// tasks/get paths. Run: go test -run xxx -bench . ./proto

import (
	"encoding/json"
	"testing"

	"github.com/mcpq/mcpq/proto"
)

const benchMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

var (
	benchGetBody  = []byte(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"_meta":` + benchMeta + `,"taskId":"q3JdGkQm0yV1c7Yw3oQZ9A"}}`)
	benchCallBody = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":` + benchMeta +
		`,"name":"noop","arguments":{"city":"Berlin","days":3}}}`)
	benchSink []byte
)

func benchTask() proto.Task {
	ttl, poll := int64(3_600_000), int64(1000)
	return proto.Task{TaskID: "q3JdGkQm0yV1c7Yw3oQZ9A", Status: proto.StatusWorking, StatusMessage: "Queued",
		CreatedAt: "2026-11-29T22:00:00.000Z", LastUpdatedAt: "2026-11-29T22:00:00.000Z", TTLMs: &ttl, PollIntervalMs: &poll}
}

var benchServerMeta = proto.ResultMeta{proto.MetaServerInfo: proto.Implementation{Name: "mcpq", Version: "0.1.0"}}

// BenchmarkDecodeTasksGet decodes a tasks/get envelope, then its params
// (with _meta) as the front end does.
func BenchmarkDecodeTasksGet(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var req proto.Request
		if err := json.Unmarshal(benchGetBody, &req); err != nil {
			b.Fatal(err)
		}
		var p proto.TaskParams
		if err := json.Unmarshal(req.Params, &p); err != nil || p.Meta == nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeToolsCall decodes a tools/call envelope and its params.
func BenchmarkDecodeToolsCall(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var req proto.Request
		if err := json.Unmarshal(benchCallBody, &req); err != nil {
			b.Fatal(err)
		}
		var p proto.CallToolParams
		if err := json.Unmarshal(req.Params, &p); err != nil || p.Name == "" {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidBody is the json.Valid pass every request body gets first.
func BenchmarkValidBody(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(benchCallBody) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkEncodeCreateTaskResult encodes the whole response of a create.
func BenchmarkEncodeCreateTaskResult(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		res := &proto.CreateTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultTask, Meta: benchServerMeta}, Task: benchTask()}
		out, err := json.Marshal(proto.Response{JSONRPC: proto.JSONRPCVersion, ID: json.RawMessage("7"), Result: res})
		if err != nil {
			b.Fatal(err)
		}
		benchSink = out
	}
}

// BenchmarkEncodeGetTaskResult encodes the response of a tasks/get of a
// working task and of a completed one (its stored result inlined).
func BenchmarkEncodeGetTaskResult(b *testing.B) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"Hello, Berlin! Sunny, 21 degrees."}],"resultType":"complete"}`)
	for _, tc := range []struct {
		name   string
		status proto.TaskStatus
		result json.RawMessage
	}{{"working", proto.StatusWorking, nil}, {"completed", proto.StatusCompleted, result}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t := benchTask()
				t.Status = tc.status
				res := &proto.GetTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete, Meta: benchServerMeta},
					DetailedTask: proto.DetailedTask{Task: t, Result: tc.result}}
				out, err := json.Marshal(proto.Response{JSONRPC: proto.JSONRPCVersion, ID: json.RawMessage("7"), Result: res})
				if err != nil {
					b.Fatal(err)
				}
				benchSink = out
			}
		})
	}
}
