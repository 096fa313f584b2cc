//go:build !linux

package command

import (
	"log/slog"
	"syscall"
)

// Without Linux's /proc and cgroups a run's tree is its process group,
// killed when the run ends; the runs of a dead worker are not swept
// (docs/tools.md, "Process trees").

type keeper struct{}

func trees(*slog.Logger) *keeper { return &keeper{} }

type tree struct{ pg int }

func (k *keeper) prepare(string, int64) *tree { return &tree{} }

func (t *tree) attr() *syscall.SysProcAttr { return sysProcAttr() }

func (t *tree) dropCgroupToRetry() bool { return false }

func (t *tree) cgroupRefused(error) {}

func (t *tree) started(pid int) { t.pg = pid }

func (t *tree) pgid() int { return t.pg }

func (t *tree) kill() {
	if t.pg > 0 {
		signalGroup(t.pg, syscall.SIGKILL)
	}
}

func (t *tree) release() {}
