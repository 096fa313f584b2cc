package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// TestToolFamiliesOnOneWorker: one `mcpq worker` serves the media, OCR
// and command examples from several tools files (a comma list and the
// flag repeated), and an OCR call through a front end on a real
// redis-server completes with its words as structuredContent.
func TestToolFamiliesOnOneWorker(t *testing.T) {
	t.Parallel()
	needPython(t)
	for _, p := range []string{"tesseract", "ffmpeg"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("MCPQ_REQUIRE_MEDIA") != "" {
				t.Fatalf("%s is not installed (scripts/test installs it)", p)
			}
			t.Skipf("%s is not installed", p)
		}
	}
	b := redistest.Real(t)
	dir := t.TempDir()
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix,
		"MEDIA_SCRATCH=" + filepath.Join(dir, "media"), "OCR_SCRATCH=" + filepath.Join(dir, "ocr")}
	start(t, "worker", env, nil, "worker", "--tools", "../examples/media/tools.yaml,../examples/ocr/tools.yaml",
		"--tools", toolsFile, "--concurrency", "2")
	url := startFrontend(t, env)
	for _, tool := range []string{"transcode_video", "ocr_pages", "render_image"} {
		waitCatalog(t, url, tool)
	}
	page := filepath.Join(dir, "page.png")
	draw := "drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:text='served by one worker':fontsize=40:x=40:y=80:fontcolor=black"
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=white:s=900x200",
		"-frames:v", "1", "-vf", draw, page).CombinedOutput(); err != nil {
		t.Fatalf("render the page: %v\n%s", err, out)
	}
	ctx := within(t)
	c := taskClient(url)
	task := createTask(t, ctx, c, "ocr_pages", map[string]any{"pages": []string{page}})
	g := waitTask(t, ctx, c, task.TaskID, "completed", hasStatus(proto.StatusCompleted))
	r := toolResult(t, g)
	var sc struct{ Pages []struct{ Text string } }
	if err := json.Unmarshal(r.StructuredContent, &sc); err != nil || r.IsError || len(sc.Pages) != 1 ||
		!strings.Contains(strings.ToLower(sc.Pages[0].Text), "served by one worker") {
		t.Fatalf("result %s (%v)", fmt.Sprint(string(g.Result)), err)
	}
}
