package e2e

// The task dashboard (frontend/dashboard) in headless Chromium: it lists
// the caller's tasks, follows a running one to completed over the listen
// stream without a reload, shows a result image, and answers an input
// request through the form built from its requested schema.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// chromium finds Debian's chromium. Without it the test is skipped, unless
// MCPQ_REQUIRE_CHROMIUM=1 (scripts/test installs it and sets that).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("MCPQ_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("MCPQ_REQUIRE_CHROMIUM=1 but no chromium on PATH")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// headless starts Chromium exe headless for the test, stopped when ctx
// ends or the test does, and returns its context and do, which runs steps
// in it and fails the test naming what on an error.
func headless(t *testing.T, ctx context.Context, exe string) (context.Context, func(what string, steps ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 800))
	actx, stopAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, stopBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { stopBrowser(); stopAlloc() })
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	return bctx, do
}

// testPNG is a small PNG image, base64: a blue square with a red bar.
func testPNG(t *testing.T) string {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			c := color.RGBA{30, 90, 200, 255}
			if y > 26 && y < 38 {
				c = color.RGBA{220, 40, 40, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	release := make(chan struct{})
	pic := testPNG(t)
	clip, err := os.ReadFile("testdata/clip.webm") // 1 s of 96×64 VP8 (ffmpeg testsrc)
	if err != nil {
		t.Fatal(err)
	}
	video, _ := json.Marshal(map[string]string{"uri": "output:///clip.webm", "mimeType": "video/webm",
		"blob": base64.StdEncoding.EncodeToString(clip)})
	const opsGate = "ops_gate" // task: runs until the test releases it, then answers an image
	blobs, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clipFile := filepath.Join(t.TempDir(), "clip.webm")
	if err := os.WriteFile(clipFile, clip, 0o600); err != nil {
		t.Fatal(err)
	}
	e, ctx := newOpsEnvWith(t, blobs, worker.Tool{Name: opsGate, Policy: worker.PolicyTask,
		Handler: func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			if err := c.Progress(ctx, "waiting for the test"); err != nil {
				return nil, err
			}
			err := c.Step(ctx, func(ctx context.Context) error {
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err != nil {
				return nil, err
			}
			// The same clip once more as a stored object: a resource_link.
			stored, err := c.StoreFile(ctx, 4, clipFile, "clip.webm", "video/webm")
			if err != nil {
				return nil, err
			}
			return &proto.CallToolResult{Content: []proto.Content{proto.TextContent("rendered"),
				{Type: "image", Data: pic, MimeType: "image/png"}, {Type: "resource", Resource: video},
				proto.TextContent(`{"frames":10,"size":[96,64]}`), stored}}, nil
		}}), within(t)
	gate := createTask(t, ctx, e.c, opsGate, nil).TaskID
	gets := 0
	for g := e.getUntil(t, ctx, gate, proto.StatusWorking, &gets); g.StatusMessage != "waiting for the test"; {
		g = e.getUntil(t, ctx, gate, proto.StatusWorking, &gets)
	}
	ask := createTask(t, ctx, e.c, opsAsk, nil).TaskID
	e.getUntil(t, ctx, ask, proto.StatusInputRequired, &gets)

	bctx, do := headless(t, ctx, browser)
	do("open the dashboard", chromedp.Navigate(e.feURL+"/dashboard/"),
		chromedp.WaitVisible(css(row(gate)+` td.status.working`)),
		chromedp.WaitVisible(css(row(ask)+` td.status.input_required`)),
		chromedp.WaitVisible(css(`#live.on`)))
	if tool, err := chromedp.Run(bctx, chromedp.Text(css(row(gate)+` td.tool`))); err != nil || tool != opsGate {
		t.Errorf("the running task's tool shows %q (%v), want %q", tool, err, opsGate)
	}

	// Answer the input request through the generated form.
	do("answer the input request", chromedp.Click(css(row(ask))),
		chromedp.WaitVisible(css(`#d-input input[name="name"]`)),
		chromedp.SendKeys(css(`#d-input input[name="name"]`), "Ada"),
		chromedp.Click(css(`#d-input button[type="submit"]`)),
		chromedp.WaitVisible(css(row(ask)+` td.status.completed`)),
		chromedp.WaitVisible(css(`#d-result pre`)))
	shown, err := chromedp.Run(bctx, chromedp.Text(css(`#d-result pre`)))
	if err != nil || shown != "answered Ada" {
		t.Errorf("result shown %q (%v), want %q", shown, err, "answered Ada")
	}
	if g, err := e.c.GetTask(ctx, ask); err != nil || g.Status != proto.StatusCompleted || !strings.Contains(string(g.Result), "answered Ada") {
		t.Errorf("the task answered in the browser: %+v %v", g, err)
	}

	// The running task turns completed on the page over the listen stream
	// (data-via="stream"), with no reload.
	close(release)
	do("see the running task complete", chromedp.WaitVisible(css(row(gate)+`[data-via="stream"] td.status.completed`)),
		chromedp.Click(css(row(gate))),
		chromedp.WaitVisible(css(`#d-result img`)),
		// Its page's timeline: created, the attempt on its worker, the end.
		chromedp.WaitVisible(css(`#d-timeline li[data-kind="started"]`)),
		chromedp.WaitVisible(css(`#d-timeline li[data-kind="ended"]`)))
	loaded, err := chromedp.Run(bctx, chromedp.Evaluate[bool](
		`(() => { const i = document.querySelector("#d-result img"); return i.complete && i.naturalWidth === 64; })()`))
	if err != nil || !loaded {
		t.Errorf("the result image did not load as a 64 px picture (%v)", err)
	}
	// The video plays in a <video> player: its metadata loads (96 px wide),
	// and the JSON text block is pretty-printed.
	do("load the result video", chromedp.WaitVisible(css(`#d-result video`)), chromedp.Poll[chromedp.Void](
		`(() => { const v = document.querySelector("#d-result video"); return v.readyState >= 1 && v.videoWidth === 96; })()`))
	// The stored object plays in place once read through resources/read.
	do("show the stored video", chromedp.Click(css(`#d-result .stored button`)), chromedp.Poll[chromedp.Void](
		`(() => { const v = document.querySelector("#d-result .stored video"); return v && v.src.startsWith("blob:") && v.readyState >= 1 && v.videoWidth === 96; })()`))
	if pretty, err := chromedp.Run(bctx, chromedp.Text(css(`#d-result pre.json`))); err != nil || !strings.Contains(pretty, "\n  \"frames\": 10") {
		t.Errorf("the JSON text block shows %q (%v), want it pretty-printed", pretty, err)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	do("narrow to a phone's width", chromedp.EmulateViewport(390, 844))
	phone, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("phone screenshot: %v", err)
	}
	wide, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil || wide {
		t.Errorf("at phone width the page scrolls sideways (%v)", err)
	}
	saveShots(t, map[string][]byte{"dashboard.png": shot, "dashboard-phone.png": phone})
}

// css selects by a CSS selector; row is the task list's row of task id.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }
func row(id string) string        { return `tr[data-task="` + id + `"]` }

// saveShots writes screenshots (name → PNG) to the test's artifact folder
// and to MCPQ_SCREENSHOT_DIR (scripts/test sets it to results/).
func saveShots(t *testing.T, shots map[string][]byte) {
	t.Helper()
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("MCPQ_SCREENSHOT_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, png := range shots {
			p := filepath.Join(d, name)
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", p)
		}
	}
}
