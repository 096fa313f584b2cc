//go:build unix && !linux

package command

import "syscall"

// supported says whether command tools run on this system.
func supported() error { return nil }

// sysProcAttr starts the program as the leader of a process group of its
// own, so it and its children are signalled together. (Only Linux also
// kills the program when the worker dies.)
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to every process of the group led by pid.
func signalGroup(pid int, sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }
