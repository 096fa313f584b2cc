package objstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Dir is a Store in a local folder: one file per object, its first line
// the media type and the rest the payload, written to a temporary file
// and renamed into place so a reader never sees half an object.
type Dir struct {
	root string
}

// NewDir returns the store in folder root, creating it if missing.
func NewDir(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("objstore: folder path is empty")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	return &Dir{root: root}, nil
}

func (d *Dir) path(key string) string { return filepath.Join(d.root, filepath.FromSlash(key)) }

// Put implements Store.
func (d *Dir) Put(_ context.Context, key string, data []byte, contentType string) error {
	return d.write(key, contentType, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// write stores an object the way Put and PutStream do: contentType on
// the first line of a temporary file beside the object, then what body
// writes, and the file renamed into place once complete, so a reader never
// sees half an object.
func (d *Dir) write(key, contentType string, body func(io.Writer) error) error {
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
	err = body(w)
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

// Get implements Store.
func (d *Dir) Get(ctx context.Context, key string) (Object, error) {
	if !ValidKey(key) {
		return Object{}, ErrNotFound
	}
	b, err := os.ReadFile(d.path(key))
	switch {
	case errors.Is(err, fs.ErrNotExist), err != nil && isDirErr(d.path(key)):
		return Object{}, ErrNotFound
	case err != nil:
		return Object{}, fmt.Errorf("objstore: %w", err)
	}
	ct, data, ok := bytes.Cut(b, []byte{'\n'})
	if !ok {
		return Object{}, fmt.Errorf("objstore: object %s is damaged (no media type line)", key)
	}
	return Object{Data: data, ContentType: string(ct)}, nil
}

func isDirErr(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Delete implements Store.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	p := d.path(key)
	if isDirErr(p) {
		return nil // a prefix of other objects, not an object
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore: %w", err)
	}
	return nil
}

// DeletePrefix implements Store.
func (d *Dir) DeletePrefix(ctx context.Context, prefix string) error {
	if err := checkKey(prefix); err != nil {
		return err
	}
	if err := os.RemoveAll(d.path(prefix)); err != nil {
		return fmt.Errorf("objstore: %w", err)
	}
	return nil
}

// PresignGet implements Store: a folder cannot sign URLs.
func (d *Dir) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	return "", ErrNoPresign
}

// Sweep implements Store: it removes files older than cutoff, then the
// folders left empty.
func (d *Dir) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	n := 0
	var dirs []string
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (DeletePrefix)
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.IsDir() {
			if p != d.root {
				dirs = append(dirs, p)
			}
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if info.ModTime().Before(cutoff) {
			if err := os.Remove(p); err == nil {
				n++
			}
		}
		return nil
	})
	// Deepest first: a parent is empty only once its children are gone.
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // fails, as it should, unless empty
	}
	if err != nil {
		return n, fmt.Errorf("objstore: sweep: %w", err)
	}
	return n, nil
}
