//go:build linux

package command

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A run's process tree is everything its program starts. The run's own
// end kills it (its process group, and its cgroup where there is one);
// what this file adds is that the tree of a run whose worker died is
// killed too, by the next worker process on the same host, before that
// one starts any program, so a takeover never runs beside the old
// attempt's leftovers (a shell's background job, a Python pool's
// workers). docs/tools.md, "Process trees", says what holds where.

// sweepEvery is how often a worker process sweeps the runs of dead
// workers on its host while it lives.
const sweepEvery = 2 * time.Second

// procID names a process across pid reuse: its pid and its start time
// (clock ticks after boot, /proc/<pid>/stat field 22).
type procID struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// runRecord is what a run leaves in the records folder while its program
// runs: enough for another worker process to decide that the run's worker
// is dead and to kill the run's tree.
type runRecord struct {
	Host    string `json:"host"`
	Boot    string `json:"boot"`   // /proc/sys/kernel/random/boot_id
	Worker  procID `json:"worker"` // the worker process that started the run
	Task    string `json:"task"`
	Attempt int64  `json:"attempt"`
	Pgid    int    `json:"pgid"`             // the program's process group (its pid)
	Cgroup  string `json:"cgroup,omitempty"` // the run's cgroup v2 folder ("": none)
}

// keeper keeps the records of the runs this process starts and sweeps
// those of dead workers. One per process (trees), shared by every command
// tool.
type keeper struct {
	dir    string // records folder ("": no records, nothing swept)
	cgroot string // folder the runs' cgroups go under ("": none)
	self   procID
	boot   string
	host   string
	log    *slog.Logger
	noCg   atomic.Bool // set once starting a program in a cgroup failed
}

var (
	treesOnce sync.Once
	treesK    *keeper
)

// trees is the process's keeper, made (and its first sweep and the
// periodic ones started) on first use.
func trees(log *slog.Logger) *keeper {
	treesOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("mcpq-runs-%d", os.Getuid()))
		treesK = newKeeper(dir, cgroupRoot(), log)
		treesK.sweep("", 0)
		go func() {
			for range time.Tick(sweepEvery) {
				treesK.sweep("", 0)
			}
		}()
	})
	return treesK
}

// newKeeper makes a keeper whose records go to dir (created, private) and
// runs' cgroups under cgroot ("": none). A folder it cannot use turns the
// sweep off, with a warning: runs still kill their own trees.
func newKeeper(dir, cgroot string, log *slog.Logger) *keeper {
	k := &keeper{dir: dir, cgroot: cgroot, log: log}
	k.self, _ = procOf(os.Getpid())
	k.boot = bootID()
	k.host, _ = os.Hostname()
	if err := privateDir(dir); err != nil {
		log.Warn("command tools: no run records, so the runs of a dead worker are not swept", "err", err)
		k.dir = ""
	}
	if cgroot != "" {
		if err := os.Mkdir(cgroot, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			log.Info("command tools: no cgroup per run (process groups only)", "err", err)
			k.cgroot = ""
		}
	}
	return k
}

// privateDir makes dir (0700) and checks it is a folder of this user's
// that no one else can write, as the records name processes to kill.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is not a private folder of this user", dir)
	}
	return nil
}

// tree is one run's process tree.
type tree struct {
	k    *keeper
	name string // the record's file name and the cgroup's folder name
	rec  runRecord
	cg   *os.File // the cgroup's folder, open for CLONE_INTO_CGROUP (nil: none)
}

