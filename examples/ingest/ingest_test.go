package ingest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/examples/internal/exampletest"
	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker/command"
)

// setup loads tools.yaml with an index folder and a scratch folder; allow
// is INGEST_ALLOW_NETWORKS (what the tools file's allowNetworks reads).
func setup(t *testing.T, allow string) (*mcpqtest.Env, string) {
	t.Helper()
	exampletest.Need(t, "apt-get install python3 poppler-utils", "python3", "pdftotext")
	if out, err := exec.Command("python3", "-c", "import sqlite3; sqlite3.connect(':memory:').execute('CREATE VIRTUAL TABLE t USING fts5(a)')").CombinedOutput(); err != nil {
		t.Skipf("python3's sqlite3 has no FTS5: %s", out)
	}
	dir := t.TempDir()
	t.Setenv("INGEST_INDEX_DIR", filepath.Join(dir, "indexes"))
	t.Setenv("INGEST_SCRATCH", filepath.Join(dir, "scratch"))
	t.Setenv("INGEST_ALLOW_NETWORKS", allow)
	tools, err := command.Load("tools.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return mcpqtest.New(t, tools...), filepath.Join(dir, "indexes")
}

type crawled struct {
	Visited, Indexed, Unchanged, Chunks, IndexPages int
	Errors, Skipped                                 map[string]int
}

func ingest(t *testing.T, env *mcpqtest.Env, args map[string]any) crawled {
	t.Helper()
	res := exampletest.Finish(t, env.Call(t, "ingest_site", args))
	var c crawled
	if err := json.Unmarshal(res.StructuredContent, &c); err != nil || res.IsError {
		t.Fatalf("ingest_site: %+v %s (%v)", res.Content, res.StructuredContent, err)
	}
	return c
}

type hit struct{ URL, Title, Snippet string }

func search(t *testing.T, env *mcpqtest.Env, args map[string]any) []hit {
	t.Helper()
	res := env.Call(t, "search_index", args).Result(t)
	var out struct{ Results []hit }
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil || res.IsError {
		t.Fatalf("search_index %v: %+v (%v)", args, res.Content, err)
	}
	return out.Results
}

// indexed lists the URLs of the index's pages (read with python3's sqlite3).
func indexed(t *testing.T, dir, name string) []string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sqlite3,sys\nfor (u,) in sqlite3.connect(sys.argv[1]).execute('SELECT url FROM pages ORDER BY url'): print(u)",
		filepath.Join(dir, name+".sqlite")).CombinedOutput()
	if err != nil {
		t.Fatalf("read the index: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// TestIngestAndSearch: the index holds every allowed page (HTML and the
// PDF) and none of the others; search_index finds the PDF's phrase; no
// disallowed or off-host URL was fetched.
func TestIngestAndSearch(t *testing.T) {
	s := newSite(t)
	env, dir := setup(t, "127.0.0.1")
	c := ingest(t, env, map[string]any{"url": s.URL + "/", "index": "site", "maxDepth": 40})
	urls := indexed(t, dir, "site")
	want := map[string]bool{s.URL + "/": true, s.URL + "/doc.pdf": true}
	for n := 1; n <= numbered; n++ {
		want[fmt.Sprintf("%s/p/%d", s.URL, n)] = true
	}
	for _, u := range urls {
		if !want[u] {
			t.Errorf("indexed %s, which is not an allowed page", u)
		}
		delete(want, u)
	}
	if len(want) > 0 || c.Indexed != pageCount || c.IndexPages != pageCount {
		t.Errorf("pages not indexed: %v; result %+v", want, c)
	}
	if len(c.Errors) != 1 || c.Errors["http 404"] != 1 || c.Skipped["robots.txt"] != 1 || c.Skipped["off the host"] != 2 ||
		c.Skipped["redirected off the host"] != 1 {
		t.Errorf("errors %v, skipped %v: want one 404, one robots.txt, two off the host, one redirect off it", c.Errors, c.Skipped)
	}
	gets, _ := s.counts()
	if gets["/private/secret"] != 0 {
		t.Errorf("fetched the page robots.txt disallows")
	}
	hits := search(t, env, map[string]any{"query": pdfPhrase, "index": "site", "phrase": true})
	if len(hits) != 1 || hits[0].URL != s.URL+"/doc.pdf" || !strings.Contains(hits[0].Snippet, "[quarterly turbine maintenance schedule]") {
		t.Fatalf("search for the PDF's phrase: %+v", hits)
	}
	if hits := search(t, env, map[string]any{"query": "marker0017", "index": "site"}); len(hits) != 1 || hits[0].URL != s.URL+"/p/17" {
		t.Errorf("search for page 17's word: %+v", hits)
	}
	for _, q := range []string{"secretword", "scriptword", "maintenance turbine quarterly schedule x"} {
		if hits := search(t, env, map[string]any{"query": q, "index": "site"}); len(hits) != 0 {
			t.Errorf("search %q: %+v, want nothing", q, hits)
		}
	}
}

// TestRecrawlIndexesOnlyChanges: a second crawl of the same site indexes
// the two pages that changed; the others answer 304 and stay as they were.
func TestRecrawlIndexesOnlyChanges(t *testing.T) {
	s := newSite(t)
	env, _ := setup(t, "127.0.0.0/8")
	ingest(t, env, map[string]any{"url": s.URL + "/", "index": "site", "maxDepth": 40})
	s.setText(5, "rewritten page about gearboxes")
	s.setText(30, "another rewrite about propellers")
	c := ingest(t, env, map[string]any{"url": s.URL + "/", "index": "site", "maxDepth": 40})
	if c.Indexed != 2 || c.Unchanged != pageCount-2 {
		t.Errorf("re-crawl: %+v, want 2 indexed and %d unchanged", c, pageCount-2)
	}
	if _, cond := s.counts(); cond["/p/6"] != 1 || cond["/"] != 1 || cond["/p/5"] != 0 {
		t.Errorf("304s answered: %v", cond)
	}
	if hits := search(t, env, map[string]any{"query": "gearboxes", "index": "site"}); len(hits) != 1 || !strings.HasSuffix(hits[0].URL, "/p/5") {
		t.Errorf("the changed page's new text: %+v", hits)
	}
	if hits := search(t, env, map[string]any{"query": "marker0005", "index": "site"}); len(hits) != 0 {
		t.Errorf("the changed page's old text is still found: %+v", hits)
	}
	if hits := search(t, env, map[string]any{"query": "marker0006", "index": "site"}); len(hits) != 1 {
		t.Errorf("an unchanged page is no longer found: %+v", hits)
	}
}

// TestCancelStopsTheCrawl: a cancel while a fetch hangs ends the task
// cancelled, stops the program, and leaves the index with the pages
// finished before it.
func TestCancelStopsTheCrawl(t *testing.T) {
	s := newSite(t)
	s.holdFrom(30)
	env, dir := setup(t, "127.0.0.1")
	run := env.Call(t, "ingest_site", map[string]any{"url": s.URL + "/", "index": "site", "maxDepth": 40})
	s.reached(t) // the fetch of page 30 hangs
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Fatalf("status %s", st.Status)
	}
	if procs := running(t, run.TaskID()); len(procs) > 0 {
		t.Errorf("still running after the cancel: %v", procs)
	}
	s.release()
	if n := len(indexed(t, dir, "site")); n < 5 || n >= pageCount {
		t.Errorf("the index holds %d pages after the cancel", n)
	}
}

// TestTakeoverFetchesNoPageTwice: the worker is lost mid-crawl; the next
// delivery starts from the checkpoint's frontier, so only the page in
// flight is fetched again. The site holds page 25 (of the second chain of
// pages), so the crawl stands still there: once the progress counts every
// page served before it, the checkpoint holds them all, whatever the
// machine's speed.
func TestTakeoverFetchesNoPageTwice(t *testing.T) {
	s := newSite(t)
	s.holdFrom(25)
	env, dir := setup(t, "127.0.0.1")
	run := env.Call(t, "ingest_site", map[string]any{"url": s.URL + "/", "index": "site", "maxDepth": 40})
	s.reached(t)
	done := 0 // pages served and indexed before the held one
	gets, _ := s.counts()
	for p := range gets {
		if p != "/robots.txt" && p != "/missing" && p != "/away" && p != "/p/25" {
			done++
		}
	}
	run.WaitMessage(t, fmt.Sprintf("Indexed %d of", done))
	run.Redeliver(t)
	s.release()
	res := exampletest.Finish(t, run)
	if res.IsError || len(run.Deliveries()) != 2 {
		t.Fatalf("deliveries %v, result %+v", run.Deliveries(), res.Content)
	}
	gets, _ = s.counts()
	twice := 0
	for p, n := range gets {
		if p != "/robots.txt" && n > 1 {
			twice++
			if n > 2 {
				t.Errorf("%s fetched %d times", p, n)
			}
		}
	}
	if twice > 1 {
		t.Errorf("%d pages fetched twice, want at most the one in flight: %v", twice, gets)
	}
	if n := len(indexed(t, dir, "site")); n != pageCount {
		t.Errorf("the index holds %d pages, want %d", n, pageCount)
	}
}

// TestRefusesPrivateStart: without allowNetworks a loopback start URL is
// refused before any request reaches it.
func TestRefusesPrivateStart(t *testing.T) {
	s := newSite(t)
	env, _ := setup(t, "")
	res := exampletest.Finish(t, env.Call(t, "ingest_site", map[string]any{"url": s.URL + "/"}))
	if !res.IsError || !strings.Contains(res.Content[0].Text, "a loopback address the tools file does not allow") {
		t.Fatalf("result %+v", res.Content)
	}
	if gets, _ := s.counts(); len(gets) != 0 {
		t.Errorf("requests reached the site: %v", gets)
	}
}

// running lists the command lines of processes run for task id.
func running(t *testing.T, id string) []string {
	t.Helper()
	envs, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range envs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "\x00MCPQ_TASK_ID="+id+"\x00") {
			cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			out = append(out, strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// TestLimits: maxDepth and maxPages bound the crawl.
func TestLimits(t *testing.T) {
	s := newSite(t)
	env, dir := setup(t, "127.0.0.1")
	c := ingest(t, env, map[string]any{"url": s.URL + "/", "index": "shallow", "maxDepth": 1})
	if c.Indexed != 4 || c.Skipped["too deep"] != 2 {
		t.Errorf("maxDepth 1: %+v, want the front page, pages 1 and 20 and the PDF, and 2 links too deep", c)
	}
	c = ingest(t, env, map[string]any{"url": s.URL + "/", "index": "few", "maxPages": 3, "maxDepth": 40})
	if c.Visited != 3 || len(indexed(t, dir, "few")) != 3 {
		t.Errorf("maxPages 3: %+v", c)
	}
}
