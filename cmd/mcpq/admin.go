package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpq/mcpq/internal/access"
	"github.com/mcpq/mcpq/proto"
)

// runKeys manages API keys stored (as hashes) in Redis:
// mcpq keys create PRINCIPAL | list | revoke ID.
func runKeys(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: mcpq keys create PRINCIPAL | list | revoke ID")
	}
	rdb, err := redisClient()
	if err != nil {
		return err
	}
	defer rdb.Close()
	store := access.New(rdb, env("MCPQ_PREFIX", ""), nil)
	switch args[0] {
	case "create":
		if len(args) != 2 {
			return errors.New("usage: mcpq keys create PRINCIPAL")
		}
		key, info, err := store.CreateKey(ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Printf("%s\n", key)
		fmt.Fprintf(os.Stderr, "created key %s for %s; it is shown this once, keep it now\n", info.ID, info.Principal)
	case "list":
		keys, err := store.ListKeys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPRINCIPAL\tCREATED")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.ID, k.Principal, k.CreatedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	case "revoke":
		if len(args) != 2 {
			return errors.New("usage: mcpq keys revoke ID")
		}
		if err := store.RevokeKey(ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "revoked key %s\n", args[1])
	default:
		return fmt.Errorf("unknown keys command %q (create, list, revoke)", args[0])
	}
	return nil
}

// listTasks is mcpq task ls [--status S] [--limit N]: the caller's own
// tasks, newest first, from the front end's REST index (GET /v1/tasks;
// there is no tasks/list on the wire), with the client commands' --server
// and --key.
func listTasks(ctx context.Context, o *clientOpts) error {
	if len(o.args) != 1 {
		return errors.New("usage: mcpq task ls [--status S] [--limit N]")
	}
	q := url.Values{"limit": {"50"}}
	if o.limit != "" {
		n, err := strconv.Atoi(o.limit)
		if err != nil || n < 1 || n > 500 {
			return fmt.Errorf("--limit %q: want a number from 1 to 500", o.limit)
		}
		q.Set("limit", o.limit)
	}
	if o.status != "" {
		q.Set("status", o.status)
	}
	var page struct {
		Tasks      []proto.Task `json:"tasks"`
		NextCursor string       `json:"nextCursor"`
	}
	base := strings.TrimSuffix(strings.TrimSuffix(o.server, "/mcp"), "/")
	key := o.key
	if key == "" { // the OAuth token of mcpq login, if any
		var err error
		if key, err = o.oauth(nil).Token(ctx); err != nil {
			return err
		}
	}
	if err := restGet(ctx, base+"/v1/tasks?"+q.Encode(), key, &page); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATUS\tCREATED\tMESSAGE")
	for _, t := range page.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.TaskID, t.Status, t.CreatedAt, t.StatusMessage)
	}
	if page.NextCursor != "" {
		fmt.Fprintf(tw, "(more: raise --limit)\t\t\t\n")
	}
	return tw.Flush()
}

// restGet GETs u from a front end's REST API with key as the bearer token
// and decodes the JSON answer into out.
func restGet(ctx context.Context, u, key string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return fmt.Errorf("%s: HTTP %d: %s", u, resp.StatusCode, e.Error)
	}
	return json.Unmarshal(b, out)
}
