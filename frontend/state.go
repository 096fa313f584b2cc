package frontend

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// requestState is what an MRTR requestState carries: the parked task that
// holds the work, bound to the principal, the originating request and an
// expiry, and integrity-protected with an HMAC under a key every replica shares.
type requestState struct {
	// TaskID is the task holding the work.
	TaskID string `json:"t"`
	// Owner is the principal's tag.
	Owner string `json:"o"`
	// Binding hashes the request (method, name, arguments).
	Binding string `json:"b"`
	// Expires is the unix time after which the state is refused.
	Expires int64 `json:"e"`
	// Round counts the task's earlier input rounds, so each round's state
	// differs.
	Round int64 `json:"r,omitempty"`
}

const stateVersion = "v1"

// errBadState answers a tampered, foreign, expired or malformed requestState.
func errBadState(why string) error {
	return proto.NewError(proto.CodeInvalidParams, "Invalid requestState: %s", why)
}

// stateKeyFromRedis returns the HMAC key shared by all front ends, creating
// it once (SET NX) when no replica has yet.
func stateKeyFromRedis(ctx context.Context, rdb redis.UniversalClient, keys taskstate.Keys) ([]byte, error) {
	var fresh [32]byte
	_, _ = rand.Read(fresh[:])
	if err := rdb.SetNX(ctx, stateKeyName(keys.Prefix), base64.StdEncoding.EncodeToString(fresh[:]), 0).Err(); err != nil {
		return nil, err
	}
	v, err := rdb.Get(ctx, stateKeyName(keys.Prefix)).Result()
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(v)
}

// binding hashes what a requestState is bound to: the method, the name and
// the arguments (canonicalised: key order and spacing do not matter).
func binding(method, name string, args json.RawMessage) string {
	var v any
	canon := []byte("null")
	if len(args) > 0 && json.Unmarshal(args, &v) == nil {
		canon, _ = json.Marshal(v)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", method, name)
	h.Write(canon)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

func (s *Server) signState(st requestState) string {
	payload, _ := json.Marshal(st)
	p := base64.RawURLEncoding.EncodeToString(payload)
	return stateVersion + "." + p + "." + s.mac(p)
}

func (s *Server) mac(p string) string {
	m := hmac.New(sha256.New, s.stateKey)
	m.Write([]byte(stateVersion + "." + p))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verifyState checks a requestState's integrity, owner, binding and expiry.
func (s *Server) verifyState(raw, owner, bind string, now time.Time) (*requestState, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 || parts[0] != stateVersion {
		return nil, errBadState("malformed")
	}
	// The MAC is compared in its text form: one encoding per value, so no
	// look-alike string (spare bits in the last character) verifies.
	if !hmac.Equal([]byte(parts[2]), []byte(s.mac(parts[1]))) {
		return nil, errBadState("integrity check failed")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errBadState("malformed")
	}
	var st requestState
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&st); err != nil {
		return nil, errBadState("malformed")
	}
	switch {
	case st.Owner != owner:
		return nil, errBadState("issued to another principal")
	case st.Binding != bind:
		return nil, errBadState("issued for another request")
	case now.Unix() > st.Expires:
		return nil, errBadState("expired")
	}
	return &st, nil
}

// MaxInputResponses bounds the answers in one inputResponses object, and
// MaxInputKeyBytes the length of each key: one tasks/update (or MRTR retry)
// becomes one update.lua call of at most 2 × MaxInputResponses arguments
// and as many HEXISTS, whatever the body holds (docs/security.md).
const (
	MaxInputResponses = 256
	MaxInputKeyBytes  = 256
)

// decodeResponses reads inputResponses: an object whose values are objects,
// at most MaxInputResponses of them. It stops reading at the first member
// past the limit, so an oversized object costs no more than the limit.
func decodeResponses(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	notObject := proto.NewError(proto.CodeInvalidParams, "Invalid params: inputResponses must be an object")
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, notObject
	}
	m := map[string]json.RawMessage{}
	for dec.PeekKind() != '}' {
		if len(m) == MaxInputResponses {
			return nil, proto.NewError(proto.CodeInvalidParams,
				"Invalid params: inputResponses has more than %d entries (the limit per request)", MaxInputResponses)
		}
		name, err := dec.ReadToken()
		if err != nil || name.Kind() != '"' {
			return nil, notObject
		}
		k := name.String()
		if len(k) > MaxInputKeyBytes {
			return nil, proto.NewError(proto.CodeInvalidParams,
				"Invalid params: an inputResponses key is longer than %d bytes", MaxInputKeyBytes)
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, notObject
		}
		if v.Kind() != '{' {
			return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: inputResponses[%q] must be an object", k)
		}
		m[k] = json.RawMessage(v.Clone())
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, notObject
	}
	return m, nil
}
