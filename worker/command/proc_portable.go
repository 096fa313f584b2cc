//go:build !linux

package command

import "os/exec"

// awaitExit starts waiting for cmd's process: exited is closed once it
// ended (and was reaped: without Linux's waitid WNOWAIT, a signal to the
// group after that could in principle reach a group that reused the id),
// and reap returns its status.
func awaitExit(cmd *exec.Cmd) (exited <-chan struct{}, reap func() error) {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = cmd.Wait()
	}()
	return done, func() error { <-done; return err }
}
