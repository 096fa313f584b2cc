package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/proto"
)

// term is the person at the terminal: a live progress line on stderr
// (rewritten in place on a terminal, one line per change otherwise) and
// questions read from stdin. Every method is safe for concurrent use.
type term struct {
	mu    sync.Mutex
	out   io.Writer // stderr
	tty   bool
	line  bool // a progress line is on screen (tty only)
	lines chan string
	eof   chan struct{}
	// prefix labels progress lines by task when several tasks share the terminal.
	prefix bool
}

func newTerm() *term {
	t := &term{out: os.Stderr, tty: isTerminal(os.Stderr), lines: make(chan string), eof: make(chan struct{})}
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			s, err := r.ReadString('\n')
			if s != "" || err == nil {
				t.lines <- strings.TrimRight(s, "\r\n")
			}
			if err != nil {
				close(t.eof)
				return
			}
		}
	}()
	return t
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress shows the state of task h.
func (t *term) progress(h *client.Handle, g *proto.GetTaskResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := string(g.Status)
	if g.StatusMessage != "" {
		msg += ": " + g.StatusMessage
	}
	if t.prefix || !t.tty {
		msg = fmt.Sprintf("[%s %s] %s", h.Tool, h.ID, msg)
	}
	if t.tty && !t.prefix {
		fmt.Fprintf(t.out, "\r\033[K%s", msg)
		t.line = true
		return
	}
	fmt.Fprintln(t.out, msg)
}

// say prints a line to stderr, after ending any progress line.
func (t *term) say(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endLine()
	fmt.Fprintf(t.out, format+"\n", args...)
}

func (t *term) endLine() {
	if t.line {
		fmt.Fprintln(t.out)
		t.line = false
	}
}

// ask prints a question and reads one line; io.EOF when stdin has ended.
// The caller holds no lock; questions are serialized by askMu.
func (t *term) ask(ctx context.Context, question string) (string, error) {
	t.mu.Lock()
	t.endLine()
	if t.tty {
		fmt.Fprint(t.out, question)
	} else {
		fmt.Fprintln(t.out, question) // whole lines for whatever reads a pipe
	}
	t.mu.Unlock()
	select {
	case s := <-t.lines:
		return strings.TrimSpace(s), nil
	case <-t.eof:
		return "", io.EOF
	case <-ctx.Done():
		fmt.Fprintln(t.out)
		return "", ctx.Err()
	}
}

var askMu sync.Mutex // one form at a time on the terminal

// input answers an input request at the terminal.
func (t *term) input(ctx context.Context, r client.InputRequest) (any, error) {
	askMu.Lock()
	defer askMu.Unlock()
	switch r.Method {
	case proto.MethodElicit:
		return t.elicit(ctx, r)
	case proto.MethodCreateMessage:
		var p proto.CreateMessageParams
		if err := json.Unmarshal(r.Params, &p); err != nil {
			return nil, err
		}
		t.say("The server asks for a model reply (%s) to:", r.Key)
		for _, m := range p.Messages {
			t.say("  %s: %s", m.Role, m.Content.Text)
		}
		s, err := t.ask(ctx, "reply: ")
		if err != nil {
			return nil, err
		}
		return proto.CreateMessageResult{Role: "assistant", Content: proto.ContentBlocks{proto.TextContent(s)}, Model: "human"}, nil
	case proto.MethodListRoots:
		wd, _ := os.Getwd()
		return proto.ListRootsResult{Roots: []proto.Root{{URI: "file://" + filepath.ToSlash(wd)}}}, nil
	}
	return nil, fmt.Errorf("cannot answer %s", r.Method)
}

