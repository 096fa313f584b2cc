package job

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
			b := Payload(ref)
			if want, _ := json.Marshal(ref); string(b) != string(want) {
				t.Fatalf("Payload = %s, json.Marshal = %s", b, want)
			}
			got, err := Decode(b)
			if err != nil || got != ref {
				t.Fatalf("Decode(%s) = %+v, %v; want %+v", b, got, err, ref)
			}
		})
	}
	// Other spellings of the same payload (read as JSON, not by the fast path).
	for in, want := range map[string]taskstate.Ref{
		`{"id":"x","o":"p1"}`:         {Owner: "p1", ID: "x"},
		`{"o":"p1","id":"x","n":"y"}`: {Owner: "p1", ID: "x"},
		` {"o":"p1","id":"x"}`:        {Owner: "p1", ID: "x"},
		`{"o":"p\u0031","id":"x"}`:    {Owner: "p1", ID: "x"},
		`{"o":"p1","id":"x"}`:         {Owner: "p1", ID: "x"},
	} {
		if got, err := Decode([]byte(in)); err != nil || got != want {
			t.Errorf("Decode(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, junk := range []string{"", "not json", "[1,2]", `{"o":1}`, `{"o":"p1","id":"x"}x`} {
		t.Run("junk "+junk, func(t *testing.T) {
			if _, err := Decode([]byte(junk)); err == nil {
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
