package frontend

import (
	"context"
	"encoding/json"
	"errors"

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
	if id, ok := rawString(c.names.TaskID); ok {
		p.TaskID = id
	} else if err := decodeParams(c, &p); err != nil { // absent, or not a string: the precise error
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
	s.series.CancelRequested()
	return &proto.Ack{}, nil
}

func (s *Server) updateTask(ctx context.Context, c *call) (any, error) {
	if !c.tasksDeclared() {
		return nil, proto.MissingTasksExtension()
	}
	var p struct {
		proto.RequestParams
		TaskID         string          `json:"taskId"`
		InputResponses json.RawMessage `json:"inputResponses"`
	}
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	if p.TaskID == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: taskId is required")
	}
	if len(p.InputResponses) == 0 {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: inputResponses is required")
	}
	answers, err := decodeResponses(p.InputResponses)
	if err != nil {
		return nil, err
	}
	ref := taskstate.Ref{Owner: taskstate.OwnerTag(c.principal), ID: p.TaskID}
	rec, err := s.store.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := checkResponses(rec.InputRequests, answers); err != nil { // frontend/inputcheck.go
		return nil, err
	}
	if err := s.answer(ctx, ref, answers); err != nil {
		return nil, err
	}
	return &proto.Ack{}, nil
}

// answer writes answers into the task's record and resumes the task when
// nothing is pending any more (tasks/update, and a legacy client's
// response to an input request). A task that ended meanwhile is no error.
func (s *Server) answer(ctx context.Context, ref taskstate.Ref, answers map[string]json.RawMessage) error {
	res, err := s.store.Answer(ctx, ref, answers)
	notReplicated := errors.Is(err, taskstate.ErrNotReplicated) // written: still resume, then report
	if err != nil && !errors.Is(err, taskstate.ErrTerminal) && !notReplicated {
		return err
	}
	if res.Resume > 0 {
		rec, err := s.store.Get(ctx, ref)
		if err != nil {
			return err
		}
		def, err := s.catalog.get(ctx, rec.Tool)
		if err != nil {
			return err
		}
		if def == nil {
			return proto.NewError(proto.CodeInternalError, "Internal error: the task's tool %s is no longer served", rec.Tool)
		}
		if err := s.enqueue(ctx, rec, def, res.Resume); err != nil {
			return err
		}
	}
	if notReplicated {
		return err
	}
	return nil
}