// elicit fills an elicitation form at the terminal.
func (t *term) elicit(ctx context.Context, r client.InputRequest) (any, error) {
	var p proto.ElicitParams
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return nil, err
	}
	var schema struct {
		Properties map[string]struct {
			Type        string   `json:"type"`
			Title       string   `json:"title"`
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
			Default     any      `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(p.RequestedSchema, &schema)
	t.say("? %s", p.Message)
	choice, err := t.ask(ctx, "  [a]nswer, [d]ecline or [c]ancel? [a] ")
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(choice) {
	case "d", "decline":
		return proto.ElicitResult{Action: proto.ElicitDecline}, nil
	case "c", "cancel":
		return proto.ElicitResult{Action: proto.ElicitCancel}, nil
	}
	required := map[string]bool{}
	for _, n := range schema.Required {
		required[n] = true
	}
	content := map[string]any{}
	for _, name := range sortedNames(schema.Properties) {
		f := schema.Properties[name]
		label := name
		if f.Title != "" {
			label = f.Title
		}
		hint := f.Type
		if len(f.Enum) > 0 {
			hint = strings.Join(f.Enum, "|")
		} else if f.Type == "boolean" {
			hint = "y/n"
		}
		if f.Description != "" {
			hint += ", " + f.Description
		}
		if f.Default != nil {
			hint += fmt.Sprintf(", default %v", f.Default)
		}
		for {
			s, err := t.ask(ctx, fmt.Sprintf("  %s (%s): ", label, hint))
			if err != nil {
				return nil, err
			}
			if s == "" {
				if f.Default != nil {
					content[name] = f.Default
					break
				}
				if !required[name] {
					break
				}
				t.say("  %s is required", label)
				continue
			}
			v, err := fieldValue(f.Type, f.Enum, s)
			if err != nil {
				t.say("  %v", err)
				continue
			}
			content[name] = v
			break
		}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	return proto.ElicitResult{Action: proto.ElicitAccept, Content: b}, nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fieldValue parses the text s typed for a form field of type typ.
func fieldValue(typ string, enum []string, s string) (any, error) {
	switch typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("answer y or n")
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.New("a whole number, please")
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errors.New("a number, please")
		}
		return f, nil
	}
	if len(enum) > 0 {
		for _, e := range enum {
			if e == s {
				return s, nil
			}
		}
		return nil, fmt.Errorf("one of %s, please", strings.Join(enum, ", "))
	}
	return s, nil
}

// printResult writes a tool result: text to stdout, images and audio (and
// embedded blobs) to files in dir, named after the tool and task; it
// reports whether the result is a tool error.
func printResult(ctx context.Context, t *term, cl *client.Client, res *proto.CallToolResult, tool, id, dir string) (isError bool, err error) {
	stem := tool
	if stem == "" {
		stem = "result" // a task attached by id alone: its tool is not known
	}
	if id != "" {
		stem += "-" + safeName(id)
	}
	for i, c := range res.Content {
		switch c.Type {
		case "text":
			fmt.Println(c.Text)
		case "image", "audio":
			path, n, err := saveMedia(dir, fmt.Sprintf("%s-%d", stem, i), c.MimeType, c.Data)
			if err != nil {
				return res.IsError, err
			}
			t.say("saved %s %s (%d bytes) to %s", c.Type, c.MimeType, n, path)
		case "resource_link":
			if !strings.HasPrefix(c.MimeType, "image/") && !strings.HasPrefix(c.MimeType, "audio/") {
				fmt.Printf("%s %s\n", c.URI, c.Name)
				continue
			}
			// Media stored apart from the task (mcpq's large results): read it.
			rr, err := cl.ReadResource(ctx, c.URI)
			if err != nil {
				return res.IsError, fmt.Errorf("read %s: %w", c.URI, err)
			}
			for j, r := range rr.Contents {
				if err := saveContents(t, r, fmt.Sprintf("%s-%d-%d", stem, i, j), dir); err != nil {
					return res.IsError, err
				}
			}
		case "resource":
			var r proto.ResourceContents
			if err := json.Unmarshal(c.Resource, &r); err != nil {
				return res.IsError, err
			}
			if err := saveContents(t, r, fmt.Sprintf("%s-%d", stem, i), dir); err != nil {
				return res.IsError, err
			}
		}
	}
	if len(res.Content) == 0 && len(res.StructuredContent) > 0 {
		fmt.Println(string(res.StructuredContent))
	}
	return res.IsError, nil
}

// saveContents prints a text resource and saves a binary one.
func saveContents(t *term, r proto.ResourceContents, stem, dir string) error {
	switch {
	case r.Text != nil:
		fmt.Println(*r.Text)
	case r.Blob != nil:
		path, n, err := saveMedia(dir, stem, r.MimeType, *r.Blob)
		if err != nil {
			return err
		}
		t.say("saved %s (%s, %d bytes) to %s", r.URI, r.MimeType, n, path)
	}
	return nil
}

// safeName keeps the characters of s that are safe in a file name (an id
// may start with '-', which would read as a flag to other tools: prefix it).
func safeName(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch == '-' || ch == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

func saveMedia(dir, stem, mimeType, data string) (string, int, error) {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return "", 0, fmt.Errorf("undecodable %s data: %w", mimeType, err)
	}
	ext := ".bin"
	if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		ext = exts[0]
		for _, e := range exts {
			if strings.TrimPrefix(e, ".") == strings.TrimPrefix(mimeType[strings.IndexByte(mimeType, '/')+1:], "x-") {
				ext = e
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	path := filepath.Join(dir, stem+ext)
	return path, len(b), os.WriteFile(path, b, 0o644)
}
