package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Entry is what a Journal keeps of one task.
type Entry struct {
	// Server is the MCP endpoint URL the task lives on.
	Server string `json:"server"`
	// TaskID is the task id.
	TaskID string `json:"taskId"`
	// Tool is the tool called.
	Tool string `json:"tool"`
	// ArgumentsDigest is the hex SHA-256 of the arguments' JSON.
	ArgumentsDigest string `json:"argumentsDigest"`
	// CreatedAt is the task's createdAt.
	CreatedAt time.Time `json:"createdAt"`
	// TTLMs is the task's ttlMs (nil: unlimited).
	TTLMs *int64 `json:"ttlMs"`
	// Answers are the input keys answered, with the answer sent.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
}

// Expired reports whether the task's TTL has run out at now.
func (e *Entry) Expired(now time.Time) bool {
	return e.TTLMs != nil && now.After(e.CreatedAt.Add(time.Duration(*e.TTLMs)*time.Millisecond))
}

// Journal is durable storage of a client's task handles. Every method's
// change is durable when it returns; several processes may share one.
type Journal interface {
	// Put records a task (replacing any entry of the same server and id).
	Put(ctx context.Context, e Entry) error
	// Get reads one entry; ok is false when there is none.
	Get(ctx context.Context, server, taskID string) (e Entry, ok bool, err error)
	// Answer records the answer to one input key and returns the answer
	// recorded for it: an earlier one wins over response.
	Answer(ctx context.Context, server, taskID, key string, response json.RawMessage) (json.RawMessage, error)
	// Delete drops an entry (no error when there is none).
	Delete(ctx context.Context, server, taskID string) error
	// List returns every entry.
	List(ctx context.Context) ([]Entry, error)
}

// FileJournal is a Journal in one folder: a JSON file per task, written to a
// temporary file, fsynced and renamed into place (then the folder fsynced),
// so a reader sees a whole entry or none. Read-modify-write steps hold an
// advisory lock on the folder's .lock file, so processes sharing the folder
// never lose each other's answers.
type FileJournal struct {
	// Dir is the folder; it is created on first write.
	Dir string
}

var _ Journal = (*FileJournal)(nil)

// path is the file of a task: a digest of server and id, so neither needs
// escaping (an id may start with '-', or hold any character).
func (j *FileJournal) path(server, taskID string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + taskID))
	return filepath.Join(j.Dir, hex.EncodeToString(sum[:20])+".json")
}

// Put implements Journal.
func (j *FileJournal) Put(_ context.Context, e Entry) error {
	return j.locked(func() error { return j.write(e) })
}

// Get implements Journal.
func (j *FileJournal) Get(_ context.Context, server, taskID string) (Entry, bool, error) {
	return j.read(j.path(server, taskID))
}

// Answer implements Journal.
func (j *FileJournal) Answer(_ context.Context, server, taskID, key string, response json.RawMessage) (json.RawMessage, error) {
	out := response
	err := j.locked(func() error {
		e, ok, err := j.read(j.path(server, taskID))
		if err != nil {
			return err
		}
		if !ok {
			e = Entry{Server: server, TaskID: taskID, CreatedAt: time.Now()}
		}
		if prev, ok := e.Answers[key]; ok {
			out = prev
			return nil
		}
		if e.Answers == nil {
			e.Answers = map[string]json.RawMessage{}
		}
		e.Answers[key] = response
		return j.write(e)
	})
	return out, err
}

// Delete implements Journal.
func (j *FileJournal) Delete(_ context.Context, server, taskID string) error {
	return j.locked(func() error {
		if err := os.Remove(j.path(server, taskID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return syncDir(j.Dir)
	})
}

// List implements Journal. Files that do not decode are skipped.
func (j *FileJournal) List(_ context.Context) ([]Entry, error) {
	names, err := filepath.Glob(filepath.Join(j.Dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, n := range names {
		if e, ok, err := j.read(n); err == nil && ok {
			out = append(out, e)
		}
	}
	return out, nil
}

func (j *FileJournal) read(path string) (Entry, bool, error) {
	var e Entry
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return e, false, nil
	}
	if err != nil {
		return e, false, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, false, fmt.Errorf("journal file %s: %w", path, err)
	}
	return e, true, nil
}

// write replaces the entry's file atomically and durably.
func (j *FileJournal) write(e Entry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(j.Dir, j.path(e.Server, e.TaskID), b)
}

// writeFileAtomic replaces path (in dir) with b atomically and durably: a
// temporary file (mode 0600) written, fsynced and renamed into place, then
// the folder fsynced, so a reader sees the whole old or new content.
func writeFileAtomic(dir, path string, b []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// locked runs fn holding the folder's lock (creating the folder).
func (j *FileJournal) locked(fn func() error) error {
	if err := os.MkdirAll(j.Dir, 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(filepath.Join(j.Dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// syncDir fsyncs a folder so a rename or removal in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !strings.Contains(err.Error(), "invalid argument") {
		return err
	}
	return nil
}
