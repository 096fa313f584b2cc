package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/worker"
)

// DeployArgs are the arguments of deploy.
type DeployArgs struct {
	Service string `json:"service" jsonschema:"the service to deploy" mcpq:"minLength=1"`
	Version string `json:"version" jsonschema:"the version to roll out" mcpq:"minLength=1"`
	Stages  int    `json:"stages,omitempty" jsonschema:"rollout stages (default 3)" mcpq:"minimum=1,maximum=10"`
}

// Approval is the form a person fills in before the rollout.
type Approval struct {
	Approve bool   `json:"approve" jsonschema:"roll the build out to production"`
	Note    string `json:"note,omitempty" jsonschema:"a note for the change log"`
}

// Deployed is deploy's structured result.
type Deployed struct {
	Service string `json:"service"`
	Version string `json:"version"`
	Stages  int    `json:"stages"`
	Note    string `json:"note,omitempty"`
}

// deployState is deploy's checkpoint: the handler runs again from the
// start after the approval and after a lost worker, and skips what is done.
type deployState struct {
	Built bool `json:"built"`
	Done  int  `json:"done"`
}

// deployTool builds, asks for approval, then rolls out stage by stage;
// stage is how long building and each stage take.
func deployTool(stage time.Duration) worker.Tool {
	t := worker.NewTool("deploy", "Builds a service and rolls it out in stages after a person approves.",
		func(ctx context.Context, c *worker.Call, in DeployArgs) (Deployed, error) {
			var st deployState
			if _, err := c.LoadCheckpoint(&st); err != nil {
				return Deployed{}, err
			}
			if !st.Built {
				_ = c.Progress(ctx, "Building "+in.Service+" "+in.Version)
				if err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, stage) }); err != nil {
					return Deployed{}, err
				}
				st.Built = true
				if err := c.SaveCheckpoint(ctx, st); err != nil {
					return Deployed{}, err
				}
			}
			ok, err := worker.Elicit[Approval](ctx, c, "approve", fmt.Sprintf("Roll %s %s out to production?", in.Service, in.Version))
			if err != nil {
				return Deployed{}, err
			}
			if !ok.Accepted() || !ok.Content.Approve {
				return Deployed{}, errors.New("the rollout was not approved")
			}
			stages := cmp.Or(in.Stages, 3)
			for ; st.Done < stages; st.Done++ {
				_ = c.Progress(ctx, fmt.Sprintf("Rolling out: stage %d of %d", st.Done+1, stages))
				if err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, stage) }); err != nil {
					return Deployed{}, err
				}
				if err := c.SaveCheckpoint(ctx, deployState{Built: true, Done: st.Done + 1}); err != nil {
					return Deployed{}, err
				}
			}
			return Deployed{Service: in.Service, Version: in.Version, Stages: stages, Note: ok.Content.Note}, nil
		})
	t.TTL = 2 * time.Hour // a person may take a while to approve
	return t
}
