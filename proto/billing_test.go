package proto

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestPriceCeiling: the ceiling a front end computes from the arguments.
func TestPriceCeiling(t *testing.T) {
	p := Price{Base: 10, PerArgument: map[string]int64{"frames": 5, "prompt": 1, "images": 100, "hd": 50}, Max: 10_000}
	cases := []struct {
		args string
		want int64
	}{
		{`{}`, 10},
		{`{"frames": 3}`, 25},
		{`{"frames": 2.1}`, 25},
		{`{"frames": -4}`, 10},
		{`{"prompt": "abcd", "images": [1, 2], "hd": true}`, 10 + 4 + 200 + 50},
		{`{"hd": false, "other": 99}`, 10},
		{`{"frames": 1e30}`, 10_000},
	}
	for _, c := range cases {
		got, err := p.Ceiling(json.RawMessage(c.args))
		if err != nil || got != c.want {
			t.Errorf("Ceiling(%s) = %d, %v; want %d", c.args, got, err, c.want)
		}
	}
	uncapped := Price{PerArgument: map[string]int64{"n": 1000}}
	if _, err := uncapped.Ceiling(json.RawMessage(`{"n": 1e12}`)); !errors.Is(err, ErrPriceRange) {
		t.Errorf("out of range: %v", err)
	}
	if err := (&Price{Base: -1}).Validate(); err == nil {
		t.Error("a negative base validated")
	}
}
