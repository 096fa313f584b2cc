package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// proc is a child process serving one role.
type proc struct {
	role  string
	addr  string // HTTP address, for roles that serve HTTP
	debug string // debug address (/stats, /count, /debug/pprof/)
	cmd   *exec.Cmd
	done  chan error

	stopOnce sync.Once
}

// spawn starts exe serving role and waits until it says it is ready.
func spawn(ctx context.Context, exe, role, redisURL string, extra ...string) (*proc, error) {
	args := append([]string{"serve", role, "-redis", redisURL}, extra...)
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the harness
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{role: role, cmd: cmd, done: make(chan error, 1)}
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "ready" {
				ready <- f
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() { p.done <- cmd.Wait() }()
	select {
	case f := <-ready:
		if f[1] != "-" {
			p.addr = f[1]
		}
		p.debug = f[2]
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("%s exited before it was ready: %v", role, err)
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s not ready after 30s", role)
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// stop ends the child with SIGTERM (its orderly shutdown), then SIGKILL.
// It may be called more than once.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// debugClient reads the children's debug endpoints.
var debugClient = &http.Client{Timeout: 10 * time.Second}

// getJSON fetches the child's debug path into v.
func (p *proc) getJSON(path string, v any) error {
	resp, err := debugClient.Get("http://" + p.debug + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// memory is a process's resident memory and, for Go children, its
// runtime's view.
type memory struct {
	RSSKiB int64      `json:"rssKiB"`
	HWMKiB int64      `json:"hwmKiB"`
	Go     childStats `json:"go"`
}

func (p *proc) memory() (memory, error) {
	var m memory
	var err error
	if m.RSSKiB, m.HWMKiB, err = procRSS(p.pid()); err != nil {
		return m, err
	}
	return m, p.getJSON("/stats", &m.Go)
}

// procRSS reads VmRSS and VmHWM (KiB) of pid.
func procRSS(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss, _ = strconv.ParseInt(f[1], 10, 64)
		case "VmHWM:":
			hwm, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return rss, hwm, nil
}

// procCPU is pid's user+system CPU time (clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// machineBusy is the CPU time all cores spent not idle since boot, from
// /proc/stat (clock ticks of 10 ms).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 { // all but idle and iowait (and guest, counted in user)
			busy += n
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisInfo reads numeric fields of INFO sections.
func redisInfo(ctx context.Context, rdb *redis.Client, section string) map[string]string {
	s, err := rdb.Info(ctx, section).Result()
	out := map[string]string{}
	if err != nil {
		return out
	}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

func redisCPU(ctx context.Context, rdb *redis.Client) time.Duration {
	m := redisInfo(ctx, rdb, "cpu")
	u, _ := strconv.ParseFloat(m["used_cpu_user"], 64)
	s, _ := strconv.ParseFloat(m["used_cpu_sys"], 64)
	return time.Duration((u + s) * float64(time.Second))
}

func redisCommands(ctx context.Context, rdb *redis.Client) int64 {
	n, _ := strconv.ParseInt(redisInfo(ctx, rdb, "stats")["total_commands_processed"], 10, 64)
	return n
}

func redisUsedMemory(ctx context.Context, rdb *redis.Client) int64 {
	n, _ := strconv.ParseInt(redisInfo(ctx, rdb, "memory")["used_memory"], 10, 64)
	return n
}

// CPU is where a measurement's CPU time went, as a share of one core over
// the measurement's wall time (the machine has nproc cores in all).
type CPU struct {
	Server  float64 `json:"serverPct"`
	Redis   float64 `json:"redisPct"`
	LoadGen float64 `json:"loadgenPct"`
	// Machine is the whole machine's busy time (all processes and the
	// kernel), in the same unit: nproc × 100 means saturated.
	Machine float64 `json:"machinePct"`
	// ServerUsPerOp and RedisUsPerOp are the server's and Redis's CPU time
	// per operation (µs): what each request costs, whatever else runs.
	ServerUsPerOp float64 `json:"serverUsPerOp"`
	RedisUsPerOp  float64 `json:"redisUsPerOp"`
	// RedisCmdsPerOp is Redis's total_commands_processed per operation
	// (commands run inside scripts included).
	RedisCmdsPerOp float64 `json:"redisCmdsPerOp"`
}

// cpuProbe samples CPU counters before a measurement.
type cpuProbe struct {
	rdb    *redis.Client
	server *proc // nil: the server is this process
	t      time.Time
	srv    time.Duration
	red    time.Duration
	self   time.Duration
	cmds   int64
	busy   time.Duration
}

func startProbe(ctx context.Context, rdb *redis.Client, server *proc) *cpuProbe {
	p := &cpuProbe{rdb: rdb, server: server, red: redisCPU(ctx, rdb), cmds: redisCommands(ctx, rdb), self: selfCPU(),
		busy: machineBusy()}
	if server != nil {
		p.srv = procCPU(server.pid())
	}
	p.t = time.Now()
	return p
}

// end returns the CPU shares since start; ops counts every operation
// since start (warm-up included).
func (p *cpuProbe) end(ctx context.Context, ops int64) CPU {
	wall := time.Since(p.t).Seconds()
	self := selfCPU() - p.self
	red := redisCPU(ctx, p.rdb) - p.red
	srv := self // without a child, load generator and "server" share this process
	if p.server != nil {
		srv = procCPU(p.server.pid()) - p.srv
	}
	c := CPU{Server: 100 * srv.Seconds() / wall, Redis: 100 * red.Seconds() / wall,
		Machine: 100 * (machineBusy() - p.busy).Seconds() / wall}
	if p.server != nil {
		c.LoadGen = 100 * self.Seconds() / wall
	}
	if ops > 0 {
		c.ServerUsPerOp = float64(srv.Microseconds()) / float64(ops)
		c.RedisUsPerOp = float64(red.Microseconds()) / float64(ops)
		c.RedisCmdsPerOp = float64(redisCommands(ctx, p.rdb)-p.cmds) / float64(ops)
	}
	return c
}
