//go:build !unix

package client

import "sync"

// fileLocks serializes journal writes within this process where advisory
// file locks are not available (processes sharing a folder are then not
// coordinated; the journal's writes stay atomic).
var fileLocks sync.Mutex

func lockFile(string) (func(), error) {
	fileLocks.Lock()
	return fileLocks.Unlock, nil
}
