// Package catalog is mcpq's shared catalog in Redis: the entries workers
// publish (tools, prompts, resources, resource templates, completion
// handlers), which of them a live worker serves now, and the announcements
// front ends follow when either changes; with them the workers' leases
// (leases.go: which workers live, for the takeover scan) and the resources
// a task linked for its owner to read (grants.go). Its key names are built
// in keys.go and beside what uses them; its scripts are serving.lua and
// resource_change.lua. A taskstate.Store hands out the Catalog of its
// Redis and prefix (Store.Catalog).
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// UnlimitedTTL in Entry.TTLMs asks for tasks without expiry (ttlMs null),
// where the front end allows it.
const UnlimitedTTL = -1

// Catalog entry kinds. A tool has the empty kind; the others are run by
// workers exactly like tools (as jobs of task records named by Key) and
// served by the front end for prompts/get, resources/read and
// completion/complete.
const (
	KindTool       = ""
	KindPrompt     = "prompt"
	KindResource   = "resource"
	KindTemplate   = "template"
	KindCompletion = "completion"
)

// Entry is a catalog entry as workers publish it and front ends serve it:
// a tool, or a prompt, resource, resource template or completion handler.
type Entry struct {
	// Kind is KindTool (empty) or one of the other kinds.
	Kind string `json:"kind,omitempty"`
	// Tool is the tools/list entry (KindTool).
	Tool proto.Tool `json:"tool"`
	// Prompt is the prompts/list entry (KindPrompt).
	Prompt *proto.Prompt `json:"prompt,omitempty"`
	// Resource is the resources/list entry (KindResource).
	Resource *proto.Resource `json:"resource,omitempty"`
	// Template is the resources/templates/list entry (KindTemplate).
	Template *proto.ResourceTemplate `json:"template,omitempty"`
	// Policy is the execution policy (proto.PolicyAuto when empty).
	Policy proto.Policy `json:"policy,omitempty"`
	// SyncBudgetMs is how long an auto call waits before it becomes a task
	// (0: the front end's default).
	SyncBudgetMs int64 `json:"syncBudgetMs,omitempty"`
	// TTLMs is the task lifetime (0: the front end's default; UnlimitedTTL: null).
	TTLMs int64 `json:"ttlMs,omitempty"`
	// PollIntervalMs is the polling interval suggested to clients (0: default).
	PollIntervalMs int64 `json:"pollIntervalMs,omitempty"`
	// Queue is the asynq queue the tool's workers serve.
	Queue string `json:"queue"`
	// Price is what a call reserves where billing is on (proto.Price); nil:
	// the tool is free.
	Price *proto.Price `json:"price,omitempty"`
	// Scopes are the OAuth scopes a token must hold to list and call the
	// tool (docs/auth.md); API keys are not limited by scope. Empty: none.
	Scopes []string `json:"scopes,omitempty"`
	// Order is the entry's registration rank in its worker; listings are
	// sorted by Order, then Key.
	Order int `json:"order,omitempty"`
	// PublishedAt is when a worker last published the definition.
	PublishedAt time.Time `json:"publishedAt"`
	// ServedUntil is when the latest heartbeat of the workers serving the
	// entry runs out (Keys.serving; zero: no live worker). Tools fills it
	// in; it is not part of the published definition.
	ServedUntil time.Time `json:"-"`
}

// Served reports whether a live worker serves the entry at now.
func (d *Entry) Served(now time.Time) bool { return d.ServedUntil.After(now) }

// Key is the entry's catalog field and the tool name its jobs carry.
func (d *Entry) Key() string { return EntryKey(d.Kind, d.name()) }

func (d *Entry) name() string {
	switch {
	case d.Prompt != nil:
		return d.Prompt.Name
	case d.Resource != nil:
		return d.Resource.URI
	case d.Template != nil:
		return d.Template.URITemplate
	}
	return d.Tool.Name
}

// EntryKey is the catalog key of the entry of kind named name.
func EntryKey(kind, name string) string {
	if kind == KindTool {
		return name
	}
	return kind + ":" + name
}

