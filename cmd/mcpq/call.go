package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/proto"
)

const clientUsage = `Client commands (MCPQ_URL, MCPQ_API_KEY, MCPQ_JOURNAL):
  mcpq call TOOL [key=value ...] [--json ARGS] [--detach] [--out DIR]
  mcpq task ls [--status S] [--limit N]
  mcpq task get|watch|cancel ID
  mcpq task answer ID [key=JSON ...]
  mcpq resume
Flags of every client command:
  --server URL    MCP endpoint (MCPQ_URL; default http://127.0.0.1:8080/mcp)
  --key KEY       API key sent as a bearer token (MCPQ_API_KEY); without one,
                  the OAuth token of mcpq login (or client credentials) is sent
  --tokens FILE   where OAuth tokens are kept (MCPQ_TOKENS; default
                  $XDG_CONFIG_HOME/mcpq/tokens.json, mode 0600)
  --client-id ID  OAuth client (MCPQ_OAUTH_CLIENT_ID); with a secret in
                  MCPQ_OAUTH_CLIENT_SECRET, tokens come by client credentials
  --scope S       OAuth scopes to ask for, space-separated (MCPQ_OAUTH_SCOPE)
  --journal DIR   where task ids are kept until their result is shown
                  (MCPQ_JOURNAL; default $XDG_STATE_HOME/mcpq/journal)
  --out DIR       where images and audio of results are saved (default .)
Values of key=value are JSON when they parse as JSON and the tool's schema
does not say string; anything else is a string. "--" ends the flags; an
argument that is not one of these flags (an id such as -Ab3...) is never
read as a flag.
`

// clientOpts are the flags of the client commands.
type clientOpts struct {
	server, key, journal, out, json string
	tokens, clientID, scope         string // OAuth (login.go)
	noBrowser                       bool   // of mcpq login
	detach                          bool
	status, limit                   string   // of task ls
	args                            []string // positional arguments
}

// parseClientArgs reads the client flags anywhere among args. Only the
// flags above are flags: any other argument, even one starting with '-'
// (task ids may), is positional; "--" makes the rest positional.
func parseClientArgs(args []string) (*clientOpts, error) {
	o := &clientOpts{
		server:   env("MCPQ_URL", "http://127.0.0.1:8080/mcp"),
		key:      os.Getenv("MCPQ_API_KEY"),
		journal:  os.Getenv("MCPQ_JOURNAL"),
		out:      ".",
		tokens:   os.Getenv("MCPQ_TOKENS"),
		clientID: os.Getenv("MCPQ_OAUTH_CLIENT_ID"),
		scope:    os.Getenv("MCPQ_OAUTH_SCOPE"),
	}
	values := map[string]*string{"server": &o.server, "key": &o.key, "journal": &o.journal, "out": &o.out, "json": &o.json,
		"status": &o.status, "limit": &o.limit, "tokens": &o.tokens, "client-id": &o.clientID, "scope": &o.scope}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.args = append(o.args, args[i+1:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		isFlag := strings.HasPrefix(a, "-") && a != "-"
		switch p, ok := values[name]; {
		case isFlag && ok:
			if !hasVal {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("flag --%s needs a value", name)
				}
				i++
				val = args[i]
			}
			*p = val
		case isFlag && name == "detach" && !hasVal:
			o.detach = true
		case isFlag && name == "no-browser" && !hasVal:
			o.noBrowser = true
		case isFlag && (name == "h" || name == "help"):
			return nil, flagHelp{}
		default:
			o.args = append(o.args, a)
		}
	}
	if o.journal == "" {
		state := os.Getenv("XDG_STATE_HOME")
		if state == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("no journal folder: set --journal or MCPQ_JOURNAL (%v)", err)
			}
			state = filepath.Join(home, ".local", "state")
		}
		o.journal = filepath.Join(state, "mcpq", "journal")
	}
	if o.tokens == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("no folder for OAuth tokens: set --tokens or MCPQ_TOKENS (%v)", err)
		}
		o.tokens = filepath.Join(dir, "mcpq", "tokens.json")
	}
	u, err := url.Parse(o.server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--server %q is not an http(s) URL", o.server)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	o.server = u.String()
	return o, nil
}

// notListing refuses the flags of mcpq task ls on the other commands.
func (o *clientOpts) notListing() error {
	if o.status != "" || o.limit != "" {
		return errors.New("--status and --limit are flags of mcpq task ls only")
	}
	return nil
}

// flagHelp asks for the usage text.
type flagHelp struct{}

func (flagHelp) Error() string { return clientUsage }

// newClient is the client of the CLI: Tasks declared, elicitation answered
// at the terminal, every task journaled.
func (o *clientOpts) newClient(t *term) *client.Client {
	c := &client.Client{
		URL:          o.server,
		Tasks:        true,
		Capabilities: proto.ClientCapabilities{Elicitation: json.RawMessage(`{"form":{}}`)},
		Info:         &proto.Implementation{Name: "mcpq-cli", Version: "0.1.0"},
		Journal:      &client.FileJournal{Dir: o.journal},
		Input:        t.input,
	}
	if o.key != "" {
		c.Header = http.Header{"Authorization": {"Bearer " + o.key}}
	} else {
		c.Auth = o.oauth(nil)
	}
	return c
}

