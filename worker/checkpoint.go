package worker

import "fmt"

// MaxCheckpointBytes bounds one checkpoint (its JSON). A checkpoint lives
// in the task record and is rewritten at every save, so it lists finished
// parts (segment names, page numbers, a crawl's frontier), never their
// data, which belongs in output files or a scratch folder.
const MaxCheckpointBytes = 1 << 20

// CheckpointTooLargeError is Call.SaveCheckpoint's refusal of a checkpoint
// over MaxCheckpointBytes: nothing is saved, the last checkpoint stays.
type CheckpointTooLargeError struct {
	// Size is the refused checkpoint's JSON size in bytes.
	Size int
}

func (e *CheckpointTooLargeError) Error() string {
	return fmt.Sprintf("checkpoint of %d bytes refused: over the %d-byte limit (worker.MaxCheckpointBytes); "+
		"keep a list of finished parts in it, not their data (docs/tools.md, \"Checkpoints\")", e.Size, MaxCheckpointBytes)
}
