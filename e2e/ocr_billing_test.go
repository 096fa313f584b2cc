package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
)

// TestOCRCancelledAtHalfIsChargedForPagesDone: ocr_pages is priced per
// page (10 units each, examples/ocr/tools.yaml). A batch of 8 whose fifth
// page never arrives (a FIFO no one writes: Tesseract waits on it) is
// cancelled once 4 pages are done; the receipt charges the 4 pages' 40
// units of the 80 reserved and releases the rest, and the ledger settles
// the task once.
func TestOCRCancelledAtHalfIsChargedForPagesDone(t *testing.T) {
	t.Parallel()
	needMedia(t, "tesseract", "ffmpeg")
	b := redistest.Real(t)
	dir := t.TempDir()
	var pages []string
	for i := 1; i <= 4; i++ {
		pages = append(pages, renderPage(t, filepath.Join(dir, fmt.Sprintf("page%d.png", i)), fmt.Sprintf("page number %d", i)))
	}
	fifo := filepath.Join(dir, "never.png")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	pages = append(pages, fifo, pages[0], pages[1], pages[2])
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "OCR_SCRATCH=" + filepath.Join(dir, "scratch")}
	start(t, "worker", env, nil, "worker", "--tools", "../examples/ocr/tools.yaml")
	url := startFrontend(t, env, "--billing")
	waitCatalog(t, url, "ocr_pages")
	ctx := within(t)
	store := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix})
	who := frontend.AnonymousPrincipal
	if _, err := store.Accounts().Credit(ctx, who, 1000); err != nil {
		t.Fatal(err)
	}
	c := taskClient(url)
	id := createTask(t, ctx, c, "ocr_pages", map[string]any{"pages": pages}).TaskID
	waitTask(t, ctx, c, id, "4 pages done", func(g *proto.GetTaskResult) bool {
		return strings.HasPrefix(g.StatusMessage, "OCR page 4 of 8")
	})
	if _, err := c.CancelTask(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitTask(t, ctx, c, id, "cancelled", func(g *proto.GetTaskResult) bool { return g.Status.Terminal() })

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/v1/tasks/"+id, nil)
	a := do(t, req)
	var rest struct {
		Status  proto.TaskStatus
		Receipt billing.Receipt
	}
	if err := json.Unmarshal(a.body, &rest); err != nil || a.status != 200 {
		t.Fatalf("GET /v1/tasks/%s: %d %s", id, a.status, a.body)
	}
	rc := rest.Receipt
	if rest.Status != proto.StatusCancelled || rc.Reserved != 80 || rc.Usage != 40 || rc.Charged != 40 || rc.Released != 40 ||
		len(rc.Entries) != 2 {
		t.Fatalf("status %s, receipt %+v: want 40 of 80 units charged for 4 pages", rest.Status, rc)
	}
	acct, err := store.Accounts().Get(ctx, who)
	if err != nil || acct.Charged != 40 || acct.Reserved != 0 || acct.Balance != 960 {
		t.Fatalf("account %+v (%v)", acct, err)
	}
	entries, _, err := store.Accounts().Ledger(ctx, who, "", billing.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	settles := 0
	for _, e := range entries {
		if e.Task == id && (e.Kind == "settle" || e.Kind == "release") {
			settles++
		}
	}
	if settles != 1 {
		t.Fatalf("task settled %d times: %+v", settles, entries)
	}
}
