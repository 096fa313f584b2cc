package taskstate

import (
	"crypto/rand"
	"encoding/base64"
)

// idBytes is the entropy of a task id: 128 bits.
const idBytes = 16

// idLen is the length of an id's text form (unpadded base64url of idBytes).
var idLen = base64.RawURLEncoding.EncodedLen(idBytes)

// NewID returns a task id of 128 bits from crypto/rand as URL-safe text.
func NewID() string {
	var b [idBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand panics on a broken source)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidID reports whether s has the shape of an id NewID makes, so junk
// never reaches Redis.
func ValidID(s string) bool {
	if len(s) != idLen {
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
