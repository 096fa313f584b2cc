//go:build !linux

package main

import "syscall"

// sysProcAttr puts a child in its own process group (no parent-death
// signal outside Linux: the driver's cleanup stops its children).
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