// runCall is mcpq call TOOL [key=value ...] [--json ARGS] [--detach].
func runCall(ctx context.Context, args []string) error {
	o, err := parseClientArgs(args)
	if err != nil {
		return err
	}
	if err := o.notListing(); err != nil {
		return err
	}
	if len(o.args) == 0 {
		return errors.New("usage: mcpq call TOOL [key=value ...] [--json ARGS] [--detach]\n\n" + clientUsage)
	}
	t := newTerm()
	c := o.newClient(t)
	name := o.args[0]
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	var tool *proto.Tool
	var names []string
	for i := range tools {
		names = append(names, tools[i].Name)
		if tools[i].Name == name {
			tool = &tools[i]
		}
	}
	if tool == nil {
		return fmt.Errorf("no tool %q on %s (tools: %s)", name, o.server, strings.Join(names, ", "))
	}
	callArgs, err := toolArgs(tool.InputSchema, o.json, o.args[1:])
	if err != nil {
		return err
	}
	a, err := c.CallTool(ctx, name, callArgs)
	if err != nil {
		if a != nil && a.Task != nil {
			t.say("task %s was created but not journaled: %v", a.Task.TaskID, err)
			fmt.Println(a.Task.TaskID)
		}
		return err
	}
	if a.Result != nil {
		return resultErr(printResult(ctx, t, c, a.Result, name, "", o.out))
	}
	if a.Task == nil {
		return errors.New("the server asked for input this client could not give")
	}
	if o.detach {
		t.say("task %s started; follow it with: mcpq task watch -- %s (or mcpq resume)", a.Task.TaskID, a.Task.TaskID)
		fmt.Println(a.Task.TaskID)
		return nil
	}
	t.say("task %s (journaled: mcpq resume re-attaches if this process dies)", a.Task.TaskID)
	return follow(ctx, t, c, a.Handle, o.out)
}

// resultErr turns a tool error into the command's failure.
func resultErr(isError bool, err error) error {
	if err == nil && isError {
		return errors.New("the tool reported an error")
	}
	return err
}

// follow shows task h until it ends, then prints its result. Ctrl-C asks
// whether to cancel the task, detach from it (it keeps running and stays in
// the journal) or keep waiting.
func follow(ctx context.Context, t *term, c *client.Client, h *client.Handle, out string) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	for {
		fctx, cancel := context.WithCancel(ctx)
		type end struct {
			g   *proto.GetTaskResult
			err error
		}
		done := make(chan end, 1)
		go func() {
			g, err := h.Follow(fctx, func(g *proto.GetTaskResult) { t.progress(h, g) })
			done <- end{g, err}
		}()
		select {
		case e := <-done:
			cancel()
			if e.err != nil {
				return e.err
			}
			return finish(ctx, t, c, h, e.g, out)
		case <-sig:
			cancel()
			<-done
		case <-ctx.Done():
			cancel()
			<-done
			return ctx.Err()
		}
		// Ctrl-C: a second one while asking means detach.
		actx, acancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-sig:
				acancel()
			case <-actx.Done():
			}
		}()
		choice, err := t.ask(actx, fmt.Sprintf("task %s: [c]ancel it, [d]etach (it keeps running), or [w]ait on? [d] ", h.ID))
		acancel()
		switch {
		case err == nil && strings.HasPrefix(strings.ToLower(choice), "c"):
			if err := h.Cancel(ctx); err != nil {
				return err
			}
			t.say("cancel requested; waiting for the task to stop")
		case err == nil && strings.HasPrefix(strings.ToLower(choice), "w"):
		default:
			t.say("detached; task %s keeps running. Re-attach: mcpq task watch -- %s, or mcpq resume", h.ID, h.ID)
			return nil
		}
	}
}

// finish prints the outcome of a terminal task and drops it from the journal.
func finish(ctx context.Context, t *term, c *client.Client, h *client.Handle, g *proto.GetTaskResult, out string) error {
	res, err := client.Outcome(g)
	switch {
	case errors.Is(err, client.ErrCancelled):
		t.say("task %s cancelled", h.ID)
		err = h.Forget(ctx)
		if err == nil {
			err = client.ErrCancelled
		}
		return err
	case err != nil:
		t.say("task %s failed: %v", h.ID, err)
		_ = h.Forget(ctx)
		return err
	}
	t.say("task %s completed", h.ID)
	isErr, perr := printResult(ctx, t, c, res, h.Tool, h.ID, out)
	if perr != nil {
		return perr // keep the journal entry: the result was not delivered
	}
	if err := h.Forget(ctx); err != nil {
		return err
	}
	return resultErr(isErr, nil)
}

