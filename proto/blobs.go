package proto

import (
	"strconv"
	"strings"
)

// Payloads mcpq keeps in its object store instead of the task record
// (docs/tools.md, "Large results") are named by an mcpq URI readable with
// resources/read by the task's owner: mcpq://tasks/<task id>/blobs/<name>.
const blobURIPrefix = "mcpq://tasks/"

// _meta keys of a resource_link to a stored payload.
const (
	// MetaSignedURL is a URL that reads the payload without credentials
	// until MetaSignedURLExpires (present when the store can sign URLs).
	MetaSignedURL = "io.mcpq/signedUrl"
	// MetaSignedURLExpires is when MetaSignedURL stops working (RFC 3339).
	MetaSignedURLExpires = "io.mcpq/signedUrlExpiresAt"
)

// BlobURI is the URI of stored payload name of task id.
func BlobURI(taskID, name string) string {
	return blobURIPrefix + taskID + "/blobs/" + name
}

// IsBlobURI reports whether uri is in mcpq's stored-payload namespace
// (well-formed or not): such URIs are never catalog resources.
func IsBlobURI(uri string) bool { return strings.HasPrefix(uri, blobURIPrefix) }

// ParseBlobURI splits a BlobURI into its task id and payload name; ok is
// false unless uri has exactly that shape with a name of the form
// <attempt>.<index> (decimal numbers).
func ParseBlobURI(uri string) (taskID, name string, ok bool) {
	rest, found := strings.CutPrefix(uri, blobURIPrefix)
	if !found {
		return "", "", false
	}
	taskID, name, found = strings.Cut(rest, "/blobs/")
	if !found || taskID == "" || strings.Contains(taskID, "/") {
		return "", "", false
	}
	a, n, found := strings.Cut(name, ".")
	if !found || !decimal(a) || !decimal(n) {
		return "", "", false
	}
	return taskID, name, true
}

// decimal reports whether s is a non-negative decimal number without
// sign or leading zeros.
func decimal(s string) bool {
	if s == "" || len(s) > 18 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}
