package proto

import "encoding/json"

// TimeLayout is how mcpq writes the times of the wire (a task's
// createdAt and lastUpdatedAt, a ledger entry's at): ISO 8601 in UTC with
// milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// TaskStatus is the state of a task.
type TaskStatus string

// Task statuses. The last three are terminal.
const (
	StatusWorking       TaskStatus = "working"
	StatusInputRequired TaskStatus = "input_required"
	StatusCompleted     TaskStatus = "completed"
	StatusFailed        TaskStatus = "failed"
	StatusCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether no transition leaves s.
func (s TaskStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Task is the state every task carries.
type Task struct {
	// TaskID is the server-generated, unguessable id.
	TaskID string `json:"taskId"`
	// Status is the current status.
	Status TaskStatus `json:"status"`
	// StatusMessage is human-readable progress.
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt is the ISO 8601 creation time.
	CreatedAt string `json:"createdAt"`
	// LastUpdatedAt is the ISO 8601 time of the last change.
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is the lifetime from CreatedAt in ms; nil means unlimited (JSON null).
	TTLMs *int64 `json:"ttlMs"`
	// PollIntervalMs is the suggested polling interval in ms.
	PollIntervalMs *int64 `json:"pollIntervalMs,omitempty"`
}

// CreateTaskResult is the flat result that hands a task to the client.
type CreateTaskResult struct {
	ResultBase
	Task
}

// DetailedTask is a Task with the fields of its status variant: Result for
// completed, Error for failed, InputRequests for input_required.
type DetailedTask struct {
	Task
	// InputRequests lists every outstanding input request (input_required only).
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	// Result is exactly what the original request would have returned (completed only).
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the JSON-RPC error the request ended with (failed only).
	Error *Error `json:"error,omitempty"`
}

// GetTaskResult answers tasks/get.
type GetTaskResult struct {
	ResultBase
	DetailedTask
}

// TaskParams are the params of tasks/get and tasks/cancel.
type TaskParams struct {
	RequestParams
	// TaskID names the task.
	TaskID string `json:"taskId"`
}

// UpdateTaskParams are the params of tasks/update.
type UpdateTaskParams struct {
	RequestParams
	// TaskID names the task.
	TaskID string `json:"taskId"`
	// InputResponses maps input request keys to their answers.
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}
