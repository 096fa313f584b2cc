package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// profiles captures pprof CPU and allocation profiles of the front end
// under create and tasks/get load and of the worker draining no-op jobs,
// at the highest concurrency, into Config.Profile. They are taken after
// the measurements, so profiling never colours the table.
func (s *suite) profiles(ctx context.Context) error {
	dir := s.cfg.Profile
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	if err := s.publishCatalog(ctx); err != nil {
		return err
	}
	fe, err := s.spawn(ctx, RoleFrontend)
	if err != nil {
		return err
	}
	defer fe.stop()
	refs, err := s.createTasks(ctx, getFixtures, 16, false)
	if err != nil {
		return err
	}
	c := s.maxConc()
	secs := max(3, int((2 * s.cfg.Duration).Seconds()))
	window := func(name string, p *proc, op NewOp) error {
		for _, kind := range []struct{ path, suffix string }{{"profile", "cpu"}, {"allocs", "allocs"}} {
			file := filepath.Join(dir, name+"."+kind.suffix+".pprof")
			errc := make(chan error, 1)
			go func() { errc <- fetch(p, kind.path, secs, file) }()
			if _, err := Load(ctx, c, 300*time.Millisecond, time.Duration(secs)*time.Second+time.Second, op); err != nil {
				return err
			}
			if err := <-errc; err != nil {
				return err
			}
			s.rep.Profiles = append(s.rep.Profiles, file)
		}
		return nil
	}
	if err := window("create", fe, fixedOp(fe.addr, toolCallRequest(fe.addr, toolNoop, metaTasks), expect200(`"resultType":"task"`))); err != nil {
		return err
	}
	if err := window("get", fe, idOp(fe.addr, newIDTemplate(fe.addr, "tasks/get"), ids(refs), expect200(`"status":"working"`))); err != nil {
		return err
	}
	fe.stop()

	if err := s.flush(ctx); err != nil {
		return err
	}
	if _, err := s.createTasks(ctx, 3*s.cfg.WorkerJobs, 64, true); err != nil {
		return err
	}
	wk, err := s.spawn(ctx, RoleWorker, "-concurrency", strconv.Itoa(c))
	if err != nil {
		return err
	}
	defer wk.stop()
	// The allocation profile's window is the CPU profile's (a delta of two
	// snapshots, which costs the run nothing between them).
	allocs := filepath.Join(dir, "worker.allocs.pprof")
	errc := make(chan error, 1)
	go func() { errc <- fetch(wk, "allocs", secs, allocs) }()
	file := filepath.Join(dir, "worker.cpu.pprof")
	err = fetch(wk, "profile", secs, file)
	if aerr := <-errc; err == nil {
		err = aerr
	}
	if err != nil {
		return err
	}
	s.rep.Profiles = append(s.rep.Profiles, file, allocs)
	return nil
}

// fetch saves the child's /debug/pprof/<kind>?seconds=secs into file.
func fetch(p *proc, kind string, secs int, file string) error {
	hc := &http.Client{Timeout: time.Duration(secs)*time.Second + 30*time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", p.debug, kind, secs))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("pprof %s: HTTP %d: %s", kind, resp.StatusCode, b)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
