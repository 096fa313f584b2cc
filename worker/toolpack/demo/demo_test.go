package demo_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/gif"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker/toolpack/demo"
)

// TestRenderGIF renders small animations and decodes the result.
func TestRenderGIF(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args         string
		frames, size int
	}{
		{`{"frames":2,"size":16,"frameMs":0}`, 2, 16},
		{`{"frames":1,"size":16,"frameMs":0}`, 1, 16},
		{`{"frames":3,"size":40,"frameMs":1}`, 3, 40},
		{`{"frameMs":0}`, 24, 128}, // default frames and size
	}
	env := mcpqtest.New(t, demo.Tools()...)
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			t.Parallel()
			st := env.Call(t, "render_gif", json.RawMessage(tc.args)).End(t)
			if st.Status != proto.StatusCompleted || st.StatusMessage != "Completed" {
				t.Fatalf("got %s %q (error %+v)", st.Status, st.StatusMessage, st.Error)
			}
			res := st.Result
			if res.ResultType != proto.ResultComplete || res.IsError || len(res.Content) != 2 {
				t.Fatalf("result %+v: want 2 content blocks, no isError", res)
			}
			img := res.Content[0]
			if img.Type != "image" || img.MimeType != "image/gif" {
				t.Fatalf("first block is %q %q, want image image/gif", img.Type, img.MimeType)
			}
			raw, err := base64.StdEncoding.DecodeString(img.Data)
			if err != nil {
				t.Fatalf("image data is not base64: %v", err)
			}
			g, err := gif.DecodeAll(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("image data is not a GIF: %v", err)
			}
			if len(g.Image) != tc.frames || len(g.Delay) != tc.frames {
				t.Errorf("GIF has %d frames (%d delays), want %d", len(g.Image), len(g.Delay), tc.frames)
			}
			for i, fr := range g.Image {
				if b := fr.Bounds(); b.Dx() != tc.size || b.Dy() != tc.size {
					t.Errorf("frame %d is %v, want %dx%d", i, b, tc.size, tc.size)
				}
			}
			wantText := fmt.Sprintf("Rendered %d frames of %dx%d (%d bytes of GIF).", tc.frames, tc.size, tc.size, len(raw))
			if txt := res.Content[1]; txt.Type != "text" || txt.Text != wantText {
				t.Errorf("second block %+v, want text %q", txt, wantText)
			}
		})
	}
}

// TestRenderGIFInvalidArgs: out-of-range and mistyped arguments are
// refused, as every front end refuses them, before any task exists: a tool
// error naming the argument.
func TestRenderGIFInvalidArgs(t *testing.T) {
	t.Parallel()
	cases := []struct{ args, mention string }{
		{`{"frames":0,"size":16,"frameMs":0}`, `argument "frames": minimum: 0 is less than 1`},
		{`{"frames":601,"size":16,"frameMs":0}`, `argument "frames": maximum: 601 is greater than 600`},
		{`{"frames":1,"size":15,"frameMs":0}`, `argument "size": minimum`},
		{`{"frames":1,"size":513,"frameMs":0}`, `argument "size": maximum`},
		{`{"frames":1,"size":16,"frameMs":-1}`, `argument "frameMs": minimum`},
		{`{"frames":1,"size":16,"frameMs":10001}`, `argument "frameMs": maximum`},
		{`{"frames":"two"}`, `argument "frames"`},
		{`{"size":1.5}`, `argument "size"`},
		{`{"colors":3}`, `unexpected additional properties ["colors"]`},
	}
	env := mcpqtest.New(t, demo.Tools()...)
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			run := env.Call(t, "render_gif", json.RawMessage(tc.args))
			res := run.Result(t)
			if !res.IsError || run.TaskID() != "" {
				t.Fatalf("got %+v (task %q), want a tool error and no task", res, run.TaskID())
			}
			if text := res.Content[0].Text; !strings.Contains(text, tc.mention) {
				t.Errorf("message %q does not mention %q", text, tc.mention)
			}
		})
	}
}

// TestRenderGIFProgressAndCancel: a long render reports frames in
// statusMessage and stops promptly when cancelled.
func TestRenderGIFProgressAndCancel(t *testing.T) {
	t.Parallel()
	run := mcpqtest.New(t, demo.Tools()...).Call(t, "render_gif", json.RawMessage(`{"frames":600,"size":16,"frameMs":100}`))
	progress := regexp.MustCompile(`^Rendered frame \d+ of 600$`)
	st := run.WaitFor(t, "progress", func(s mcpqtest.State) bool { return progress.MatchString(s.StatusMessage) })
	if st.Status != proto.StatusWorking {
		t.Fatalf("status with progress %q = %s", st.StatusMessage, st.Status)
	}
	run.Cancel(t)
	if st = run.End(t); st.Status != proto.StatusCancelled || st.Result != nil {
		t.Fatalf("got %s %q %+v, want cancelled", st.Status, st.StatusMessage, st.Result)
	}
}

// TestTools: render_gif's catalog entry.
func TestTools(t *testing.T) {
	tools := demo.Tools()
	if len(tools) != 1 || tools[0].Name != "render_gif" {
		t.Fatalf("pack = %+v, want render_gif only", tools)
	}
	tl := tools[0]
	if tl.Policy != "" || tl.TTL != time.Hour || tl.PollInterval != time.Second || tl.Queue != "" {
		t.Errorf("render_gif: policy %q ttl %v poll %v queue %q", tl.Policy, tl.TTL, tl.PollInterval, tl.Queue)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" {
		t.Fatalf("schema %s: %v", tl.InputSchema, err)
	}
	for _, p := range []string{"frames", "size", "frameMs"} {
		if _, ok := schema.Properties[p]; !ok {
			t.Errorf("schema lacks %q", p)
		}
	}
}
