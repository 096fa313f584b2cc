package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/lifecycle"
)

// S3Config configures an S3 store.
type S3Config struct {
	// Endpoint is host[:port] of the S3 API (default s3.amazonaws.com).
	Endpoint string
	// Region is the bucket's region (default us-east-1).
	Region string
	// Insecure speaks plain http (test servers on loopback).
	Insecure bool
	// Bucket holds the objects (required; created when missing).
	Bucket string
	// Prefix, when set, starts every object name ("prefix/key").
	Prefix string
	// Credentials sign requests; empty means anonymous.
	Credentials Credentials
	// ExpireDays, when above 0, sets a bucket lifecycle rule that has the
	// S3 server delete objects under Prefix that many days after they were
	// written: the server's own backstop beside the worker's sweep.
	ExpireDays int
}

// S3 is a Store in an S3-compatible bucket, through minio-go.
type S3 struct {
	c      *minio.Client
	bucket string
	prefix string
}

// NewS3 connects to the bucket, creating it when it does not exist.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("objstore: S3 bucket name is empty")
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = "s3.amazonaws.com"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Prefix != "" && !ValidKey(cfg.Prefix) {
		return nil, fmt.Errorf("objstore: invalid S3 prefix %q", cfg.Prefix)
	}
	var creds *credentials.Credentials
	if cfg.Credentials.AccessKey != "" || cfg.Credentials.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.Credentials.AccessKey, cfg.Credentials.SecretKey, cfg.Credentials.SessionToken)
	} else {
		creds = credentials.New(&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}})
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: creds, Secure: !cfg.Insecure, Region: cfg.Region,
		BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("objstore: S3 client: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("objstore: S3 bucket %s at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !ok {
		if err := c.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			// Another process may have created it meanwhile.
			if ok, _ := c.BucketExists(ctx, cfg.Bucket); !ok {
				return nil, fmt.Errorf("objstore: create S3 bucket %s: %w", cfg.Bucket, err)
			}
		}
	}
	s := &S3{c: c, bucket: cfg.Bucket}
	if cfg.Prefix != "" {
		s.prefix = cfg.Prefix + "/"
	}
	if cfg.ExpireDays > 0 {
		if err := s.setExpiry(ctx, cfg.ExpireDays); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// setExpiry puts (or replaces) mcpq's lifecycle rule for the prefix,
// keeping the bucket's other rules.
func (s *S3) setExpiry(ctx context.Context, days int) error {
	id := "mcpq-expire"
	if s.prefix != "" {
		id += "-" + strings.TrimSuffix(s.prefix, "/")
	}
	cfg, err := s.c.GetBucketLifecycle(ctx, s.bucket)
	if err != nil || cfg == nil {
		cfg = lifecycle.NewConfiguration() // none yet (or unreadable: ours is written anyway)
	}
	rules := cfg.Rules[:0]
	for _, r := range cfg.Rules {
		if r.ID != id {
			rules = append(rules, r)
		}
	}
	cfg.Rules = append(rules, lifecycle.Rule{ID: id, Status: "Enabled",
		RuleFilter: lifecycle.Filter{Prefix: s.prefix},
		Expiration: lifecycle.Expiration{Days: lifecycle.ExpirationDays(days)}})
	if err := s.c.SetBucketLifecycle(ctx, s.bucket, cfg); err != nil {
		return fmt.Errorf("objstore: set the S3 bucket's expiry rule (expire_days=%d): %w", days, err)
	}
	return nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key string, data []byte, contentType string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	_, err := s.c.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: contentType})
	if err != nil {
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	return nil
}

// Get implements Store.
func (s *S3) Get(ctx context.Context, key string) (Object, error) {
	if !ValidKey(key) {
		return Object{}, ErrNotFound
	}
	o, err := s.c.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return Object{}, s.readErr(key, err)
	}
	defer o.Close()
	st, err := o.Stat()
	if err != nil {
		return Object{}, s.readErr(key, err)
	}
	data, err := io.ReadAll(o)
	if err != nil {
		return Object{}, s.readErr(key, err)
	}
	return Object{Data: data, ContentType: st.ContentType}, nil
}

func (s *S3) readErr(key string, err error) error {
	if r := minio.ToErrorResponse(err); r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey" {
		return ErrNotFound
	}
	return fmt.Errorf("objstore: get %s: %w", key, err)
}

// Delete implements Store. S3 answers a delete of a missing key with
// success, so removing nothing is no error here either.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("objstore: delete %s: %w", key, err)
	}
	return nil
}

// DeletePrefix implements Store.
func (s *S3) DeletePrefix(ctx context.Context, prefix string) error {
	if err := checkKey(prefix); err != nil {
		return err
	}
	return s.remove(ctx, s.prefix+prefix+"/", time.Time{}, nil)
}

// remove deletes the objects under prefix written before cutoff (all of
// them when cutoff is zero), counting them in n when it is not nil.
func (s *S3) remove(ctx context.Context, prefix string, cutoff time.Time, n *int) error {
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	objs := make(chan minio.ObjectInfo)
	var listErr error
	go func() {
		defer close(objs)
		for o := range s.c.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if o.Err != nil {
				listErr = o.Err
				return
			}
			if cutoff.IsZero() || o.LastModified.Before(cutoff) {
				select {
				case objs <- o:
				case <-lctx.Done():
					return
				}
			}
		}
	}()
	var firstErr error
	for r := range s.c.RemoveObjectsWithResult(ctx, s.bucket, objs, minio.RemoveObjectsOptions{}) {
		switch {
		case r.Err != nil && firstErr == nil:
			firstErr = r.Err
		case r.Err == nil && n != nil:
			*n++
		}
	}
	if listErr == nil {
		listErr = firstErr
	}
	if listErr != nil {
		return fmt.Errorf("objstore: delete under %s: %w", prefix, listErr)
	}
	return nil
}

// PresignGet implements Store.
func (s *S3) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	u, err := s.c.PresignedGetObject(ctx, s.bucket, s.prefix+key, ttl, nil)
	if err != nil {
		return "", fmt.Errorf("objstore: presign %s: %w", key, err)
	}
	return u.String(), nil
}

// Sweep implements Store.
func (s *S3) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	n := 0
	err := s.remove(ctx, s.prefix, cutoff, &n)
	return n, err
}
