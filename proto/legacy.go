package proto

import "encoding/json"

// What the modern server reads of the 2025-11-25 era: a dual-era server
// lists LegacyVersion among the versions it serves (server/discover,
// -32022), and a modern-only one refuses initialize with -32022 after
// checking its params (docs/eras.md). The era's own wire types live with
// the era, in frontend/internal/legacy.
const (
	// LegacyVersion is the handshake-era revision mcpq serves.
	LegacyVersion = "2025-11-25"
	// MethodInitialize opens a 2025-11-25 session.
	MethodInitialize = "initialize"
)

// InitializeParams are the params of initialize.
type InitializeParams struct {
	// ProtocolVersion is the latest revision the client speaks.
	ProtocolVersion string `json:"protocolVersion"`
	// Capabilities is what the client offers for the whole session.
	Capabilities json.RawMessage `json:"capabilities"`
	// ClientInfo names the client (unverified).
	ClientInfo *Implementation `json:"clientInfo"`
}