// prepare sweeps the host's leftover runs (of dead workers, and of older
// attempts of this task, which fencing has cut off even when their worker
// lives), then makes the new run's cgroup where the host offers one.
func (k *keeper) prepare(task string, attempt int64) *tree {
	k.sweep(task, attempt)
	var b [6]byte
	_, _ = rand.Read(b[:])
	t := &tree{k: k, name: fmt.Sprintf("%d-%d-%s", k.self.Pid, k.self.Start, hex.EncodeToString(b[:])),
		rec: runRecord{Host: k.host, Boot: k.boot, Worker: k.self, Task: task, Attempt: attempt}}
	if k.cgroot != "" && !k.noCg.Load() {
		dir := filepath.Join(k.cgroot, t.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			k.log.Info("command tools: no cgroup for this run (process group only)", "err", err)
			return t
		}
		f, err := os.Open(dir)
		if err != nil {
			_ = os.Remove(dir)
			return t
		}
		t.cg, t.rec.Cgroup = f, dir
	}
	return t
}

// attr is the program's SysProcAttr: its own process group, SIGKILL when
// the worker dies, and, with a cgroup, started inside it.
func (t *tree) attr() *syscall.SysProcAttr {
	a := sysProcAttr()
	if t.cg != nil {
		a.UseCgroupFD, a.CgroupFD = true, int(t.cg.Fd())
	}
	return a
}

// dropCgroupToRetry is told that starting the program failed: with a
// cgroup it gives this run's up and says to try again without.
func (t *tree) dropCgroupToRetry() bool {
	if t.cg == nil {
		return false
	}
	t.dropCgroup()
	return true
}

// cgroupRefused is told that the program started once out of its cgroup,
// after starting it inside one failed with err: the host refuses them, so
// no later run gets one. (A start that fails either way, a missing
// program, says nothing about cgroups.)
func (t *tree) cgroupRefused(err error) {
	t.k.log.Warn("command tools: cannot start programs in a cgroup; process groups only from now on", "err", err)
	t.k.noCg.Store(true)
}

// started records the run once its program (pid, its group's leader)
// runs. A record not written (the folder went away) only means this run
// is not swept should its worker die.
func (t *tree) started(pid int) {
	t.rec.Pgid = pid
	if t.cg != nil {
		t.cg.Close() // the cgroup is named in the record; the descriptor has served
	}
	if t.k.dir == "" {
		return
	}
	b, _ := json.Marshal(t.rec)
	path := filepath.Join(t.k.dir, t.name+".json")
	if err := writeAtomic(path, b); err != nil {
		t.k.log.Warn("command tools: run not recorded", "err", err)
	}
}

// kill sends SIGKILL to every process of the tree: its group and its cgroup.
func (t *tree) kill() {
	if t.rec.Pgid > 0 {
		signalGroup(t.rec.Pgid, syscall.SIGKILL)
	}
	if t.rec.Cgroup != "" {
		killCgroup(t.rec.Cgroup)
	}
}

// pgid is the program's process group (0 before it started).
func (t *tree) pgid() int { return t.rec.Pgid }

// release ends the run's tree for good once its program was reaped: kills
// what is left in its cgroup, removes the cgroup and the run's record. (Its
// process group got its SIGKILL from kill before the reap, while the
// leader's pid could not be reused.)
func (t *tree) release() {
	t.dropCgroup()
	if t.k.dir != "" {
		_ = os.Remove(filepath.Join(t.k.dir, t.name+".json"))
	}
}

func (t *tree) dropCgroup() {
	if t.rec.Cgroup == "" {
		return
	}
	if t.cg != nil {
		t.cg.Close()
		t.cg = nil
	}
	if err := removeCgroup(t.rec.Cgroup); err != nil {
		t.k.log.Warn("command tools: run's cgroup not removed", "cgroup", t.rec.Cgroup, "err", err)
	}
	t.rec.Cgroup = ""
}

