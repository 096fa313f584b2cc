//go:build !unix

package command

import (
	"errors"
	"syscall"
)

// supported says whether command tools run on this system: they need
// process groups.
func supported() error {
	return errors.New("command tools need Linux or another Unix (process groups)")
}

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) {}
