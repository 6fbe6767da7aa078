package cloud

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// RenderDrift writes a drift report in format: one JSON document ("json"), or one block per finding and a
// summary line for people.
func RenderDrift(w io.Writer, format string, rep DriftReport) error {
	if format == "json" {
		return renderDriftJSON(w, rep)
	}
	return renderDriftTable(w, rep)
}

// RenderValidation writes validate's checks of endpoint against plan in format: one JSON document ("json"),
// or a table for people.
func RenderValidation(w io.Writer, format, endpoint, plan string, checks []Check) error {
	if format == "json" {
		return renderValidateJSON(w, endpoint, plan, checks)
	}
	return renderValidateTable(w, endpoint, plan, checks)
}

// RenderThaw writes what a thaw of endpoint did in format: one JSON object ("json"), or lines for people.
// failed is the error that stopped the thaw, nil when none.
func RenderThaw(w io.Writer, format, endpoint string, res ThawResult, failed error) error {
	if format == "json" {
		return renderThawJSON(w, endpoint, res, failed)
	}
	return renderThaw(w, endpoint, res, failed)
}

// renderDriftJSON writes the report as one JSON document.
func renderDriftJSON(w io.Writer, rep DriftReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		DriftReport
		Clean bool `json:"clean"`
	}{rep, rep.Clean()})
}

// renderDriftTable writes one block per finding (severity, code, subject, detail, then the remediation) and
// a summary line.
func renderDriftTable(w io.Writer, rep DriftReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "drift of %s/%s against %s\n", rep.Endpoint, rep.Variant, rep.Expected)
	counts := map[Severity]int{}
	for _, f := range rep.Findings {
		counts[f.Severity]++
		fmt.Fprintf(&b, "%-5s  %s  %s\n       %s\n", f.Severity, f.Code, f.Subject, f.Detail)
		if f.Remediation != "" {
			fmt.Fprintf(&b, "       fix: %s\n", f.Remediation)
		}
	}
	verdict := "clean"
	if !rep.Clean() {
		verdict = "drifted"
	}
	fmt.Fprintf(&b, "%s: %d error, %d warn, %d info\n", verdict, counts[SeverityError], counts[SeverityWarn], counts[SeverityInfo])
	_, err := io.WriteString(w, b.String())
	return err
}

// renderValidateJSON writes the checks as one JSON document, with whether they all pass.
func renderValidateJSON(w io.Writer, endpoint, plan string, checks []Check) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Endpoint string  `json:"endpoint"`
		Plan     string  `json:"plan"`
		Pass     bool    `json:"pass"`
		Failed   int     `json:"failed"`
		Checks   []Check `json:"checks"`
	}{endpoint, plan, Failed(checks) == 0, Failed(checks), checks})
}

// renderValidateTable writes one row per check and how many passed.
func renderValidateTable(w io.Writer, endpoint, plan string, checks []Check) error {
	fmt.Fprintf(w, "validate %s against %s\n", endpoint, plan)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tRESOURCE\tCHECK\tPLANNED\tDEPLOYED")
	for _, c := range checks {
		r := "pass"
		if !c.Pass {
			r = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r, c.Subject, c.Name, c.Planned, c.Deployed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d checks passed\n", len(checks)-Failed(checks), len(checks))
	return err
}

// renderThaw says where the state came from, each change, each note, and "nothing changed" when nothing did.
// A thaw that stopped on an error (failed) changed nothing it knows of, but it cannot say the endpoint is as it
// should be: it says so instead, and the error follows on stderr.
func renderThaw(w io.Writer, endpoint string, res ThawResult, failed error) error {
	var b strings.Builder
	if res.Journal != nil {
		fmt.Fprintf(&b, "thaw %s: restoring from the journal %s (run %s, pid %d)\n", endpoint, res.JournalPath, res.Journal.RunID, res.Journal.PID)
	} else {
		fmt.Fprintf(&b, "thaw %s: no journal at %s\n", endpoint, res.JournalPath)
	}
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "  changed: %s\n", c)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if res.JournalRemoved {
		fmt.Fprintf(&b, "  removed the journal %s\n", res.JournalPath)
	}
	switch {
	case len(res.Changes) == 0 && failed != nil:
		fmt.Fprintf(&b, "nothing changed on %s before the thaw stopped on an error (below): its state is unknown\n", endpoint)
	case len(res.Changes) == 0:
		fmt.Fprintf(&b, "nothing changed: %s already is as it should be\n", endpoint)
	case failed != nil:
		fmt.Fprintf(&b, "the thaw stopped on an error (below) after the changes above: run tts-bench thaw again\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderThawJSON is renderThaw for machines: one JSON object with the endpoint, the journal restored from (null
// when there was none), each change and note, whether the journal was removed, and the error that stopped the
// thaw ("" when none; the error also goes to stderr and sets the exit code).
func renderThawJSON(w io.Writer, endpoint string, res ThawResult, failed error) error {
	out := struct {
		Endpoint       string   `json:"endpoint"`
		JournalPath    string   `json:"journal_path"`
		Journal        *Journal `json:"journal"`
		Changes        []string `json:"changes"`
		Notes          []string `json:"notes"`
		JournalRemoved bool     `json:"journal_removed"`
		Error          string   `json:"error"`
	}{Endpoint: endpoint, JournalPath: res.JournalPath, Journal: res.Journal, Changes: append([]string{}, res.Changes...),
		Notes: append([]string{}, res.Notes...), JournalRemoved: res.JournalRemoved}
	if failed != nil {
		out.Error = failed.Error()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
