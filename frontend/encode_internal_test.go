package frontend

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcpq/mcpq/proto"
)

// TestEncodeTaskSameBytes: encode's fast way for task answers (encodeTask)
// writes exactly what encodeJSON writes, and stands aside for every
// response it does not cover.
func TestEncodeTaskSameBytes(t *testing.T) {
	s := &Server{resultMeta: proto.ResultMeta{proto.MetaServerInfo: proto.Implementation{Name: "mcpq", Version: "0.1.0"}}}
	s.metaJSON, _ = encodeJSON(s.resultMeta)
	ttl, poll := int64(3600000), int64(1000)
	task := proto.Task{TaskID: "t-1", Status: proto.StatusWorking, StatusMessage: "a <b> & \"c\" \u2028",
		CreatedAt: "2026-12-02T14:00:00Z", LastUpdatedAt: "2026-12-02T14:00:01Z", TTLMs: &ttl, PollIntervalMs: &poll}
	results := map[string]func() any{
		"create": func() any {
			return &proto.CreateTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultTask, Meta: s.resultMeta}, Task: task}
		},
		"create, no ttl": func() any {
			t := task
			t.TTLMs, t.PollIntervalMs, t.StatusMessage = nil, nil, ""
			return &proto.CreateTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultTask, Meta: s.resultMeta}, Task: t}
		},
		"get, completed": func() any {
			return &proto.GetTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete, Meta: s.resultMeta},
				DetailedTask: proto.DetailedTask{Task: task, Result: json.RawMessage(`{"content":[{"type":"text","text":"<ok>"}]}`),
					InputRequests: map[string]json.RawMessage{"b": json.RawMessage(`{"x":2}`), "a": json.RawMessage(`{"y":1}`)}}}
		},
		"get, failed": func() any {
			return &proto.GetTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete, Meta: s.resultMeta},
				DetailedTask: proto.DetailedTask{Task: task, Error: proto.NewError(proto.CodeInternalError, "boom")}}
		},
	}
	for name, mk := range results {
		for _, id := range []string{`1`, `-7`, `"abc-123"`, `"a b"`, `"a<b"`, `"\u00e9"`, `"é"`, `1e3`} {
			r := proto.Response{JSONRPC: proto.JSONRPCVersion, ID: json.RawMessage(id), Result: mk()}
			want, err := encodeJSON(r)
			if err != nil {
				t.Fatal(err)
			}
			got := s.encodeTask(r)
			fast := plainID(r.ID)
			if fast != (got != nil) {
				t.Errorf("%s, id %s: fast way taken %v, want %v", name, id, got != nil, fast)
			}
			if got != nil && !bytes.Equal(got, want) {
				t.Errorf("%s, id %s:\n got %s\nwant %s", name, id, got, want)
			}
			if b := s.encode(r); !bytes.Equal(b, want) {
				t.Errorf("%s, id %s: encode\n got %s\nwant %s", name, id, b, want)
			}
		}
	}
	// Not the server's _meta, an error, another result: the general way.
	other := &proto.CreateTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultTask,
		Meta: proto.ResultMeta{proto.MetaServerInfo: "other"}}, Task: task}
	for _, r := range []proto.Response{
		{JSONRPC: proto.JSONRPCVersion, ID: json.RawMessage(`1`), Result: other},
		{JSONRPC: proto.JSONRPCVersion, ID: json.RawMessage(`1`), Error: proto.NewError(proto.CodeInvalidParams, "no")},
		{JSONRPC: proto.JSONRPCVersion, ID: json.RawMessage(`1`), Result: &proto.Ack{ResultBase: proto.ResultBase{Meta: s.resultMeta}}},
	} {
		if b := s.encodeTask(r); b != nil {
			t.Errorf("encodeTask took %s", b)
		}
	}
}
