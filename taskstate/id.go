package taskstate

import (
	"crypto/rand"
	"encoding/base64"
)

// idBytes is the random part of a task id: 17 bytes, of which the top bit
// of the first is cleared, so 135 bits of entropy.
const idBytes = 17

// idLen is the length of an id's text form (unpadded base64url of idBytes).
var idLen = base64.RawURLEncoding.EncodedLen(idBytes)

// legacyIDLen is the length of the ids mcpq made before (16 bytes, any
// first character); they stay valid, so tasks created by an older front end
// during a rolling upgrade live out their TTL.
var legacyIDLen = base64.RawURLEncoding.EncodedLen(16)

// NewID returns a task id of 135 bits from crypto/rand as URL-safe text
// (23 characters). Its first character is a letter (A-Z or a-f: the first
// byte's top bit is clear), never '-' or '_', so no command line reads an
// id as a flag.
func NewID() string {
	var b [idBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand panics on a broken source)
	b[0] &= 0x7f
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidID reports whether s has the shape of an id NewID makes (or made
// before, see legacyIDLen), so junk never reaches Redis.
func ValidID(s string) bool {
	switch len(s) {
	case idLen:
		if c := s[0]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'f') {
			return false
		}
	case legacyIDLen:
	default:
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}
