package docs

// Users and newcomers cannot look up the project's internal issue tracker, so nothing they read cites it: not
// the documents, not the Go source of either module (the root module and container/), and not the CLIs' help
// (cmd/tts-bench and cmd/speech-infra check their own, noissue_test.go). A comment or a document states the
// fact or rule an issue stood for; the history is in git log.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/internal/cliflags/cliflagstest"
)

// issueRef is the rule of what cites the issue tracker, shared with the commands' help checks.
var issueRef = cliflagstest.IssueRef

// continuation is what starts a wrapped line of a comment or a document before its text: spaces, a comment
// marker ("//", "#", "*") or a quote marker (">").
const continuation = " \t/#*>"

// issueRefs lists the lines of text (the file file) that cite an issue, with their numbers, and the lines whose
// citation a line break splits ("issue\n// 22").
func issueRefs(file, text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for n, line := range lines {
		loc := issueRef.FindStringIndex(line)
		if loc == nil && n+1 < len(lines) {
			joined := line + " " + strings.TrimLeft(lines[n+1], continuation)
			if l := issueRef.FindStringIndex(joined); l != nil && l[0] < len(line) {
				loc = []int{l[0], len(line)}
			}
		}
		if loc != nil {
			from, to := max(0, loc[0]-40), min(len(line), loc[1]+40)
			out = append(out, fmt.Sprintf("%s:%d: …%s…", file, n+1, line[from:to]))
		}
	}
	return out
}

// walkFiles lists the files under the repository root whose names end in ext, relative to it with slashes,
// leaving out node_modules, cdk.out and dot-folders (.git, .cache, .state).
func walkFiles(t *testing.T, ext string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (name == "node_modules" || name == "cdk.out" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ext) {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestDocumentsCiteNoIssueNumbers(t *testing.T) {
	files := docFiles(t)
	for _, want := range []string{"README.md", "BENCHMARKS.md", "container/README.md", "emulator/README.md", "models/README.md"} {
		if !slices.Contains(files, want) {
			t.Fatalf("the documents to check are %v: %s is missing", files, want)
		}
	}
	for _, f := range files {
		for _, r := range issueRefs(f, read(t, f)) {
			t.Errorf("%s: state the fact or rule the issue stands for (the history is in git log)", r)
		}
	}
}

// Every Go file of both modules, tests too: the comments, the help and the errors state the fact or rule.
func TestGoSourceCitesNoIssueNumbers(t *testing.T) {
	files := walkFiles(t, ".go")
	for _, want := range []string{"main.go", "cmd/tts-bench/qmax.go", "container/main.go", "docs/noissue_test.go"} {
		if !slices.Contains(files, want) {
			t.Fatalf("found %d Go files, not %s: is the walk still right?", len(files), want)
		}
	}
	for _, f := range files {
		for _, r := range issueRefs(f, read(t, f)) {
			t.Errorf("%s: state the fact or rule the issue stands for (the history is in git log)", r)
		}
	}
}

// cite writes the word issue where s has №, so that this file itself cites no issue number.
func cite(s string) string { return strings.ReplaceAll(s, "№", "issue") }

func TestNoIssueCheckCatchesEachForm(t *testing.T) {
	md := cite(strings.Join([]string{
		"a line", "Q_max both ways (№ 23). x", "№ 22's set-up", "№ #7 says", strings.ToUpper(cite("№s 22, 27")),
		"an № N, a t№ 5, №-free", "the staircase (№", "22), split", "// as asked in №", "// 7.", "an №", "", "N",
	}, "\n"))
	got := issueRefs("x.md", md)
	want := []string{"x.md:2:", "x.md:3:", "x.md:4:", "x.md:5:", "x.md:7:", "x.md:9:"}
	if len(got) != len(want) {
		t.Fatalf("found %d, want %d (lines 2 to 5, 7 and 9):\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("reference %d = %q, want it at %s", i, got[i], w)
		}
	}
}

// The Go check on a synthetic module: a comment, a help string and an error each citing an issue are caught,
// in a test file too; a file that only says "issue" is not.
func TestNoIssueGoCheckCatchesAnIssueNumber(t *testing.T) {
	files := map[string]string{
		"a.go":      cite("package a\n\n// Run runs (№ 7).\nfunc Run() {}\n"),
		"b.go":      cite("package a\n\nconst help = `Then the rate staircase (№ 7): one step`\n"),
		"c_test.go": cite("package a\n\nimport \"errors\"\n\nvar errX = errors.New(\"refused, as № 7 asks\")\n"),
		"d.go":      cite("package a\n\n// Handle handles an № report, a t№ 7 and a re№ of 7.\nfunc Handle() {}\n"),
	}
	var got []string
	for _, name := range []string{"a.go", "b.go", "c_test.go", "d.go"} {
		got = append(got, issueRefs(name, files[name])...)
	}
	if len(got) != 3 {
		t.Fatalf("found %d, want 3 (a.go:3, b.go:3, c_test.go:5):\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, w := range []string{"a.go:3:", "b.go:3:", "c_test.go:5:"} {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("reference %d = %q, want it at %s", i, got[i], w)
		}
	}
}

// walkFiles finds a Go file in a nested folder and leaves out node_modules and dot-folders; the check reads
// what it finds.
func TestNoIssueWalkFindsBothModules(t *testing.T) {
	files := walkFiles(t, ".go")
	var container, hidden int
	for _, f := range files {
		if strings.HasPrefix(f, "container/") {
			container++
		}
		if strings.Contains(f, "node_modules/") || strings.HasPrefix(f, ".") || strings.Contains(f, "/.") {
			hidden++
		}
	}
	if container < 10 || hidden != 0 || len(files) < 200 {
		t.Errorf("walkFiles: %d Go files, %d under container/, %d under node_modules or a dot-folder", len(files), container, hidden)
	}
	if _, err := os.Stat(filepath.Join(root, "container", "go.mod")); err != nil {
		t.Errorf("container/ is no longer a module of its own (%v): check walkFiles still reaches both modules", err)
	}
}
