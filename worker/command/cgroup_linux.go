//go:build linux

package command

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRunsDir is the folder, inside the worker's own cgroup v2, that
// holds one cgroup per run.
const cgroupRunsDir = "mcpq-runs"

// cgroupRoot is the folder the runs' cgroups go under: cgroupRunsDir in
// this process's cgroup v2, or "" when the host has no cgroup v2 this
// process can see (newKeeper then finds out whether it may write there).
func cgroupRoot() string {
	mount, root := cgroup2Mount()
	if mount == "" {
		return ""
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		rel, ok = strings.CutPrefix(rel, root)
		if !ok || strings.Contains(rel, "(deleted)") {
			return ""
		}
		return filepath.Join(mount, rel, cgroupRunsDir)
	}
	return ""
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted and which of
// its folders the mount shows as its root ("" when none is mounted).
func cgroup2Mount() (mount, root string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 {
			return f[4], f[3]
		}
	}
	return "", ""
}

// cgroupProcs lists the processes of the cgroup dir.
func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, s := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(s); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// killCgroup SIGKILLs every process of the cgroup dir, including those that
// left the run's process group (setsid): with cgroup.kill where the kernel
// has it (5.14), else process by process until none is left.
func killCgroup(dir string) {
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	for range 100 {
		pids := cgroupProcs(dir)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// removeCgroup kills what the cgroup dir holds and removes it, waiting (up
// to a second) for its killed processes to leave it. A folder already gone
// is no error.
func removeCgroup(dir string) error {
	killCgroup(dir)
	var err error
	for range 200 {
		err = syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return err
}