// toolArgs builds the arguments object from --json and key=value pairs
// (pairs win). A value is JSON when it parses as JSON and the schema does
// not declare the property a string.
func toolArgs(schema json.RawMessage, jsonArgs string, pairs []string) (map[string]any, error) {
	out := map[string]any{}
	if jsonArgs != "" {
		if err := json.Unmarshal([]byte(jsonArgs), &out); err != nil {
			return nil, fmt.Errorf("--json: not a JSON object: %v", err)
		}
	}
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value", p)
		}
		if string(s.Properties[k].Type) == `"string"` {
			out[k] = v
			continue
		}
		var j any
		if err := json.Unmarshal([]byte(v), &j); err == nil {
			out[k] = j
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// runTask is mcpq task get|watch|cancel|answer ID.
func runTask(ctx context.Context, args []string) error {
	o, err := parseClientArgs(args)
	if err != nil {
		return err
	}
	if len(o.args) > 0 && o.args[0] == "ls" {
		return listTasks(ctx, o)
	}
	if err := o.notListing(); err != nil {
		return err
	}
	if len(o.args) < 2 {
		return errors.New("usage: mcpq task ls [--status S] [--limit N] | get|watch|cancel ID | answer ID [key=JSON ...]\n\n" + clientUsage)
	}
	t := newTerm()
	c := o.newClient(t)
	verb, id := o.args[0], o.args[1]
	h := attach(ctx, c, id)
	switch verb {
	case "get":
		if len(o.args) != 2 {
			return errors.New("usage: mcpq task get ID")
		}
		g, err := h.Get(ctx)
		if err != nil {
			return err
		}
		b, _ := json.MarshalIndent(g, "", "  ")
		fmt.Println(string(b))
		return nil
	case "watch":
		return follow(ctx, t, c, h, o.out)
	case "cancel":
		if err := h.Cancel(ctx); err != nil {
			return err
		}
		t.say("cancel requested for task %s", id)
		return nil
	case "answer":
		return answer(ctx, t, c, h, o.args[2:])
	}
	return fmt.Errorf("unknown task command %q (ls, get, watch, cancel, answer)", verb)
}

// attach is a handle on id with the answers the journal holds for it.
func attach(ctx context.Context, c *client.Client, id string) *client.Handle {
	var answered map[string]json.RawMessage
	tool := ""
	if e, ok, err := c.Journal.Get(ctx, c.URL, id); err == nil && ok {
		answered, tool = e.Answers, e.Tool
	}
	return c.Attach(id, tool, answered)
}

// answer sends tasks/update: the key=JSON pairs given, or else the pending
// requests answered at the terminal. Each answer is journaled first.
func answer(ctx context.Context, t *term, c *client.Client, h *client.Handle, pairs []string) error {
	responses := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !json.Valid([]byte(v)) {
			return fmt.Errorf("answer %q is not key=JSON", p)
		}
		responses[k] = json.RawMessage(v)
	}
	if len(responses) == 0 {
		g, err := h.Get(ctx)
		if err != nil {
			return err
		}
		if g.Status != proto.StatusInputRequired || len(g.InputRequests) == 0 {
			return fmt.Errorf("task %s is %s and asks for nothing", h.ID, g.Status)
		}
		for _, key := range sortedNames(g.InputRequests) {
			var r struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal(g.InputRequests[key], &r); err != nil {
				return err
			}
			v, err := t.input(ctx, client.InputRequest{Key: key, Method: r.Method, Params: r.Params})
			if err != nil {
				return err
			}
			responses[key] = v
		}
	}
	for k, v := range responses {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := c.Journal.Answer(ctx, c.URL, h.ID, k, b); err != nil {
			return err
		}
	}
	if _, err := c.UpdateTask(ctx, h.ID, responses); err != nil {
		return err
	}
	t.say("answered %d input request(s) of task %s", len(responses), h.ID)
	return nil
}

// runResume is mcpq resume: every unfinished task of the journal, followed
// at once (input asked at the terminal, one form at a time), each result
// printed as it ends.
func runResume(ctx context.Context, args []string) error {
	o, err := parseClientArgs(args)
	if err != nil {
		return err
	}
	if err := o.notListing(); err != nil {
		return err
	}
	if len(o.args) != 0 {
		return errors.New("usage: mcpq resume")
	}
	t := newTerm()
	t.prefix = true
	c := o.newClient(t)
	hs, err := c.Resume(ctx)
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		t.say("no tasks to resume on %s", o.server)
		return nil
	}
	t.say("resuming %d task(s) on %s", len(hs), o.server)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := h.Follow(ctx, func(g *proto.GetTaskResult) { t.progress(h, g) })
			mu.Lock() // results one at a time
			defer mu.Unlock()
			if err == nil {
				err = finish(ctx, t, c, h, g, o.out)
			} else if errors.Is(err, client.ErrTaskGone) {
				_ = h.Forget(ctx)
			}
			if err != nil {
				t.say("task %s: %v", h.ID, err)
				failed = append(failed, h.ID)
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d task(s) did not complete: %s", len(failed), len(hs), strings.Join(failed, " "))
	}
	return nil
}
