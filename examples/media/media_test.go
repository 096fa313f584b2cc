package media_test

import (
	"encoding/base64"
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

// setup loads tools.yaml with a scratch folder and short segments, and
// makes a 640x360 clip of secs seconds with ffmpeg's test source.
func setup(t *testing.T, secs string) (*mcpqtest.Env, string, string) {
	t.Helper()
	exampletest.Need(t, "apt-get install ffmpeg python3", "ffmpeg", "ffprobe", "python3")
	dir := t.TempDir()
	scratch := filepath.Join(dir, "scratch")
	t.Setenv("MEDIA_SCRATCH", scratch)
	t.Setenv("MEDIA_SEGMENT_SECONDS", "2")
	t.Setenv("MEDIA_X264_PRESET", "ultrafast")
	t.Setenv("MEDIA_AUDIT_LOG", filepath.Join(dir, "encoded.log"))
	clip := filepath.Join(dir, "clip.mp4")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=640x360:rate=25:duration="+secs,
		"-c:v", "libx264", "-preset", "ultrafast", clip).CombinedOutput(); err != nil {
		t.Fatalf("make the clip: %v\n%s", err, out)
	}
	tools, err := command.Load("tools.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return mcpqtest.New(t, tools...), clip, scratch
}

// TestTranscode: the result's video has the clip's duration and the asked
// height and codec; thumbnails are JPEGs; structuredContent says so too.
func TestTranscode(t *testing.T) {
	env, clip, scratch := setup(t, "6")
	run := env.Call(t, "transcode_video", map[string]any{"input": clip, "height": 180, "thumbnails": 2})
	res := exampletest.Finish(t, run)
	if res.IsError {
		t.Fatalf("tool error: %+v", res.Content)
	}
	var sc struct {
		Duration float64
		Codec    string
		Height   int
		Segments int
	}
	if err := json.Unmarshal(res.StructuredContent, &sc); err != nil || sc.Codec != "h264" || sc.Height != 180 ||
		sc.Duration < 5.8 || sc.Duration > 6.2 || sc.Segments != 3 {
		t.Fatalf("structuredContent %s (%v)", res.StructuredContent, err)
	}
	var video []byte
	thumbs := 0
	for _, c := range res.Content {
		switch {
		case c.Type == "image" && c.MimeType == "image/jpeg":
			thumbs++
		case c.Type == "resource":
			var rc proto.ResourceContents
			if err := json.Unmarshal(c.Resource, &rc); err == nil && rc.MimeType == "video/mp4" && rc.Blob != nil {
				video, _ = base64.StdEncoding.DecodeString(*rc.Blob)
			}
		}
	}
	if thumbs != 2 || len(video) == 0 {
		t.Fatalf("%d thumbnails and %d bytes of video in %d blocks", thumbs, len(video), len(res.Content))
	}
	p := filepath.Join(t.TempDir(), "out.mp4")
	if err := os.WriteFile(p, video, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
		"stream=codec_name,height:format=duration", "-of", "default=nw=1", p).Output()
	if err != nil || !strings.Contains(string(out), "codec_name=h264") || !strings.Contains(string(out), "height=180") {
		t.Fatalf("ffprobe of the result: %s (%v)", out, err)
	}
	if _, err := os.Stat(filepath.Join(scratch, run.TaskID())); !os.IsNotExist(err) {
		t.Errorf("scratch folder left after the task completed: %v", err)
	}
}

// TestTakeoverSkipsFinishedSegments: the worker is lost once a segment is
// finished; the next delivery encodes only the segments not listed in the
// checkpoint (the encode log in the scratch folder counts them).
func TestTakeoverSkipsFinishedSegments(t *testing.T) {
	env, clip, scratch := setup(t, "8")
	run := env.Call(t, "transcode_video", map[string]any{"input": clip, "height": 180, "thumbnails": 1})
	run.WaitFor(t, "a finished segment", segmentDone)
	run.Redeliver(t)
	res := exampletest.Finish(t, run)
	b, _ := os.ReadFile(os.Getenv("MEDIA_AUDIT_LOG"))
	encodes := strings.Split(strings.TrimSpace(string(b)), "\n")
	if res.IsError || len(run.Deliveries()) != 2 {
		t.Fatalf("deliveries %v, result %+v", run.Deliveries(), res.Content)
	}
	seen := map[string]bool{}
	for _, s := range encodes {
		if seen[s] {
			t.Errorf("segment %s encoded twice (log %v)", s, encodes)
		}
		seen[s] = true
	}
	if len(seen) != 4 || scratch == "" {
		t.Errorf("segments encoded: %v, want each of the 4 once", encodes)
	}
}

// TestCancelLeavesNothing: a cancel mid-encode ends the task cancelled,
// with no ffmpeg left running on the clip and no partial file.
func TestCancelLeavesNothing(t *testing.T) {
	env, clip, scratch := setup(t, "8")
	run := env.Call(t, "transcode_video", map[string]any{"input": clip, "height": 180})
	run.WaitFor(t, "a finished segment", segmentDone)
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Fatalf("status %s", st.Status)
	}
	if procs := running(t, clip); len(procs) > 0 {
		t.Errorf("still running on the clip after the cancel: %v", procs)
	}
	if _, err := os.Stat(filepath.Join(scratch, run.TaskID())); !os.IsNotExist(err) {
		t.Errorf("scratch folder (segments, partial file) left after the cancel: %v", err)
	}
}

// segmentDone: a segment is finished and checkpointed (the checkpoint
// line comes before the next segment's progress, and lines apply in order).
func segmentDone(st mcpqtest.State) bool {
	var n, of int
	_, after, _ := strings.Cut(st.StatusMessage, "(segment ")
	fmt.Sscanf(after, "%d of %d", &n, &of)
	return strings.HasPrefix(st.StatusMessage, "Finished segment ") || n >= 2
}

// running lists the command lines of processes whose arguments name path.
func running(t *testing.T, path string) []string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), path) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
