package client

import (
	"context"
	"encoding/json"
)

// answer sends tasks/update for the pending input requests reqs. A key
// answered before (by this handle, or by an earlier process per the
// journal) is re-sent with the recorded answer and never shown to Input
// again: the server ignores keys that are no longer outstanding, so a
// re-send after a crash is harmless, while asking the person twice is not.
// Each new answer is in the journal before it is sent.
func (h *Handle) answer(ctx context.Context, reqs map[string]json.RawMessage) (sent bool, err error) {
	c := h.c
	if c.Journal != nil {
		if e, ok, err := c.Journal.Get(ctx, c.URL, h.ID); err == nil && ok {
			h.mu.Lock()
			for k, v := range e.Answers {
				h.answers[k] = v
			}
			h.mu.Unlock()
		}
	}
	responses := map[string]any{}
	for _, key := range sortedKeys(reqs) {
		h.mu.Lock()
		prev, ok := h.answers[key]
		h.mu.Unlock()
		if ok {
			responses[key] = prev
			continue
		}
		if c.Input == nil {
			continue // someone else answers (mcpq task answer, another process)
		}
		b, err := c.answerOne(ctx, key, reqs[key])
		if err != nil {
			return false, err
		}
		if c.Journal != nil {
			// First answer wins: another process may have answered meanwhile.
			if b, err = c.Journal.Answer(ctx, c.URL, h.ID, key, b); err != nil {
				return false, err
			}
		}
		h.mu.Lock()
		h.answers[key] = b
		h.mu.Unlock()
		responses[key] = json.RawMessage(b)
	}
	if len(responses) == 0 {
		return false, nil
	}
	_, err = c.UpdateTask(ctx, h.ID, responses)
	return err == nil, err
}
