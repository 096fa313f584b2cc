package objstore

import (
	"context"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
)

// Streamer is a Store that stores a payload read from r rather than held
// in memory: a command tool's output file (a video) goes from disk to the
// store in parts. Both stores of this package are Streamers.
type Streamer interface {
	// PutStream stores size bytes read from r under key, replacing what
	// was there; fewer bytes than size is an error.
	PutStream(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
}

// PutStream implements Streamer: the S3 client uploads in parts (multipart
// above its part size), so memory stays bounded whatever the size.
func (s *S3) PutStream(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	_, err := s.c.PutObject(ctx, s.bucket, s.prefix+key, r, size, minio.PutObjectOptions{ContentType: contentType})
	if err != nil {
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	return nil
}

// PutStream implements Streamer: the payload is copied to a temporary
// file beside the object, which is renamed into place once complete.
func (d *Dir) PutStream(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	return d.write(key, contentType, func(w io.Writer) error {
		n, err := io.Copy(w, io.LimitReader(ctxReader{ctx, r}, size))
		if err == nil && n < size {
			err = fmt.Errorf("%d of %d bytes read", n, size)
		}
		return err
	})
}

// ctxReader stops a copy once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
