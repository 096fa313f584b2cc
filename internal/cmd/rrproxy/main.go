// Command rrproxy is a test-only round-robin HTTP proxy: each request goes
// to the next backend in turn, so consecutive MCP requests of one client
// land on different front ends. Responses stream through unbuffered (SSE).
//
//	rrproxy -addr 127.0.0.1:9000 http://127.0.0.1:8081 http://127.0.0.1:8082
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	flag.Parse()
	var backends []*httputil.ReverseProxy
	for _, b := range flag.Args() {
		u, err := url.Parse(b)
		if err != nil {
			log.Fatalf("backend %q: %v", b, err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.FlushInterval = -1
		// A fresh backend connection per request: a pooled one that the
		// backend is closing at the same moment cut a response short once
		// (the client saw "terminated"), and this proxy is for tests, not speed.
		p.Transport = &http.Transport{DisableKeepAlives: true}
		backend := b
		p.ModifyResponse = func(res *http.Response) error { // for the logs of a failed run
			if res.StatusCode >= 500 {
				log.Printf("%s %s %s: HTTP %d (Retry-After %q)", backend, res.Request.Method,
					res.Request.Header.Get("Mcp-Method"), res.StatusCode, res.Header.Get("Retry-After"))
			}
			return nil
		}
		p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			log.Printf("%s %s %s: proxy error: %v", backend, r.Method, r.Header.Get("Mcp-Method"), err)
			w.WriteHeader(http.StatusBadGateway)
		}
		backends = append(backends, p)
	}
	if len(backends) == 0 {
		log.Fatal("rrproxy: no backends")
	}
	var n atomic.Uint64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Full duplex: otherwise net/http closes the request body when the
		// response headers go out, the transport's last read of it (for
		// its EOF) fails, and an SSE response is cut short ("use of closed
		// network connection", golang/go#40747).
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			log.Printf("full duplex: %v", err)
		}
		backends[n.Add(1)%uint64(len(backends))].ServeHTTP(w, r)
	})
	log.Fatal(http.ListenAndServe(*addr, h))
}
