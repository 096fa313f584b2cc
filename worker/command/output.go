package command

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// MaxResultBytes bounds what one run may return inline: the files of the
// output folder kept in the result together, or stdout. A run over it is a
// tool error. With the worker's object store, files over its inline limit
// go there from disk instead (StoreFile) and count against no bound.
const MaxResultBytes = 16 << 20

// OutputURIPrefix starts the uri of a resource block made from an output
// file (followed by its slash-separated path in the output folder).
const OutputURIPrefix = "output:///"

// mimeTypes are the types this package knows by extension, before the
// system's table (which differs between machines).
var mimeTypes = map[string]string{
	".txt": "text/plain", ".md": "text/markdown", ".csv": "text/csv", ".html": "text/html",
	".json": "application/json", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp", ".svg": "image/svg+xml", ".wav": "audio/wav",
	".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".flac": "audio/flac", ".mp4": "video/mp4",
	".pdf": "application/pdf",
}

// mimeType is the media type of an output file, from its extension.
func mimeType(name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	if t, ok := mimeTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		t, _, _ = strings.Cut(t, ";")
		return t
	}
	return "application/octet-stream"
}

// collect builds the result of a run that exited 0: one content block per
// file of the output folder (in path order), else stdout as one text block.
func collect(name string, d runDir, st fileStore) (*proto.CallToolResult, error) {
	res, err := collectFiles(name, d, st)
	if err != nil || len(res.Content) > 0 {
		return res, err
	}
	f, err := os.Open(d.stdout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxResultBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > MaxResultBytes {
		return nil, fmt.Errorf("%s: stdout holds more than %d bytes", name, MaxResultBytes)
	}
	if len(b) > 0 {
		res.Content = append(res.Content, proto.TextContent(strings.ToValidUTF8(string(b), "\uFFFD")))
	}
	return res, nil
}

// fileStore streams an output file to the object store as content block
// index (Call.StoreFile); limit is the size over which a file goes there,
// and a nil fileStore keeps every file inline.
type fileStore struct {
	limit int64
	links []string // Spec.Links: files stored whatever their size
	put   func(index int, path, name, mime string) (proto.Content, error)
}

// newFileStore is c's object store for output files, if its worker has one.
func newFileStore(ctx context.Context, c *worker.Call, links []string) fileStore {
	n, ok := c.InlineMaxBytes()
	if !ok {
		return fileStore{}
	}
	// Binary blocks are base64 in the record: a file of 3/4 of the
	// limit is already over it.
	return fileStore{limit: int64(n) * 3 / 4, links: links, put: func(index int, path, name, mime string) (proto.Content, error) {
		return c.StoreFile(ctx, index, path, name, mime)
	}}
}

// stores says whether the output file rel (slash-separated) of size
// bytes goes to the object store.
func (st fileStore) stores(rel string, size int64) bool {
	if st.put == nil {
		return false
	}
	if size > st.limit {
		return true
	}
	for _, p := range st.links {
		target := rel
		if !strings.Contains(p, "/") {
			target = path.Base(rel)
		}
		if ok, _ := path.Match(p, target); ok {
			return true
		}
	}
	return false
}

// outFile is one file of the output folder.
type outFile struct {
	path string
	size int64
}

// collectFiles is one content block per file of the output folder, in
// path order: a file over st's limit is streamed to the object store and
// is a resource_link, the others are inline.
func collectFiles(name string, d runDir, st fileStore) (*proto.CallToolResult, error) {
	var files []outFile
	total := int64(0)
	err := filepath.WalkDir(d.out, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(d.out, p); !st.stores(filepath.ToSlash(rel), fi.Size()) {
			if total += fi.Size(); total > MaxResultBytes {
				return fmt.Errorf("the output folder holds more than %d bytes to return inline (the worker has no object store for large files)", MaxResultBytes)
			}
		}
		files = append(files, outFile{p, fi.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res := &proto.CallToolResult{Content: []proto.Content{}}
	for i, f := range files {
		rel, _ := filepath.Rel(d.out, f.path)
		rel = filepath.ToSlash(rel)
		if st.stores(rel, f.size) {
			link, err := st.put(i, f.path, rel, mimeType(rel))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			res.Content = append(res.Content, link)
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		res.Content = append(res.Content, fileContent(rel, b))
	}
	return res, nil
}

// fileContent is the content block of one output file: text for text
// (and JSON) in UTF-8, image or audio for those types, an embedded
// resource otherwise.
func fileContent(rel string, b []byte) proto.Content {
	t := mimeType(rel)
	textual := textType(t) && utf8.Valid(b)
	switch {
	case textual && (strings.HasPrefix(t, "text/") || t == "application/json"):
		return proto.TextContent(string(b))
	case strings.HasPrefix(t, "image/") && !textual:
		return proto.Content{Type: "image", MimeType: t, Data: base64.StdEncoding.EncodeToString(b)}
	case strings.HasPrefix(t, "audio/"):
		return proto.Content{Type: "audio", MimeType: t, Data: base64.StdEncoding.EncodeToString(b)}
	}
	rc := proto.ResourceContents{URI: OutputURIPrefix + escapePath(rel), MimeType: t}
	if textual {
		s := string(b)
		rc.Text = &s
	} else {
		s := base64.StdEncoding.EncodeToString(b)
		rc.Blob = &s
	}
	raw, _ := json.Marshal(rc) // strings and pointers to strings: cannot fail
	return proto.Content{Type: "resource", Resource: raw}
}

// textType says whether files of media type t hold text.
func textType(t string) bool {
	return strings.HasPrefix(t, "text/") || t == "application/json" || t == "application/xml" ||
		strings.HasSuffix(t, "+xml") || strings.HasSuffix(t, "+json")
}

// escapePath escapes each segment of a slash-separated path for a URI.
func escapePath(rel string) string {
	parts := strings.Split(path.Clean(rel), "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
