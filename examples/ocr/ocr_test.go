package ocr_test

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
	"github.com/mcpq/mcpq/worker/command"
)

// lines are the known texts of the test's pages, one page each.
var lines = []string{
	"the quick brown fox jumps over the lazy dog",
	"long running tool calls need durable tasks",
	"every page is metered and checkpointed",
	"workers come and go but the batch goes on",
}

// setup renders one page image per line (ffmpeg's drawtext with DejaVu
// Sans) and loads tools.yaml with a scratch folder.
func setup(t *testing.T, every string) (*mcpqtest.Env, []string, string) {
	exampletest.Need(t, "apt-get install tesseract-ocr tesseract-ocr-eng ffmpeg", "tesseract", "ffmpeg", "python3")
	font := "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
	if _, err := os.Stat(font); err != nil {
		t.Skipf("no %s to render pages with (apt-get install fonts-dejavu-core)", font)
	}
	dir := t.TempDir()
	scratch := filepath.Join(dir, "scratch")
	t.Setenv("OCR_SCRATCH", scratch)
	t.Setenv("OCR_CHECKPOINT_EVERY", every)
	t.Setenv("OCR_AUDIT_LOG", filepath.Join(dir, "ocr.log"))
	var pages []string
	for i, l := range lines {
		p := filepath.Join(dir, fmt.Sprintf("page%d.png", i+1))
		draw := fmt.Sprintf("drawtext=fontfile=%s:text='%s':fontsize=40:x=40:y=80:fontcolor=black", font, l)
		if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=white:s=1400x200",
			"-frames:v", "1", "-vf", draw, p).CombinedOutput(); err != nil {
			t.Fatalf("render page %d: %v\n%s", i+1, err, out)
		}
		pages = append(pages, p)
	}
	tools, err := command.Load("tools.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return mcpqtest.New(t, tools...), pages, scratch
}

type ocrResult struct {
	PageCount int
	Pages     []struct {
		Page           int
		Text           string
		MeanConfidence float64
		Words          []struct {
			Word       string
			Confidence float64
		}
	}
}

// TestRecognisesPages: at least 95 % of the rendered words come back.
func TestRecognisesPages(t *testing.T) {
	env, pages, _ := setup(t, "2")
	res := exampletest.Finish(t, env.Call(t, "ocr_pages", map[string]any{"pages": pages}))
	var r ocrResult
	if err := json.Unmarshal(res.StructuredContent, &r); err != nil || res.IsError || r.PageCount != len(lines) {
		t.Fatalf("result %+v structured %s (%v)", res.Content, res.StructuredContent, err)
	}
	want, got := 0, 0
	for i, l := range lines {
		seen := map[string]int{}
		for _, w := range r.Pages[i].Words {
			seen[strings.ToLower(w.Word)]++
		}
		for _, w := range strings.Fields(l) {
			want++
			if seen[w] > 0 {
				seen[w]--
				got++
			}
		}
	}
	if got*100 < want*95 {
		t.Fatalf("recognised %d of %d words: %+v", got, want, r.Pages)
	}
	if len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "lazy dog") {
		t.Errorf("full text block: %+v", res.Content)
	}
}

// TestTakeoverSkipsFinishedPages: a worker lost after a checkpoint; the
// next delivery recognises only the pages the checkpoint does not list.
func TestTakeoverSkipsFinishedPages(t *testing.T) {
	env, pages, scratch := setup(t, "1")
	run := env.Call(t, "ocr_pages", map[string]any{"pages": pages})
	log := os.Getenv("OCR_AUDIT_LOG")
	run.WaitFor(t, "a checkpointed page", func(st mcpqtest.State) bool {
		return strings.HasPrefix(st.StatusMessage, "OCR page ")
	})
	run.Redeliver(t)
	res := exampletest.Finish(t, run)
	var r ocrResult
	if err := json.Unmarshal(res.StructuredContent, &r); err != nil || res.IsError || r.PageCount != len(lines) {
		t.Fatalf("result %+v (%v)", res.Content, err)
	}
	b, _ := os.ReadFile(log)
	done := strings.Split(strings.TrimSpace(string(b)), "\n")
	seen := map[string]bool{}
	for _, p := range done {
		if seen[p] {
			t.Errorf("page %s recognised twice (log %v)", p, done)
		}
		seen[p] = true
	}
	if len(seen) != len(lines) || len(run.Deliveries()) != 2 {
		t.Errorf("pages recognised %v over deliveries %v, want each of %d once over 2", done, run.Deliveries(), len(lines))
	}
	if _, err := os.Stat(filepath.Join(scratch, run.TaskID())); !os.IsNotExist(err) {
		t.Errorf("scratch folder left after the task completed: %v", err)
	}
}
