package queue

import (
	"encoding/json"
	"testing"

	"github.com/mcpq/mcpq/taskstate"
)

func TestPayload(t *testing.T) {
	t.Parallel()
	if Type == "" {
		t.Fatal("Type is empty")
	}
	refs := []taskstate.Ref{
		{Owner: taskstate.OwnerTag("alice@example.com"), ID: taskstate.NewID()},
		{Owner: "p", ID: "abcdefghijklmnopqrst-_"},
		{Owner: `we"ird\owner`, ID: "ünïcødé"},
		{Owner: "p<&>", ID: "a"},
		{},
	}
	for _, ref := range refs {
		t.Run(ref.Owner+"/"+ref.ID, func(t *testing.T) {
			for _, tool := range []string{"", "render_gif", "prompt:greet", `we"ird`, "ünï"} {
				b := Payload(Job{Ref: ref, Tool: tool, Seq: 3, Queue: "gpu"})
				if want, _ := json.Marshal(message{Ref: ref, Tool: tool}); string(b) != string(want) {
					t.Fatalf("Payload = %s, json.Marshal = %s", b, want)
				}
				got, gotTool, err := Decode(b)
				if err != nil || got != ref || gotTool != tool {
					t.Fatalf("Decode(%s) = %+v %q, %v; want %+v %q", b, got, gotTool, err, ref, tool)
				}
			}
		})
	}
	// Other spellings of the same payload (read as JSON, not by the fast path).
	for in, want := range map[string]message{
		`{"id":"x","o":"p1"}`:                   {Ref: taskstate.Ref{Owner: "p1", ID: "x"}},
		`{"o":"p1","id":"x","n":"y"}`:           {Ref: taskstate.Ref{Owner: "p1", ID: "x"}},
		` {"o":"p1","id":"x"}`:                  {Ref: taskstate.Ref{Owner: "p1", ID: "x"}},
		`{"o":"p\u0031","id":"x"}`:              {Ref: taskstate.Ref{Owner: "p1", ID: "x"}},
		`{"o":"p1","id":"x"}`:                   {Ref: taskstate.Ref{Owner: "p1", ID: "x"}},
		`{"o":"p1","id":"x","t":"echo"}`:        {Ref: taskstate.Ref{Owner: "p1", ID: "x"}, Tool: "echo"},
		`{"t":"echo","o":"p1","id":"x"}`:        {Ref: taskstate.Ref{Owner: "p1", ID: "x"}, Tool: "echo"},
		`{"o":"p1","id":"x","tp":"00-a-b-01"}`:  {Ref: taskstate.Ref{Owner: "p1", ID: "x"}, TP: "00-a-b-01"},
		`{"o":"p1","id":"x","t":"e","tp":"00"}`: {Ref: taskstate.Ref{Owner: "p1", ID: "x"}, Tool: "e", TP: "00"},
		`{"o":"p1","id":"x","tp":"00","t":"e"}`: {Ref: taskstate.Ref{Owner: "p1", ID: "x"}, Tool: "e", TP: "00"},
	} {
		if got, err := decode([]byte(in)); err != nil || got != want {
			t.Errorf("decode(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, junk := range []string{"", "not json", "[1,2]", `{"o":1}`, `{"o":"p1","id":"x"}x`, `{"o":"}`} {
		t.Run("junk "+junk, func(t *testing.T) {
			if _, _, err := Decode([]byte(junk)); err == nil {
				t.Fatalf("Decode(%q) accepted junk", junk)
			}
		})
	}
}

// TestSeq: job ids and their sequence numbers round-trip; ids of other
// tasks or of no job are refused.
func TestSeq(t *testing.T) {
	ref := taskstate.Ref{Owner: "p1", ID: "abc"}
	for seq := range int64(3) {
		if got, ok := Seq(ref, ID(ref, seq)); !ok || got != seq {
			t.Errorf("Seq(ID(%d)) = %d, %v", seq, got, ok)
		}
	}
	for _, id := range []string{"", "abcd", "abc#", "abc#x", "abc#-1", "xyz#1", "abc-1"} {
		if _, ok := Seq(ref, id); ok {
			t.Errorf("Seq(%q) accepted", id)
		}
	}
}

// TestDecodeAllocs: a delivery's payload decodes in one allocation, tool
// and trace context included (the worker loop decodes every job).
func TestDecodeAllocs(t *testing.T) {
	ref := taskstate.Ref{Owner: taskstate.OwnerTag("alice@example.com"), ID: taskstate.NewID()}
	b := payload(ref, "render_gif", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if n := testing.AllocsPerRun(100, func() {
		if m, err := decode(b); err != nil || m.Ref != ref || m.Tool != "render_gif" || m.TP == "" {
			t.Fatalf("decode = %+v, %v", m, err)
		}
	}); n > 1 {
		t.Errorf("decode allocates %v times, want at most 1", n)
	}
}
