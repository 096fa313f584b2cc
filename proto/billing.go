package proto

// _meta keys of mcpq's billing (docs/billing.md).
const (
	// MetaReceipt is, in a finished task's result _meta, the task's billing
	// receipt: {reserved, charged, released, usage, capped?, entries}.
	MetaReceipt = "io.mcpq/receipt"
	// MetaFunds is, in the tool error that refuses a call the caller's
	// balance does not cover, {needed, available}.
	MetaFunds = "io.mcpq/funds"
	// MetaIdempotencyKey in a tools/call request's _meta (or the
	// Idempotency-Key header) makes a retry of the call within the key's
	// TTL answer the task the first call made, reserving nothing again.
	MetaIdempotencyKey = "io.mcpq/idempotencyKey"
)
