package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/taskstate"
)

// ErrNoSession: no session of that id for this owner (never opened, ended
// with DELETE, idle past its expiry, or another principal's).
var ErrNoSession = errors.New("legacy: session not found")

// Session is an HTTP session of protocol revision 2025-11-25: what
// its initialize declared, kept in Redis so any front end serves any of its
// requests, under its owner's hash tag so another principal cannot address
// it.
type Session struct {
	// ID is the Mcp-Session-Id (taskstate.NewID).
	ID string
	// Owner is the principal's tag.
	Owner string
	// Version is the negotiated protocol revision.
	Version string
	// Capabilities is the client's initialize capabilities, as sent.
	Capabilities json.RawMessage
	// ClientInfo is the client's initialize clientInfo, as sent.
	ClientInfo json.RawMessage
	// LogLevel is the level logging/setLevel asked for ("" before any).
	LogLevel string
}

// Session hash fields.
const (
	sessVersion = "version"
	sessCaps    = "caps"
	sessClient  = "client"
	sessLevel   = "logLevel"
	sessCreated = "createdAt"
)

// CreateSession writes a new session that expires after idle without use.
func (s *Store) CreateSession(ctx context.Context, sess Session, idle time.Duration) error {
	key := s.keys.Session(sess.Owner, sess.ID)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, sessVersion, sess.Version, sessCaps, string(sess.Capabilities),
			sessClient, string(sess.ClientInfo), sessCreated, s.nowMs())
		p.PExpire(ctx, key, idle)
		return nil
	})
	return err
}

// Session reads the owner's session id and renews its idle expiry;
// ErrNoSession when there is none.
func (s *Store) Session(ctx context.Context, owner, id string, idle time.Duration) (*Session, error) {
	if !taskstate.ValidID(id) {
		return nil, ErrNoSession // junk never reaches Redis
	}
	key := s.keys.Session(owner, id)
	var all *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		all = p.HGetAll(ctx, key)
		p.PExpire(ctx, key, idle)
		p.PExpire(ctx, s.keys.SessionSubscriptions(owner, id), idle)
		p.PExpire(ctx, s.keys.SessionTasks(owner, id), idle)
		p.PExpire(ctx, s.keys.SessionSentStates(owner, id), idle)
		return nil
	})
	if err != nil {
		return nil, err
	}
	f := all.Val()
	if f[sessVersion] == "" { // gone (a field written after a DELETE is no session)
		return nil, ErrNoSession
	}
	return &Session{ID: id, Owner: owner, Version: f[sessVersion], Capabilities: json.RawMessage(f[sessCaps]),
		ClientInfo: json.RawMessage(f[sessClient]), LogLevel: f[sessLevel]}, nil
}

// SetSessionLogLevel records the session's logging/setLevel.
func (s *Store) SetSessionLogLevel(ctx context.Context, owner, id, level string, idle time.Duration) error {
	key := s.keys.Session(owner, id)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, sessLevel, level)
		p.PExpire(ctx, key, idle)
		return nil
	})
	return err
}

// DeleteSession ends the owner's session id; ErrNoSession when there was none.
func (s *Store) DeleteSession(ctx context.Context, owner, id string) error {
	if !taskstate.ValidID(id) {
		return ErrNoSession
	}
	n, err := s.rdb.Del(ctx, s.keys.Session(owner, id), s.keys.SessionSubscriptions(owner, id)).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNoSession
	}
	// What the session's streams kept goes with it (the stream logs expire
	// on their own: without the session nothing can resume them).
	return s.rdb.Del(ctx, s.keys.SessionGetStream(owner, id), s.keys.SessionTasks(owner, id),
		s.keys.SessionSentStates(owner, id), s.keys.SessionAsked(owner, id)).Err()
}

// MaxSessionSubscriptions bounds the resources one session may subscribe
// to (docs/security.md), as frontend.MaxListenResources bounds a listen.
const MaxSessionSubscriptions = 100

// ErrSubscriptionsLimit: the session holds MaxSessionSubscriptions already.
var ErrSubscriptionsLimit = errors.New("legacy: too many resource subscriptions in this session")

// Subscribe adds uri to the session's resource subscriptions (true) or
// removes it (false).
func (s *Store) Subscribe(ctx context.Context, owner, id, uri string, on bool, idle time.Duration) error {
	key := s.keys.SessionSubscriptions(owner, id)
	if !on {
		return s.rdb.SRem(ctx, key, uri).Err()
	}
	n, err := s.rdb.SCard(ctx, key).Result()
	if err != nil {
		return err
	}
	if n >= MaxSessionSubscriptions {
		ok, err := s.rdb.SIsMember(ctx, key, uri).Result()
		if err != nil {
			return err
		}
		if !ok {
			return ErrSubscriptionsLimit
		}
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, key, uri)
		p.PExpire(ctx, key, idle)
		return nil
	})
	return err
}

// Subscribed reports whether the session subscribed to uri.
func (s *Store) Subscribed(ctx context.Context, owner, id, uri string) (bool, error) {
	return s.rdb.SIsMember(ctx, s.keys.SessionSubscriptions(owner, id), uri).Result()
}
