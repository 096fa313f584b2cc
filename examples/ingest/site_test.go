package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// pageCount is how many pages of the test site may be indexed: the front
// page, the numbered pages and the PDF.
const (
	numbered  = 38
	pageCount = 1 + numbered + 1
)

// pdfPhrase is a sentence only the site's PDF holds.
const pdfPhrase = "quarterly turbine maintenance schedule"

// site is a web site on loopback: a front page linking to numbered pages
// (each linking on to the next), a PDF, a 404, a page robots.txt
// disallows and links off the host. It counts the GETs of each path and
// can change a page's text or hold pages until released.
type site struct {
	URL  string
	mu   sync.Mutex
	gets map[string]int
	cond map[string]int // conditional GETs answered 304
	text map[string]string
	gate chan struct{} // closed: pages are served; open: pages from holdFrom wait
	hold int           // numbered pages from this one wait for the gate (0: none)
	// held is closed when the first request held by holdFrom arrives.
	held chan struct{}
	srv  *http.Server
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{gets: map[string]int{}, cond: map[string]int{}, text: map[string]string{}, gate: make(chan struct{})}
	close(s.gate)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.release(); s.srv.Shutdown(context.Background()) })
	return s
}

// holdFrom makes numbered pages from n on wait until release.
func (s *site) holdFrom(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.gate, s.held = n, make(chan struct{}), make(chan struct{})
}

// reached waits until a request for a held page arrived (holdFrom).
func (s *site) reached(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	select {
	case <-held:
	case <-time.After(2 * time.Minute): // a hang, not a verdict on speed
		t.Fatal("no request reached a held page")
	}
}

func (s *site) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.gate:
	default:
		close(s.gate)
	}
}

// setText changes what page n says.
func (s *site) setText(n int, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text[fmt.Sprintf("/p/%d", n)] = text
}

func (s *site) counts() (gets, cond map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gets, cond = map[string]int{}, map[string]int{}
	for k, v := range s.gets {
		gets[k] = v
	}
	for k, v := range s.cond {
		cond[k] = v
	}
	return gets, cond
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.gets[r.URL.Path]++
	gate, hold, held := s.gate, s.hold, s.held
	s.mu.Unlock()
	var n int
	if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &n); err == nil && hold > 0 && n >= hold {
		s.mu.Lock()
		select {
		case <-held:
		default:
			close(held)
		}
		s.mu.Unlock()
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if r.URL.Path == "/away" {
		http.Redirect(w, r, "http://10.0.0.1/elsewhere", http.StatusFound)
		return
	}
	body, ctype, ok := s.page(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	etag := fmt.Sprintf(`"%x"`, sha256.Sum256(body))
	if r.Header.Get("If-None-Match") == etag {
		s.mu.Lock()
		s.cond[r.URL.Path]++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", ctype)
	w.Write(body)
}

// page is what path serves (/away redirects off the host).
func (s *site) page(path string) ([]byte, string, bool) {
	html := func(title, body string) ([]byte, string, bool) {
		return []byte("<!doctype html><html><head><title>" + title + "</title><style>.x{color:red}</style>" +
			"<script>var hidden = 'scriptword';</script></head><body>" + body + "</body></html>"), "text/html; charset=utf-8", true
	}
	switch path {
	case "/robots.txt":
		return []byte("User-agent: *\nDisallow: /private/\n"), "text/plain", true
	case "/":
		return html("Front page", `<h1>Welcome</h1><p>frontword</p><a href="/p/1">first</a> <a href="p/20#top">twenty</a>
			<a href="/doc.pdf">the report</a> <a href="/missing">gone</a> <a href="/private/secret">secret</a> <a href="/away">away</a>
			<a href="http://10.0.0.1/admin">internal</a> <a href="http://example.invalid/">elsewhere</a>
			<a href="mailto:a@example.com">mail</a>`)
	case "/private/secret":
		return html("Secret", "<p>secretword</p>")
	case "/doc.pdf":
		return makePDF("Annual report", "The "+pdfPhrase+" is attached.", "pdfonlyword"), "application/pdf", true
	}
	var n int
	if _, err := fmt.Sscanf(path, "/p/%d", &n); err != nil || n < 1 || n > numbered || path != fmt.Sprintf("/p/%d", n) {
		return nil, "", false
	}
	s.mu.Lock()
	text, ok := s.text[path]
	s.mu.Unlock()
	if !ok {
		text = fmt.Sprintf("marker%04d is the word of page %d.", n, n)
	}
	next := ""
	if n < numbered {
		next = fmt.Sprintf(`<a href="/p/%d">next</a> <a href="/">home</a>`, n+1)
	}
	return html(fmt.Sprintf("Page %d", n), "<p>"+text+"</p>"+next)
}

// makePDF writes a one-page PDF of lines (Helvetica), with its xref.
func makePDF(lines ...string) []byte {
	var content strings.Builder
	content.WriteString("BT /F1 14 Tf 72 720 Td")
	for i, l := range lines {
		if i > 0 {
			content.WriteString(" 0 -20 Td")
		}
		fmt.Fprintf(&content, " (%s) Tj", l)
	}
	content.WriteString(" ET")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", content.Len(), content.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}
