package proto_test

import (
	"testing"

	"github.com/mcpq/mcpq/proto"
)

func TestParseBlobURI(t *testing.T) {
	id := "AAAAAAAAAAAAAAAAAAAAAA"
	for _, tc := range []struct {
		uri      string
		id, name string
		ok       bool
	}{
		{proto.BlobURI(id, "1.0"), id, "1.0", true},
		{proto.BlobURI(id, "12.345"), id, "12.345", true},
		{"mcpq://tasks/" + id + "/blobs/1", "", "", false},
		{"mcpq://tasks/" + id + "/blobs/1.0/x", "", "", false},
		{"mcpq://tasks/" + id + "/blobs/01.0", "", "", false},
		{"mcpq://tasks/" + id + "/blobs/-1.0", "", "", false},
		{"mcpq://tasks/" + id + "/blobs/../1.0", "", "", false},
		{"mcpq://tasks//blobs/1.0", "", "", false},
		{"mcpq://tasks/a/b/blobs/1.0", "", "", false},
		{"mcpq://tasks/" + id, "", "", false},
		{"file:///etc/passwd", "", "", false},
	} {
		id, name, ok := proto.ParseBlobURI(tc.uri)
		if id != tc.id || name != tc.name || ok != tc.ok {
			t.Errorf("ParseBlobURI(%q) = %q %q %v, want %q %q %v", tc.uri, id, name, ok, tc.id, tc.name, tc.ok)
		}
	}
}
