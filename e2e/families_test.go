package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// TestToolFamiliesOnOneWorker: one `mcpq worker` serves the media, OCR,
// ingestion and command examples from several tools files (a comma list
// and the flag repeated); through a front end on a real redis-server an
// OCR call completes with its words as structuredContent, and a crawl of
// a loopback site is then found by search_index, answered at once.
func TestToolFamiliesOnOneWorker(t *testing.T) {
	t.Parallel()
	needMedia(t, "tesseract", "ffmpeg", "pdftotext")
	b := redistest.Real(t)
	dir := t.TempDir()
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix,
		"MEDIA_SCRATCH=" + filepath.Join(dir, "media"), "OCR_SCRATCH=" + filepath.Join(dir, "ocr"),
		"INGEST_SCRATCH=" + filepath.Join(dir, "ingest"), "INGEST_INDEX_DIR=" + filepath.Join(dir, "indexes"),
		"INGEST_ALLOW_NETWORKS=127.0.0.1", "MEDIA_SEGMENT_SECONDS=1", "MEDIA_X264_PRESET=ultrafast",
		"MCPQ_BLOB_URL=file://" + filepath.Join(dir, "blobs")}
	start(t, "worker", env, nil, "worker", "--tools", "../examples/media/tools.yaml,../examples/ocr/tools.yaml",
		"--tools", "../examples/ingest/tools.yaml", "--tools", toolsFile, "--concurrency", "2")
	// A sync budget no python3 start misses: search_index (policy auto)
	// is answered in the call.
	url := startFrontend(t, env, "--sync-budget", "30s")
	for _, tool := range []string{"transcode_video", "ocr_pages", "ingest_site", "search_index", "render_image"} {
		waitCatalog(t, url, tool)
	}
	page := renderPage(t, filepath.Join(dir, "page.png"), "served by one worker")
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
	crawlAndSearch(t, ctx, c)
	transcodeToLinks(t, ctx, c, dir)
}

// transcodeToLinks transcodes a 2 s test clip; the video and its
// thumbnail come back as resource_links into the object store (the tools
// file's links), and resources/read of the video answers an MP4 ffprobe
// reads.
func transcodeToLinks(t *testing.T, ctx context.Context, c *client.Client, dir string) {
	t.Helper()
	clip := makeClip(t, filepath.Join(dir, "clip.mp4"), "320x180", 2)
	task := createTask(t, ctx, c, "transcode_video", map[string]any{"input": clip, "height": 90, "thumbnails": 1})
	r := toolResult(t, waitTask(t, ctx, c, task.TaskID, "completed", hasStatus(proto.StatusCompleted)))
	if probe := probeLinkedVideo(t, ctx, c, r, dir); !strings.Contains(probe, "height=90") {
		t.Fatalf("ffprobe of the read video: %s", probe)
	}
}

// makeClip writes a clip of ffmpeg's test source, of size (WxH) and secs
// seconds at 25 frames a second, to path and returns path.
func makeClip(t *testing.T, path, size string, secs int) string {
	t.Helper()
	src := fmt.Sprintf("testsrc=size=%s:rate=25:duration=%d", size, secs)
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", src,
		"-c:v", "libx264", "-preset", "ultrafast", path).CombinedOutput(); err != nil {
		t.Fatalf("make the clip: %v\n%s", err, out)
	}
	return path
}

// probeLinkedVideo requires transcode_video's result r to hold the video
// and a thumbnail as resource_links, reads the video with resources/read
// and returns what ffprobe says of it (codec_name, height and duration
// lines).
func probeLinkedVideo(t *testing.T, ctx context.Context, c *client.Client, r *proto.CallToolResult, dir string) string {
	t.Helper()
	links := map[string]proto.Content{}
	for _, b := range r.Content {
		if b.Type == "resource_link" {
			links[b.Name] = b
		}
	}
	video, thumb := links["video.mp4"], links["thumb01.jpg"]
	if r.IsError || video.MimeType != "video/mp4" || thumb.MimeType != "image/jpeg" {
		t.Fatalf("transcode_video result %+v, want the video and the thumbnail as resource_links", r.Content)
	}
	rr, err := c.ReadResource(ctx, video.URI)
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Blob == nil {
		t.Fatalf("resources/read %s: %+v (%v)", video.URI, rr, err)
	}
	b, err := base64.StdEncoding.DecodeString(*rr.Contents[0].Blob)
	p := filepath.Join(dir, "read.mp4")
	if err != nil || os.WriteFile(p, b, 0o600) != nil {
		t.Fatalf("decode the video: %v", err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
		"stream=codec_name,height:format=duration", "-of", "default=nw=1", p).Output()
	if err != nil {
		t.Fatalf("ffprobe of the read video: %s (%v)", out, err)
	}
	return string(out)
}

// renderPage draws text on a white page image at path (ffmpeg's drawtext
// with DejaVu Sans) and returns path.
func renderPage(t *testing.T, path, text string) string {
	t.Helper()
	draw := "drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:text='" + text + "':fontsize=40:x=40:y=80:fontcolor=black"
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=white:s=900x200",
		"-frames:v", "1", "-vf", draw, path).CombinedOutput(); err != nil {
		t.Fatalf("render the page: %v\n%s", err, out)
	}
	return path
}

// needMedia skips (or fails, with MCPQ_REQUIRE_MEDIA) without programs.
func needMedia(t *testing.T, progs ...string) {
	t.Helper()
	needPython(t)
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("MCPQ_REQUIRE_MEDIA") != "" {
				t.Fatalf("%s is not installed (scripts/test installs it)", p)
			}
			t.Skipf("%s is not installed", p)
		}
	}
}

// crawlAndSearch crawls a two-page loopback site with ingest_site (a
// task) and finds a phrase of its second page with search_index.
func crawlAndSearch(t *testing.T, ctx context.Context, c *client.Client) {
	t.Helper()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<html><title>Home</title><body>Welcome. <a href="/notes">notes</a></body></html>`)
		case "/notes":
			fmt.Fprint(w, `<html><title>Notes</title><body><p>the heron nests by the old mill</p></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	task := createTask(t, ctx, c, "ingest_site", map[string]any{"url": site.URL + "/", "index": "e2e"})
	if r := toolResult(t, waitTask(t, ctx, c, task.TaskID, "completed", hasStatus(proto.StatusCompleted))); r.IsError {
		t.Fatalf("ingest_site: %+v", r.Content)
	}
	a, err := c.CallTool(ctx, "search_index", map[string]any{"query": "heron mill", "index": "e2e"})
	if err != nil || a.Result == nil {
		t.Fatalf("search_index answered %+v (%v), want the result in the call", a, err)
	}
	var sc struct{ Results []struct{ URL string } }
	if err := json.Unmarshal(a.Result.StructuredContent, &sc); err != nil || len(sc.Results) != 1 || sc.Results[0].URL != site.URL+"/notes" {
		t.Fatalf("search_index: %+v (%v)", a.Result, err)
	}
}
