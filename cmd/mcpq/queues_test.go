package main

import (
	"flag"
	"maps"
	"strings"
	"testing"
)

func TestParseQueues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]int
		err  string
	}{
		{in: "gpu=2,cpu=8", want: map[string]int{"gpu": 2, "cpu": 8}},
		{in: " gpu = 1 ", want: map[string]int{"gpu": 1}},
		{in: "gpu", err: `"gpu" is not queue=concurrency`},
		{in: "gpu=0", err: `queue gpu: concurrency "0" is not a whole number above 0`},
		{in: "gpu=two", err: `concurrency "two"`},
		{in: "=2", err: "empty queue name"},
		{in: "g p u=2", err: `queue name "g p u"`},
		{in: "gpu=1,gpu=2", err: "queue gpu given twice"},
		{in: ",", err: "no queue given"},
	} {
		got, err := parseQueues(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseQueues(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseQueues(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseToolQueues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
		err  string
	}{
		{in: "render_gif=gpu,*=cpu", want: map[string]string{"render_gif": "gpu", "*": "cpu"}},
		{in: "", want: map[string]string{}},
		{in: "render_gif", err: `"render_gif" is not tool=queue`},
		{in: "=gpu", err: `"=gpu" is not tool=queue`},
		{in: "render_gif=", err: "tool render_gif: empty queue name"},
		{in: "a=gpu,a=cpu", err: "tool a given twice"},
		{in: "a=g/pu", err: `queue name "g/pu"`},
	} {
		got, err := parseToolQueues(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseToolQueues(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseToolQueues(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseShares(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]int
		err  string
	}{
		{in: "4", want: map[string]int{"*": 4}},
		{in: " 0 ", want: map[string]int{"*": 0}},
		{in: "gpu=1,*=4", want: map[string]int{"gpu": 1, "*": 4}},
		{in: "gpu=0", want: map[string]int{"gpu": 0}},
		{in: "-1", err: "share -1 is below 0"},
		{in: "gpu", err: `"gpu" is not queue=number`},
		{in: "gpu=-1", err: `queue gpu: share "-1"`},
		{in: "g p u=1", err: `queue name "g p u"`},
		{in: "*=1,*=2", err: "queue * given twice"},
		{in: ",", err: "no share given"},
	} {
		got, err := parseShares(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseShares(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseShares(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseShards(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]int
		err  string
	}{
		{in: "gpu=4,cpu=2", want: map[string]int{"gpu": 4, "cpu": 2}},
		{in: "gpu=1", want: map[string]int{"gpu": 1}},
		{in: "gpu=256", want: map[string]int{"gpu": 256}},
		{in: "gpu=257", err: `shards "257" is not a whole number from 1 to 256`},
		{in: "gpu=0", err: `shards "0"`},
		{in: "gpu", err: `"gpu" is not queue=shards`},
		{in: "g~1=2", err: `queue name "g~1"`},
		{in: "gpu=1,gpu=2", err: "queue gpu given twice"},
		{in: "", err: "no queue given"},
	} {
		got, err := parseShards(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseShards(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseShards(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestQueueShardsFlagRepeats: --queue-shards may be repeated or
// comma-separated, and adds to what MCPQ_QUEUE_SHARDS set.
func TestQueueShardsFlagRepeats(t *testing.T) {
	t.Setenv("MCPQ_QUEUE_SHARDS", "cpu=2")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var shards map[string]int
	shardsFlag(fs, &shards)
	if err := fs.Parse([]string{"--queue-shards", "gpu=4", "--queue-shards", "a=3,b=5"}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"cpu": 2, "gpu": 4, "a": 3, "b": 5}; !maps.Equal(shards, want) {
		t.Errorf("shards = %v, want %v", shards, want)
	}
}
