package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// TokenStore keeps OAuth tokens by MCP server URL across runs.
type TokenStore interface {
	// Load returns the server's token (nil, nil when there is none).
	Load(server string) (*Token, error)
	// Save replaces the server's token; nil removes it.
	Save(server string, t *Token) error
}

// FileTokenStore is a TokenStore in one JSON file readable by its owner
// only (mode 0600, in a folder of mode 0700), replaced atomically on every
// change (written beside, fsynced, renamed) under an advisory lock, so
// processes sharing it never see half a file nor lose each other's tokens.
type FileTokenStore struct {
	// Path is the file; its folder is created on first write.
	Path string
}

var _ TokenStore = (*FileTokenStore)(nil)

// Load implements TokenStore.
func (s *FileTokenStore) Load(server string) (*Token, error) {
	all, err := s.read()
	if err != nil {
		return nil, err
	}
	return all[server], nil
}

// Save implements TokenStore.
func (s *FileTokenStore) Save(server string, t *Token) error {
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(s.Path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	all, err := s.read()
	if err != nil {
		return err
	}
	if t == nil {
		delete(all, server)
	} else {
		all[server] = t
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, s.Path, b)
}

// read decodes the file; a missing one is empty. A file others may read
// is refused: it holds credentials.
func (s *FileTokenStore) read() (map[string]*Token, error) {
	all := map[string]*Token{}
	fi, err := os.Stat(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return all, nil
	}
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token file %s has mode %v: others may read it (chmod 600 it)", s.Path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("token file %s: %w", s.Path, err)
	}
	return all, nil
}
