package redistest

import "syscall"

// Freeze stops the process with SIGSTOP: its connections stay open and
// nothing answers, as when its host stalls. Kill (the test's cleanup)
// ends a frozen process too.
func (s *Server) Freeze() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Thaw resumes a frozen process (SIGCONT).
func (s *Server) Thaw() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}
