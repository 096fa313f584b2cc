package taskstate

import (
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/taskstate/billing"
)

// A settlement comes back with the script's return code (prelude
// settled(): {code, receipt, tool}; claim, takeover and hand-back append
// receipt and tool to their replies), so learning it costs no Redis round
// trip.

// scriptCode reads a transition script's reply: a return code, or
// {code, receipt, tool} when the transition settled a reservation, which
// is handed to Options.Settled.
func (s *Store) scriptCode(reply *redis.Cmd) (int64, error) {
	v, err := reply.Result()
	if err != nil {
		return 0, err
	}
	switch v := v.(type) {
	case int64:
		return v, nil
	case []any:
		if len(v) == 3 {
			code, ok1 := v[0].(int64)
			receipt, ok2 := v[1].(string)
			tool, ok3 := v[2].(string)
			if ok1 && ok2 && ok3 {
				s.noteSettled(tool, receipt)
				return code, nil
			}
		}
	}
	return 0, fmt.Errorf("taskstate: unexpected script reply %v", v)
}

// settledAt hands the receipt and tool at res[i] and res[i+1] of a script
// reply (claim, takeover) to Options.Settled, when the reply has them.
func (s *Store) settledAt(res []any, i int) {
	if len(res) < i+2 {
		return
	}
	receipt, ok1 := res[i].(string)
	tool, ok2 := res[i+1].(string)
	if ok1 && ok2 {
		s.noteSettled(tool, receipt)
	}
}

// noteSettled hands a settlement's receipt to Options.Settled
// and Options.Series.
func (s *Store) noteSettled(tool, receipt string) {
	if s.settled == nil && s.series == nil {
		return
	}
	st := billing.Settlement{Tool: tool}
	if err := json.Unmarshal([]byte(receipt), &st.Receipt); err != nil {
		return // written by settle() in the same script: cannot happen
	}
	s.series.Settled(tool, st.Receipt.Charged, st.Receipt.Released)
	if s.settled != nil {
		s.settled(st)
	}
}
