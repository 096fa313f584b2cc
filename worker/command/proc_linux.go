//go:build linux

package command

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// supported says whether command tools run on this system.
func supported() error { return nil }

// sysProcAttr starts the program as the leader of a process group of its
// own (so it and its children are signalled together) that gets SIGKILL
// when the worker dies, so a worker killed with SIGKILL leaves no program
// running (its task is taken over and run again elsewhere).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to every process of the group led by pid.
func signalGroup(pid int, sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }

// awaitExit starts waiting for cmd's process: exited is closed once it
// ended, and reap then collects its status (cmd.Wait). Until reap, the
// ended leader stays a zombie (waitid with WNOWAIT), so its pid, which is
// the group's id, cannot be reused: a signal to the group after the
// leader's exit reaches only the program's processes.
func awaitExit(cmd *exec.Cmd) (exited <-chan struct{}, reap func() error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	return done, cmd.Wait
}
