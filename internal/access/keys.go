package access

import "github.com/mcpq/mcpq/taskstate"

// keys builds the Redis key names of this package, under the same prefix
// as the task keys of taskstate (taskstate.Options.Prefix), with the same
// hash-tag rule: a name that belongs to one principal carries its owner tag
// in braces, so it shares a Redis Cluster slot with the principal's other
// keys.
type keys struct{ prefix string }

// apiKeys maps the SHA-256 (hex) of a managed API key to its KeyInfo
// (JSON). Only hashes are stored. Type: hash.
func (k keys) apiKeys() string { return k.prefix + "{apikeys}:by-hash" }

// apiKeyIDs maps a managed key's public id to the SHA-256 of the key, for
// listing and revocation. Type: hash (same slot as apiKeys).
func (k keys) apiKeyIDs() string { return k.prefix + "{apikeys}:by-id" }

// rate is one principal's request token bucket (fields tokens, ts). Type: hash.
func (k keys) rate(principal string) string {
	return k.prefix + "{" + taskstate.OwnerTag(principal) + "}:rate"
}
