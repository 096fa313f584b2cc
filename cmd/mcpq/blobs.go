package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/worker"
)

// blobFlags are the object store settings: where result blocks and call
// arguments too large for a task record go (docs/tools.md, "Large results"
// and "Large arguments"; the front end's --inline-max-argument-bytes is
// with its other flags). Front ends and workers need the same --blob-url.
type blobFlags struct {
	url       string
	inlineMax int
	urlTTL    time.Duration
}

// register adds --blob-url, and for workers the inline limit and the
// signed URL lifetime.
func (b *blobFlags) register(fs *flag.FlagSet, forWorker bool) {
	fs.StringVar(&b.url, "blob-url", env("MCPQ_BLOB_URL", ""),
		"object store for large results and arguments: file:///path or s3://bucket[/prefix]?endpoint=host:port&region=r&insecure=true&expire_days=n; "+
			"credentials from MCPQ_BLOB_ACCESS_KEY/MCPQ_BLOB_SECRET_KEY or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY "+
			"(env MCPQ_BLOB_URL; default none: results and arguments stay in Redis; mcpq dev: a temporary folder)")
	if forWorker {
		fs.IntVar(&b.inlineMax, "inline-max-bytes", envInt("MCPQ_INLINE_MAX_BYTES", worker.DefaultInlineMaxBytes),
			"largest result content block kept in the task record; larger ones go to --blob-url (env MCPQ_INLINE_MAX_BYTES)")
		fs.DurationVar(&b.urlTTL, "blob-url-ttl", envDuration("MCPQ_BLOB_URL_TTL", 15*time.Minute),
			"lifetime of the signed URL put in a stored result's resource_link, for S3 stores (env MCPQ_BLOB_URL_TTL)")
	}
}

// open returns the store --blob-url names, or nil when it names none.
func (b *blobFlags) open(ctx context.Context) (objstore.Store, error) {
	if b.url == "" {
		return nil, nil
	}
	creds := objstore.Credentials{
		AccessKey:    env("MCPQ_BLOB_ACCESS_KEY", os.Getenv("AWS_ACCESS_KEY_ID")),
		SecretKey:    env("MCPQ_BLOB_SECRET_KEY", os.Getenv("AWS_SECRET_ACCESS_KEY")),
		SessionToken: os.Getenv("AWS_SESSION_TOKEN"),
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := objstore.Open(ctx, b.url, creds)
	if err != nil {
		return nil, fmt.Errorf("--blob-url: %w", err)
	}
	return s, nil
}

// workerConfig is the worker's BlobConfig for store s.
func (b *blobFlags) workerConfig(s objstore.Store) worker.BlobConfig {
	return worker.BlobConfig{Store: s, InlineMaxBytes: b.inlineMax, SignedURLTTL: b.urlTTL}
}
