package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
)

// The example's tools, tested with mcpqtest: no Redis server needed.

func TestDeployApproved(t *testing.T) {
	env := mcpqtest.New(t, tools(time.Millisecond)...)
	run := env.Call(t, "deploy", DeployArgs{Service: "billing", Version: "1.4.2", Stages: 2})
	reqs := run.Input(t)
	if reqs["approve"].Method != proto.MethodElicit {
		t.Fatalf("input requests %+v, want an elicitation under approve", reqs)
	}
	run.Accept(t, "approve", Approval{Approve: true, Note: "friday deploy"})
	res := run.Result(t)
	var got Deployed
	if err := json.Unmarshal(res.StructuredContent, &got); err != nil || res.IsError {
		t.Fatalf("result %+v: %v", res, err)
	}
	if want := (Deployed{Service: "billing", Version: "1.4.2", Stages: 2, Note: "friday deploy"}); got != want {
		t.Errorf("deployed %+v, want %+v", got, want)
	}
	if res.Content[0].Text != string(res.StructuredContent) {
		t.Errorf("text block %q differs from structuredContent %s", res.Content[0].Text, res.StructuredContent)
	}
	if d := run.Deliveries(); len(d) != 2 {
		t.Errorf("handler ran %d times, want 2 (before and after the approval)", len(d))
	}
}

func TestDeployDeclinedOrDismissed(t *testing.T) {
	env := mcpqtest.New(t, tools(time.Millisecond)...)
	for name, answer := range map[string]func(*mcpqtest.Run){
		"declined":  func(r *mcpqtest.Run) { r.Decline(t, "approve") },
		"dismissed": func(r *mcpqtest.Run) { r.Dismiss(t, "approve") },
		"accepted without approving": func(r *mcpqtest.Run) {
			r.Accept(t, "approve", Approval{Approve: false})
		},
	} {
		t.Run(name, func(t *testing.T) {
			run := env.Call(t, "deploy", DeployArgs{Service: "billing", Version: "1.4.2"})
			run.Input(t)
			answer(run)
			res := run.Result(t)
			if !res.IsError || !strings.Contains(res.Content[0].Text, "not approved") {
				t.Errorf("result %+v, want the tool error", res)
			}
		})
	}
}

func TestDeployInvalidArguments(t *testing.T) {
	env := mcpqtest.New(t, tools(time.Millisecond)...)
	for name, args := range map[string]any{
		"missing version": map[string]any{"service": "billing"},
		"too many stages": map[string]any{"service": "billing", "version": "1", "stages": 11},
		"unknown field":   map[string]any{"service": "billing", "version": "1", "region": "eu"},
	} {
		t.Run(name, func(t *testing.T) {
			run := env.Call(t, "deploy", args)
			res := run.Result(t)
			if !res.IsError || !strings.HasPrefix(res.Content[0].Text, "Invalid arguments for tool deploy: ") {
				t.Errorf("result %+v, want the invalid-arguments tool error", res)
			}
			if run.TaskID() != "" {
				t.Errorf("invalid arguments made task %s", run.TaskID())
			}
		})
	}
}

func TestDeployCancelledMidRollout(t *testing.T) {
	env := mcpqtest.New(t, tools(time.Hour)...) // stages never finish by themselves
	run := env.Call(t, "deploy", DeployArgs{Service: "billing", Version: "1.4.2"})
	run.WaitMessage(t, "Building")
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Errorf("status %s, want cancelled", st.Status)
	}
}

func TestDeployResumesAfterLostWorker(t *testing.T) {
	// Building takes an hour, so the first delivery is still building when
	// its worker is lost; the build is not checkpointed yet, so the new
	// delivery builds again.
	env := mcpqtest.New(t, tools(time.Hour)...)
	run := env.Call(t, "deploy", DeployArgs{Service: "billing", Version: "1.4.2"})
	run.WaitMessage(t, "Building")
	run.Redeliver(t)
	if d := run.Deliveries(); len(d) != 2 || d[1] <= d[0] {
		t.Errorf("deliveries %v, want a second, later attempt", d)
	}
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Errorf("status %s, want cancelled", st.Status)
	}
}

func TestDeployExpiresWaitingForApproval(t *testing.T) {
	env := mcpqtest.New(t, tools(time.Millisecond)...)
	run := env.Call(t, "deploy", DeployArgs{Service: "billing", Version: "1.4.2"})
	run.Input(t)
	run.Expire(t)
	if st := run.State(t); !st.Gone {
		t.Errorf("state %+v after expiry, want the task gone", st)
	}
}

func TestCountPrimes(t *testing.T) {
	env := mcpqtest.New(t, tools(time.Millisecond)...)
	run := env.Call(t, "count_primes", PrimesArgs{Limit: 100_000})
	res := run.Result(t)
	var got Primes
	if err := json.Unmarshal(res.StructuredContent, &got); err != nil {
		t.Fatal(err)
	}
	if got.Count != 9592 {
		t.Errorf("%d primes up to 100000, want 9592", got.Count)
	}
	if msg := run.State(t).StatusMessage; msg != "Completed" {
		t.Errorf("final statusMessage %q", msg)
	}
}

func TestCountPrimesStreamsProgress(t *testing.T) {
	env := mcpqtest.New(t, tools(time.Millisecond)...)
	run := env.Call(t, "count_primes", PrimesArgs{Limit: 200_000_000}) // long enough to cancel mid-way
	st := run.WaitMessage(t, "primes up to")
	if st.Status != proto.StatusWorking {
		t.Fatalf("status %s while counting", st.Status)
	}
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Errorf("status %s, want cancelled", st.Status)
	}
}
