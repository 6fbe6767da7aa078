package main

import (
	"testing"

	"github.com/speech-infra/speech-infra/internal/cliflags/cliflagstest"
)

// A user reads the help, not the project's internal issue tracker: no help text of any command cites an issue
// number; it states the fact or rule instead.
func TestHelpCitesNoIssueNumbers(t *testing.T) {
	cliflagstest.CheckHelpCitesNoIssueNumbers(t, newApp, "tts-bench qmax --help")
}
