package proto_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpq/mcpq/proto"
)

// TestLedgerEntryZeros: a settlement's amounts are written even when zero
// (a release charged 0), and round-trip; other kinds carry only theirs.
func TestLedgerEntryZeros(t *testing.T) {
	cases := []struct {
		e    proto.LedgerEntry
		want string
	}{
		{proto.LedgerEntry{ID: "1-0", Kind: "release", Task: "t", Outcome: "failed", Reserved: 300, Released: 300, At: "x"},
			`{"id":"1-0","kind":"release","task":"t","outcome":"failed","reserved":300,"charged":0,"released":300,"usage":0,"at":"x"}`},
		{proto.LedgerEntry{ID: "2-0", Kind: "credit", Amount: 5, At: "x"}, `{"id":"2-0","kind":"credit","amount":5,"at":"x"}`},
		{proto.LedgerEntry{ID: "3-0", Kind: "reserve", Task: "t", Reserved: 0, At: "x"},
			`{"id":"3-0","kind":"reserve","task":"t","reserved":0,"at":"x"}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.e)
		if err != nil || string(b) != c.want {
			t.Fatalf("marshal %+v:\n got %s %v\nwant %s", c.e, b, err, c.want)
		}
		var back proto.LedgerEntry
		if err := json.Unmarshal(b, &back); err != nil || back != c.e {
			t.Fatalf("round trip: %+v %v, want %+v", back, err, c.e)
		}
	}
}
