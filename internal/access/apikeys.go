package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeyInfo describes a managed API key; the key itself is never stored.
type KeyInfo struct {
	// ID is the key's public id (also its prefix), for listing and revoking.
	ID string `json:"id"`
	// Principal is who the key authenticates.
	Principal string `json:"principal"`
	// CreatedAt is when the key was made.
	CreatedAt time.Time `json:"createdAt"`
}

// ErrNoSuchKey: no managed key has that id.
var ErrNoSuchKey = errors.New("access: no such API key")

// HashKey is the stored form of an API key.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// CreateKey makes a managed API key for principal and returns it; it is
// shown this once, only its hash is kept.
func (s *Store) CreateKey(ctx context.Context, principal string) (string, KeyInfo, error) {
	if principal == "" || strings.ContainsAny(principal, " \t\r\n:,") {
		return "", KeyInfo{}, errors.New("access: a principal is a non-empty name without spaces, ':' or ','")
	}
	var idb [6]byte
	var secret [32]byte
	_, _ = rand.Read(idb[:])
	_, _ = rand.Read(secret[:])
	info := KeyInfo{ID: hex.EncodeToString(idb[:]), Principal: principal, CreatedAt: s.now().UTC()}
	key := "mcpq_" + info.ID + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	b, _ := json.Marshal(info)
	h := HashKey(key)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.keys.apiKeys(), h, b)
		p.HSet(ctx, s.keys.apiKeyIDs(), info.ID, h)
		return nil
	})
	if err != nil {
		return "", KeyInfo{}, err
	}
	return key, info, nil
}

// LookupKey returns the principal of a managed key, or ok false.
func (s *Store) LookupKey(ctx context.Context, key string) (principal string, ok bool, err error) {
	v, err := s.rdb.HGet(ctx, s.keys.apiKeys(), HashKey(key)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var info KeyInfo
	if json.Unmarshal([]byte(v), &info) != nil || info.Principal == "" {
		return "", false, nil
	}
	return info.Principal, true, nil
}

// ListKeys lists the managed keys, oldest first.
func (s *Store) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.apiKeys()).Result()
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, 0, len(m))
	for _, v := range m {
		var info KeyInfo
		if json.Unmarshal([]byte(v), &info) == nil {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// RevokeKey deletes a managed key by id. Every front end looks keys up in
// Redis on each request, so the revocation holds everywhere at once.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	h, err := s.rdb.HGet(ctx, s.keys.apiKeyIDs(), id).Result()
	if errors.Is(err, redis.Nil) {
		return ErrNoSuchKey
	}
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, s.keys.apiKeys(), h)
		p.HDel(ctx, s.keys.apiKeyIDs(), id)
		return nil
	})
	return err
}
