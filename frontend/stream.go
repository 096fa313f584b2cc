package frontend

import (
	"net/http"
	"strings"
	"sync"
)

// responder writes one request's answer. It answers plain JSON unless a
// related notification (progress, log) or a keep-alive must go out first:
// then it switches to a text/event-stream scoped to the request, and the
// final response becomes the stream's last event.
type responder struct {
	mu        sync.Mutex
	w         http.ResponseWriter
	sseOK     bool // the client accepts text/event-stream
	streaming bool
	done      bool
	// log, when set, makes the stream resumable (an era's, hook.go): each
	// event is logged first and carries its id.
	log eventLog
}

func newResponder(w http.ResponseWriter, r *http.Request) *responder {
	return &responder{w: w, sseOK: acceptsSSE(r.Header.Get("Accept"))}
}

// acceptsSSE reports whether an Accept header admits text/event-stream.
func acceptsSSE(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") { // no slice: a request's Accept is read on every call
		mt, _, _ := strings.Cut(part, ";")
		mt = strings.TrimSpace(mt)
		if mt == "text/event-stream" || mt == "text/*" || mt == "*/*" {
			return true
		}
	}
	return false
}

// startStream switches to SSE; false when the client does not accept it.
func (r *responder) startStream() bool {
	if r.streaming {
		return true
	}
	if !r.sseOK || r.done {
		return false
	}
	h := r.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	r.w.WriteHeader(http.StatusOK)
	r.streaming = true
	if r.log != nil && r.log.Prime() {
		// An event id before anything else, so a client that loses the
		// connection can resume (2025-11-25 transports, POST streams).
		r.event(nil, false)
	}
	return true
}

// notify sends a related notification on the request's stream. It reports
// whether it was sent (a client that does not accept SSE gets none).
func (r *responder) notify(msg any) bool {
	b, err := encodeJSON(msg)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.startStream() {
		return false
	}
	r.event(b, false)
	return true
}

// keepAlive writes an SSE comment, switching to SSE if allowed, so proxies
// keep a long wait open.
func (r *responder) keepAlive() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.startStream() {
		_, _ = r.w.Write([]byte(": keep-alive\n\n"))
		r.flush()
	}
}

// event writes one SSE event (b nil: a priming event, an id and empty
// data); final marks the request's final response.
func (r *responder) event(b []byte, final bool) {
	if r.log != nil {
		if id := r.log.Append(b, final); id != "" {
			_, _ = r.w.Write([]byte("id: " + id + "\n"))
		}
	}
	if b == nil {
		_, _ = r.w.Write([]byte("data:\n\n"))
		r.flush()
		return
	}
	_, _ = r.w.Write([]byte("event: message\ndata: "))
	_, _ = r.w.Write(b)
	_, _ = r.w.Write([]byte("\n\n"))
	r.flush()
}

func (r *responder) flush() {
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
}

// finish writes the final response: as the last SSE event when streaming,
// else as a JSON body with status.
func (r *responder) finish(status int, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	if r.streaming {
		r.event(b, true)
		return
	}
	r.w.Header().Set("Content-Type", "application/json")
	r.w.WriteHeader(status)
	_, _ = r.w.Write(b)
}

// resumable reports whether a client that loses this stream can resume it:
// it is logged and has sent an event (with an id) already.
func (r *responder) resumable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log != nil && r.streaming
}
