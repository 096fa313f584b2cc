// Package objstore keeps payloads too large for a task record (tool results
// and call arguments over their inline limits) in an object store: a local
// folder (the default of mcpq dev) or an S3-compatible bucket. Keys are
// slash-separated names of letters, digits, '-', '_' and '.'; a task's
// objects share the prefix "<task id>/" so they are removed together when
// the task ends its life: the worker names result blocks
// "<task id>/<attempt>.<n>" (worker/blobs.go), the front end stores
// arguments at ArgumentsKey.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound is returned by Get for a key that holds no object.
var ErrNotFound = errors.New("objstore: object not found")

// ErrNoPresign is returned by PresignGet of a store that cannot sign URLs
// (the local folder).
var ErrNoPresign = errors.New("objstore: this store cannot presign URLs")

// Object is a stored payload and its media type.
type Object struct {
	// Data is the payload.
	Data []byte
	// ContentType is the media type given to Put.
	ContentType string
}

// Store is an object store.
type Store interface {
	// Put stores data under key, replacing what was there.
	Put(ctx context.Context, key string, data []byte, contentType string) error
	// Get returns the object under key, or ErrNotFound.
	Get(ctx context.Context, key string) (Object, error)
	// Delete removes the object under key; removing nothing is not an error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object whose key starts with prefix + "/"
	// (a task's objects); removing nothing is not an error.
	DeletePrefix(ctx context.Context, prefix string) error
	// PresignGet returns a URL that reads key without credentials for ttl,
	// or ErrNoPresign.
	PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error)
	// Sweep removes every object last written before cutoff and returns
	// how many it removed: the safety net for objects whose task record
	// expired with no reaper to remove them.
	Sweep(ctx context.Context, cutoff time.Time) (int, error)
}

// ArgumentsKey is the key of a task's arguments the front end stored
// because they were over its inline limit (frontend/blobs.go); the task
// record holds this key in their place and the worker reads them from it
// (worker/blobs.go). It cannot collide with a result block's
// "<attempt>.<n>" and is not readable with resources/read.
func ArgumentsKey(taskID string) string { return taskID + "/args" }

// Credentials are an S3 access key pair; empty means anonymous requests.
type Credentials struct {
	AccessKey string
	SecretKey string
	// SessionToken is the optional STS session token.
	SessionToken string
}

// Open returns the store a URL names:
//
//	file:///abs/path                     a local folder (created if missing)
//	s3://bucket[/prefix]?endpoint=host:port&region=r&insecure=true&expire_days=2
//
// For s3, endpoint defaults to s3.amazonaws.com, region to us-east-1,
// insecure (plain http) to false, and the bucket is created when missing;
// expire_days sets a lifecycle rule on the prefix (S3Config.ExpireDays).
func Open(ctx context.Context, raw string, creds Credentials) (Store, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("objstore: blob URL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("objstore: blob URL %q: a file URL names a local path (file:///path), not host %q", raw, u.Host)
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return nil, fmt.Errorf("objstore: blob URL %q: the file path must be absolute", raw)
		}
		return NewDir(u.Path)
	case "s3":
		cfg := S3Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"), Credentials: creds}
		q := u.Query()
		for k := range q {
			switch k {
			case "endpoint", "region", "insecure", "expire_days":
			default:
				return nil, fmt.Errorf("objstore: blob URL %q: unknown parameter %q (endpoint, region, insecure, expire_days)", raw, k)
			}
		}
		cfg.Endpoint, cfg.Region = q.Get("endpoint"), q.Get("region")
		if v := q.Get("insecure"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("objstore: blob URL %q: insecure=%q is not a boolean", raw, v)
			}
			cfg.Insecure = b
		}
		if v := q.Get("expire_days"); v != "" {
			d, err := strconv.Atoi(v)
			if err != nil || d < 1 {
				return nil, fmt.Errorf("objstore: blob URL %q: expire_days=%q is not a whole number of days above 0", raw, v)
			}
			cfg.ExpireDays = d
		}
		return NewS3(ctx, cfg)
	default:
		return nil, fmt.Errorf("objstore: blob URL %q: scheme must be file or s3", raw)
	}
}

// ValidKey reports whether key is a well-formed object key: 1 to 512 bytes
// of slash-separated segments, each of letters, digits, '-', '_' and '.',
// none empty or starting with '.' (the local folder keeps its temporary
// files under such names).
func ValidKey(key string) bool {
	if key == "" || len(key) > 512 {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg[0] == '.' {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
				return false
			}
		}
	}
	return true
}

func checkKey(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("objstore: invalid key %q", key)
	}
	return nil
}
