package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// proc is one child process the driver starts, signals and restarts. Each
// runs in its own process group, so a signal reaches all of it.
type proc struct {
	name string
	bin  string
	args []string
	env  []string
	logs string // folder of its log file

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the current run exited
	paused bool
	starts int
}

// start runs the process (again), appending to its log file.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(p.logs, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "==> chaos: start %d of %s at %s\n", p.starts+1, p.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.done, p.paused = cmd, make(chan struct{}), false
	p.starts++
	done := p.done
	go func() { _ = cmd.Wait(); close(done) }()
	return nil
}

// pid is the current run's process id (0 if never started).
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// alive reports whether the current run has not exited.
func (p *proc) alive() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// signal sends sig to the current run's process group.
func (p *proc) signal(sig syscall.Signal) error {
	pid := p.pid()
	if pid == 0 {
		return fmt.Errorf("%s is not running", p.name)
	}
	p.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	p.mu.Unlock()
	return syscall.Kill(-pid, sig)
}

// isPaused reports whether the process was stopped with SIGSTOP.
func (p *proc) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// wait waits up to d for the current run to exit.
func (p *proc) wait(d time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// stop ends the current run: sig first, SIGKILL after grace. A stopped
// (paused) process is continued so it can act on sig.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	if !p.alive() {
		return
	}
	_ = p.signal(sig)
	_ = p.signal(syscall.SIGCONT)
	if !p.wait(grace) {
		_ = p.signal(syscall.SIGKILL)
		p.wait(10 * time.Second)
	}
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// redisArgs are redis-server's arguments: loopback only, AOF with an fsync
// per write, so a restart loses nothing Redis acknowledged.
func redisArgs(port int, dir string) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}
}

// waitFor polls ok every 50 ms until it returns true or ctx ends.
func waitFor(ctx context.Context, what string, limit time.Duration, ok func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if ok() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s", what, limit)
		case <-t.C:
		}
	}
}

// healthy reports whether a front end answers /healthz.
func healthy(base string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
