package main

import "syscall"

// sysProcAttr puts a child in its own process group and has the kernel
// kill it when the driver dies, so no child outlives a run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
