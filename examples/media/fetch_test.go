package media_test

import (
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpq/mcpq/examples/internal/exampletest"
)

// serve serves the file clip at /clip.mp4 on addr (a loopback address),
// redirecting /moved to to; it counts the requests.
func serve(t *testing.T, addr, clip, to string) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	var n atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		http.ServeFile(w, r, clip)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), &n
}

// TestTranscodeFromURL: an http input from a network the tools file
// allows (MEDIA_ALLOW_NETWORKS) is downloaded and transcoded.
func TestTranscodeFromURL(t *testing.T) {
	t.Setenv("MEDIA_ALLOW_NETWORKS", "127.0.0.1")
	env, clip, _ := setup(t, "3")
	base, _ := serve(t, "127.0.0.1", clip, "")
	res := exampletest.Finish(t, env.Call(t, "transcode_video", map[string]any{"input": base + "/clip.mp4", "height": 120, "thumbnails": 0}))
	if res.IsError || !strings.Contains(string(res.StructuredContent), `"height": 120`) &&
		!strings.Contains(string(res.StructuredContent), `"height":120`) {
		t.Fatalf("result %+v %s", res.Content, res.StructuredContent)
	}
}

// TestRefusesPrivateInput: a loopback URL the tools file does not allow
// is refused before any request; a redirect from an allowed address to
// one not allowed is refused before it is followed.
func TestRefusesPrivateInput(t *testing.T) {
	t.Setenv("MEDIA_ALLOW_NETWORKS", "127.0.0.1")
	env, clip, _ := setup(t, "2")
	other, hits := serve(t, "127.0.0.2", clip, "")
	base, _ := serve(t, "127.0.0.1", clip, other+"/clip.mp4")
	for input, want := range map[string]string{
		other + "/clip.mp4":  "input refused: 127.0.0.2 resolves to 127.0.0.2, a loopback address the tools file does not allow",
		base + "/moved":      "input refused: 127.0.0.2 resolves to 127.0.0.2, a loopback address the tools file does not allow",
		"file:///etc/passwd": "input refused: file:///etc/passwd: only http and https URLs, or paths on the worker, are read",
	} {
		res := exampletest.Finish(t, env.Call(t, "transcode_video", map[string]any{"input": input, "height": 120}))
		if !res.IsError || !strings.Contains(res.Content[0].Text, want) {
			t.Errorf("%s: %+v, want a tool error with %q", input, res.Content, want)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the address not allowed", hits.Load())
	}
}
