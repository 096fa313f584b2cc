package objstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	if err := checkKey(key); err != nil {
		return err
	}
	if strings.ContainsAny(contentType, "\r\n") {
		return fmt.Errorf("objstore: content type %q has a line break", contentType)
	}
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("objstore: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return fmt.Errorf("objstore: %w", err)
	}
	defer os.Remove(f.Name()) // no-op after the rename
	w := bufio.NewWriter(f)
	w.WriteString(contentType)
	w.WriteByte('\n')
	n, err := io.Copy(w, io.LimitReader(ctxReader{ctx, r}, size))
	if err == nil && n < size {
		err = fmt.Errorf("%d of %d bytes read", n, size)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("objstore: write %s: %w", key, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return fmt.Errorf("objstore: %w", err)
	}
	return nil
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
