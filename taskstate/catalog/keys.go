package catalog

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// Keys builds the catalog's Redis key and channel names, under the same
// prefix as the task records' (taskstate.Keys). None carries a principal's
// hash tag: the catalog is shared by every principal.
type Keys struct {
	// Prefix starts every name.
	Prefix string
}

// Entries maps Entry.Key (tool name, or kind:name) to its published
// definition (JSON Entry). Type: hash.
func (k Keys) Entries() string { return k.Prefix + "catalog" }

// serving says which catalog entries a live worker serves: member
// Entry.Key, score the unix ms until which the latest heartbeat of any
// worker serving it holds (serving.go). Type: sorted set.
func (k Keys) serving() string { return k.Prefix + "serving" }

// Lists is where catalog changes are announced; the payload is the list
// that changed (ListTools, ListPrompts, ListResources). Type: pub/sub channel.
func (k Keys) Lists() string { return k.Prefix + "lists" }

// ResourceUpdates is where resource changes are announced; the payload is
// the resource URI. Type: pub/sub channel.
func (k Keys) ResourceUpdates() string { return k.Prefix + "resource-updates" }

// resourceChange marks that the change named change of the resource uri
// was announced (AnnounceResourceChange). Type: string, with an expiry.
func (k Keys) resourceChange(uri, change string) string {
	return k.Prefix + "resource-change:" + change + ":" + uri
}

//go:embed resource_change.lua
var resourceChangeSource string

// resourceChangeScript runs resource_change.lua (its contract heads the file).
var resourceChangeScript = redis.NewScript(resourceChangeSource)

//go:embed serving.lua
var servingSource string

// servingScript runs serving.lua (its contract heads the file).
var servingScript = redis.NewScript(servingSource)

// workers holds each live worker's self-description: field the worker's
// name, value JSON WorkerInfo (workers.go). Type: hash.
func (k Keys) workers() string { return k.Prefix + "workers" }
