//go:build linux

package command

import "syscall"

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
