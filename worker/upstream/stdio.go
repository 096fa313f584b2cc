package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// tailBytes is how much of a process's stderr a failed call's error shows.
const tailBytes = 2048

// stopGrace is how long a process has to exit after its stdin closed.
const stopGrace = 2 * time.Second

// process is one running stdio server.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	conn   *conn
	tail   *tail
	exited chan struct{} // closed once Wait returned
}

// startProcess starts spec's program and reads its stdout as messages.
func startProcess(spec *Spec, log *slog.Logger) (*process, error) {
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Dir = spec.Cwd
	cmd.Env = os.Environ()
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", spec.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", spec.Name, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", spec.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("upstream %s: start %s: %w", spec.Name, spec.Command[0], err)
	}
	p := &process{cmd: cmd, stdin: stdin, conn: newConn(stdin, log), tail: &tail{}, exited: make(chan struct{})}
	var copied sync.WaitGroup
	copied.Add(1)
	go func() {
		defer copied.Done()
		p.tail.copy(stderr, log)
	}()
	// Once stdout ends the process is of no use: it is killed (a no-op
	// when it already exited; Wait still reports how it exited).
	go p.conn.readLoop(stdout, func(err error) error {
		p.kill()
		copied.Wait()
		werr := cmd.Wait()
		close(p.exited)
		if err == errLineTooLong {
			return fmt.Errorf("upstream %s: %w", spec.Name, err)
		}
		return p.exitError(spec.Name, werr)
	})
	return p, nil
}

// exitError says how the process ended, with its stderr's tail.
func (p *process) exitError(name string, werr error) error {
	how := "exited"
	if werr != nil {
		how = werr.Error()
	}
	if t := p.tail.String(); t != "" {
		return fmt.Errorf("upstream %s %s; stderr: %s", name, how, t)
	}
	return fmt.Errorf("upstream %s %s", name, how)
}

func (p *process) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

// stop closes stdin and kills the process if it has not exited after stopGrace.
func (p *process) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		p.kill()
		<-p.exited
	}
}

// stdioTransport is a session's transport to a process.
type stdioTransport struct{ p *process }

func (t stdioTransport) call(ctx context.Context, method string, params any, id *json.RawMessage) (json.RawMessage, error) {
	return t.p.conn.call(ctx, method, params, id)
}
func (t stdioTransport) notify(method string, params any) error {
	return t.p.conn.notify(method, params)
}
func (t stdioTransport) done() <-chan struct{}            { return t.p.conn.done }
func (t stdioTransport) cause() error                     { return t.p.conn.cause() }
func (t stdioTransport) close()                           { t.p.stop() }
func (t stdioTransport) handle(n noteFunc, r requestFunc) { t.p.conn.onNote, t.p.conn.onRequest = n, r }

// tail keeps the last tailBytes of a stream and logs its lines.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) copy(r io.Reader, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		log.Info("upstream stderr", "line", line)
		t.mu.Lock()
		t.buf = append(t.buf, line...)
		t.buf = append(t.buf, '\n')
		if len(t.buf) > tailBytes {
			t.buf = t.buf[len(t.buf)-tailBytes:]
		}
		t.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

// String is the tail, trimmed.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
