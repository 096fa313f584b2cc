package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
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
	store := taskstate.New(rdb, taskstate.Options{Prefix: env("MCPQ_PREFIX", "")})
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

// runTasks prints the caller's own tasks from a front end's REST API
// (MCPQ_URL, MCPQ_API_KEY): mcpq tasks ls [--status S] [--limit N] | get ID.
func runTasks(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: mcpq tasks ls [--status S] [--limit N] | get ID")
	}
	base := strings.TrimSuffix(strings.TrimSuffix(env("MCPQ_URL", "http://127.0.0.1:8080"), "/mcp"), "/")
	switch args[0] {
	case "ls":
		fs := flag.NewFlagSet("tasks ls", flag.ExitOnError)
		status := fs.String("status", "", "only tasks in this status")
		limit := fs.Int("limit", 50, "tasks to show (1-500)")
		_ = fs.Parse(args[1:])
		q := url.Values{"limit": {fmt.Sprint(*limit)}}
		if *status != "" {
			q.Set("status", *status)
		}
		var page struct {
			Tasks      []proto.Task `json:"tasks"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := restGet(ctx, base+"/v1/tasks?"+q.Encode(), &page); err != nil {
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
	case "get":
		if len(args) != 2 {
			return errors.New("usage: mcpq tasks get ID")
		}
		var t json.RawMessage
		if err := restGet(ctx, base+"/v1/tasks/"+url.PathEscape(args[1]), &t); err != nil {
			return err
		}
		var pretty map[string]any
		_ = json.Unmarshal(t, &pretty)
		b, _ := json.MarshalIndent(pretty, "", "  ")
		fmt.Println(string(b))
	default:
		return fmt.Errorf("unknown tasks command %q (ls, get)", args[0])
	}
	return nil
}

func restGet(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if k := os.Getenv("MCPQ_API_KEY"); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
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
