package proto

import "encoding/json"

// MarshalJSON writes every amount an entry of its kind carries, zeros
// included (docs/billing.md: a release shows "charged": 0): a credit its
// amount, a reserve its reservation, a settle or release its reservation,
// charge, release and usage. Amounts other kinds do not carry are left out.
func (e LedgerEntry) MarshalJSON() ([]byte, error) {
	type amounts struct {
		ID       string `json:"id"`
		Kind     string `json:"kind"`
		Task     string `json:"task,omitempty"`
		Tool     string `json:"tool,omitempty"`
		Outcome  string `json:"outcome,omitempty"`
		Amount   *int64 `json:"amount,omitempty"`
		Reserved *int64 `json:"reserved,omitempty"`
		Charged  *int64 `json:"charged,omitempty"`
		Released *int64 `json:"released,omitempty"`
		Usage    *int64 `json:"usage,omitempty"`
		At       string `json:"at"`
	}
	out := amounts{ID: e.ID, Kind: e.Kind, Task: e.Task, Tool: e.Tool, Outcome: e.Outcome, At: e.At}
	nonZero := func(v *int64) *int64 {
		if *v == 0 {
			return nil
		}
		return v
	}
	switch e.Kind {
	case "credit":
		out.Amount = &e.Amount
	case "reserve":
		out.Reserved = &e.Reserved
	case "settle", "release":
		out.Reserved, out.Charged, out.Released, out.Usage = &e.Reserved, &e.Charged, &e.Released, &e.Usage
	default: // a kind this version does not know: what is set
		out.Amount, out.Reserved = nonZero(&e.Amount), nonZero(&e.Reserved)
		out.Charged, out.Released, out.Usage = nonZero(&e.Charged), nonZero(&e.Released), nonZero(&e.Usage)
	}
	return json.Marshal(out)
}