// sweep kills the trees of the host's runs whose worker process is dead
// and, when task is set, those of the task's attempts before attempt; it
// removes their records and cgroups. Every worker process runs it when its
// first command tool is built, every sweepEvery, and before each program
// it starts.
func (k *keeper) sweep(task string, attempt int64) {
	if k.dir == "" {
		return
	}
	ents, err := os.ReadDir(k.dir)
	if err != nil {
		return
	}
	recorded := map[string]bool{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		recorded[name] = true
		path := filepath.Join(k.dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var rec runRecord
		if json.Unmarshal(b, &rec) != nil {
			_ = os.Remove(path) // a torn write cannot happen (writeAtomic); a foreign file is not ours
			continue
		}
		dead := !k.alive(rec.Boot, rec.Worker)
		if !dead && (task == "" || rec.Task != task || rec.Attempt >= attempt) {
			continue
		}
		k.killRecorded(rec, dead)
		_ = os.Remove(path)
	}
	k.sweepCgroups(recorded)
}

// killRecorded kills a recorded run's tree.
func (k *keeper) killRecorded(rec runRecord, workerDead bool) {
	killed := 0
	if rec.Cgroup != "" && filepath.Dir(rec.Cgroup) == k.cgroot {
		killed += len(cgroupProcs(rec.Cgroup))
		_ = removeCgroup(rec.Cgroup)
	}
	if rec.Boot == k.boot && rec.Pgid > 0 {
		killed += killRunGroup(rec)
	}
	if killed > 0 {
		why := "an older attempt of a task this worker runs now"
		if workerDead {
			why = "its worker died"
		}
		k.log.Warn("command tools: killed what was left of a run", "why", why, "task", rec.Task, "attempt", rec.Attempt,
			"worker", rec.Worker.Pid, "pgid", rec.Pgid, "processes", killed)
	}
}

// sweepCgroups removes the cgroups under cgroot whose run has no record
// (its worker died before writing it) and whose worker is dead.
func (k *keeper) sweepCgroups(recorded map[string]bool) {
	if k.cgroot == "" {
		return
	}
	ents, err := os.ReadDir(k.cgroot)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || recorded[e.Name()] {
			continue
		}
		var w procID
		var rnd string
		if n, _ := fmt.Sscanf(strings.ReplaceAll(e.Name(), "-", " "), "%d %d %s", &w.Pid, &w.Start, &rnd); n != 3 {
			continue
		}
		if !k.alive(k.boot, w) {
			_ = removeCgroup(filepath.Join(k.cgroot, e.Name()))
		}
	}
}

// alive says whether the process w of the boot boot still runs here.
func (k *keeper) alive(boot string, w procID) bool {
	if boot != k.boot {
		return false
	}
	p, err := procOf(w.Pid)
	return err == nil && p.Start == w.Start
}

// killRunGroup SIGKILLs the recorded run's process group, if the group is
// still the run's: some live member has the run's task and attempt in its
// environment (a group id reused by an unrelated process has not). It
// returns how many members it found.
func killRunGroup(rec runRecord) int {
	members := groupProcs(rec.Pgid)
	want := [][]byte{[]byte(envTaskID + "=" + rec.Task + "\x00"), []byte(envAttempt + "=" + strconv.FormatInt(rec.Attempt, 10) + "\x00")}
	ours := false
	for _, pid := range members {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && bytes.Contains(env, want[0]) && bytes.Contains(env, want[1]) {
			ours = true
			break
		}
	}
	if !ours {
		return 0
	}
	signalGroup(rec.Pgid, syscall.SIGKILL)
	return len(members)
}

// groupProcs lists the live (not zombie) processes of group pgid.
func groupProcs(pgid int) []int {
	dirs, _ := os.ReadDir("/proc")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st, err := statOf(pid); err == nil && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// stat is what this file reads of /proc/<pid>/stat.
type stat struct {
	state byte
	pgrp  int
	start uint64
}

func statOf(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 {
		return stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var s stat
	s.state = f[0][0]
	s.pgrp, _ = strconv.Atoi(f[2])
	s.start, err = strconv.ParseUint(f[19], 10, 64)
	return s, err
}

// procOf names the live process pid.
func procOf(pid int) (procID, error) {
	s, err := statOf(pid)
	if err != nil {
		return procID{}, err
	}
	if s.state == 'Z' || s.state == 'X' {
		return procID{}, fmt.Errorf("process %d has ended", pid)
	}
	return procID{Pid: pid, Start: s.start}, nil
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
