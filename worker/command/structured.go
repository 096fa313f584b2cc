package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpq/mcpq/proto"
)

// envStructured names the file a program may write its structured result
// to (a JSON object), which becomes the result's structuredContent.
const envStructured = "MCPQ_STRUCTURED"

// maxStructuredBytes bounds the structured result: it stays inline in the
// task record (docs/tools.md, "Large results"), so it is data about the
// result (a duration, a size, per-page confidences), never the payload.
const maxStructuredBytes = 1 << 20

// outputSchema is a spec's resolved outputSchema (nil: none declared).
type outputSchema struct{ resolved *jsonschema.Resolved }

// compileOutputSchema checks that raw is a JSON Schema of an object and
// resolves it for validation; an empty raw is no schema.
func compileOutputSchema(raw json.RawMessage) (outputSchema, error) {
	if len(raw) == 0 {
		return outputSchema{}, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return outputSchema{}, fmt.Errorf("not a JSON Schema: %v", err)
	}
	if s.Type != "object" {
		return outputSchema{}, errors.New(`"type" must be "object": structuredContent is an object`)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return outputSchema{}, fmt.Errorf("not a usable JSON Schema: %v", err)
	}
	return outputSchema{resolved: r}, nil
}

// addStructured reads the program's structured result file into res. A
// missing file is no structured result, unless the tool declares an
// outputSchema (then the program owes one); a file that is not a JSON
// object, is too large or does not match the schema is an error naming why.
func (o outputSchema) addStructured(res *proto.CallToolResult, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if o.resolved != nil {
			return fmt.Errorf("the tool declares an outputSchema but the program wrote no structured result to $%s", envStructured)
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStructuredBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxStructuredBytes {
		return fmt.Errorf("$%s holds more than %d bytes; structuredContent stays in the task record, so keep the payload in output files", envStructured, maxStructuredBytes)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return fmt.Errorf("$%s does not hold a JSON object", envStructured)
	}
	if o.resolved != nil {
		if err := o.resolved.Validate(obj); err != nil {
			return fmt.Errorf("the structured result does not match the tool's outputSchema: %v", err)
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return fmt.Errorf("$%s: %v", envStructured, err)
	}
	res.StructuredContent = buf.Bytes()
	return nil
}
