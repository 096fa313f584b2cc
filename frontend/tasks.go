package frontend

import (
	"context"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// taskRef decodes tasks/* params into the caller's reference to the task:
// the id under the calling principal, so another principal's task cannot
// even be addressed.
func taskRef(c *call) (taskstate.Ref, error) {
	if !c.tasksDeclared() {
		return taskstate.Ref{}, proto.MissingTasksExtension()
	}
	var p proto.TaskParams
	if err := decodeParams(c, &p); err != nil {
		return taskstate.Ref{}, err
	}
	if p.TaskID == "" {
		return taskstate.Ref{}, proto.NewError(proto.CodeInvalidParams, "Invalid params: taskId is required")
	}
	return taskstate.Ref{Owner: taskstate.OwnerTag(c.principal), ID: p.TaskID}, nil
}

func (s *Server) getTask(ctx context.Context, c *call) (any, error) {
	ref, err := taskRef(c)
	if err != nil {
		return nil, err
	}
	rec, err := s.store.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &proto.GetTaskResult{DetailedTask: rec.Detailed()}, nil
}

func (s *Server) cancelTask(ctx context.Context, c *call) (any, error) {
	ref, err := taskRef(c)
	if err != nil {
		return nil, err
	}
	if err := s.store.RequestCancel(ctx, ref); err != nil {
		return nil, err
	}
	return &proto.Ack{}, nil
}