// Catalog reads and writes the shared catalog. It is safe for concurrent use.
type Catalog struct {
	rdb  redis.UniversalClient
	keys Keys
	now  func() time.Time
}

// New returns the catalog under prefix on rdb; clock (time.Now when nil)
// stamps publications and decides which workers' time ran out.
func New(rdb redis.UniversalClient, prefix string, clock func() time.Time) *Catalog {
	if clock == nil {
		clock = time.Now
	}
	return &Catalog{rdb: rdb, keys: Keys{Prefix: prefix}, now: clock}
}

// Keys returns the key builder the catalog uses.
func (s *Catalog) Keys() Keys { return s.keys }

// Publish writes the definitions into the shared catalog, replacing
// earlier ones of the same name.
func (s *Catalog) Publish(ctx context.Context, defs []Entry) error {
	if len(defs) == 0 {
		return nil
	}
	now := s.now()
	args := make([]any, 0, 2*len(defs))
	for _, d := range defs {
		d.PublishedAt = now
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		args = append(args, d.Key(), b)
	}
	return s.rdb.HSet(ctx, s.keys.Entries(), args...).Err()
}

// Entry reads the catalog entry key (Entry.Key), with its ServedUntil;
// nil when none was published or it does not decode.
func (s *Catalog) Entry(ctx context.Context, key string) (*Entry, error) {
	v, err := s.rdb.HGet(ctx, s.keys.Entries(), key).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d Entry
	if json.Unmarshal([]byte(v), &d) != nil {
		return nil, nil
	}
	score, err := s.rdb.ZScore(ctx, s.keys.serving(), key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if err == nil {
		d.ServedUntil = time.UnixMilli(int64(score))
	}
	return &d, nil
}

// Entries reads the whole catalog (every kind), sorted by Order then Key,
// with each entry's ServedUntil. It holds every definition ever published
// (a call to a tool no live worker serves can still name its queue).
// Entries that do not decode are skipped.
func (s *Catalog) Entries(ctx context.Context) ([]Entry, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.Entries()).Result()
	if err != nil {
		return nil, err
	}
	served, err := s.servedUntil(ctx)
	if err != nil {
		return nil, err
	}
	defs := make([]Entry, 0, len(m))
	for _, v := range m {
		var d Entry
		if json.Unmarshal([]byte(v), &d) == nil && (d.name() != "" || d.Kind == KindCompletion) {
			d.ServedUntil = served[d.Key()]
			defs = append(defs, d)
		}
	}
	sort.Slice(defs, func(i, j int) bool {
		if defs[i].Order != defs[j].Order {
			return defs[i].Order < defs[j].Order
		}
		return defs[i].Key() < defs[j].Key()
	})
	return defs, nil
}

// List kinds announced on Keys.Lists when a worker changes the catalog.
const (
	ListTools     = "tools"
	ListPrompts   = "prompts"
	ListResources = "resources"
)

// AnnounceListChanged tells every front end that the list of kind changed.
func (s *Catalog) AnnounceListChanged(ctx context.Context, list string) error {
	return s.rdb.Publish(ctx, s.keys.Lists(), list).Err()
}

// AnnounceResourceUpdated tells every front end that the resource changed.
func (s *Catalog) AnnounceResourceUpdated(ctx context.Context, uri string) error {
	return s.rdb.Publish(ctx, s.keys.ResourceUpdates(), uri).Err()
}

// AnnounceResourceChange tells every front end that the resource changed,
// once per change: change names it (a version, a timestamp), and of the
// calls naming the same change of uri within keep, only the first
// announces it (announced reports whether this one did). So workers that
// all see one change (each watching the same upstream) announce it once.
func (s *Catalog) AnnounceResourceChange(ctx context.Context, uri, change string, keep time.Duration) (announced bool, err error) {
	n, err := resourceChangeScript.Run(ctx, s.rdb, []string{s.keys.resourceChange(uri, change)},
		uri, s.keys.ResourceUpdates(), max(keep.Milliseconds(), 1)).Int()
	if err != nil {
		return false, fmt.Errorf("catalog: announce a change of %s: %w", uri, err)
	}
	return n == 1, nil
}
