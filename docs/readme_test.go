package docs

// The README is the repository's front door, and these tests keep it one: short, every link followed to a file
// that exists, every top-level folder in its layout table (and in the design's architecture table), and the
// import rules it states true of the code (no issue tracker numbers anywhere: noissue_test.go). Each check is a function
// of its input, and each has a test that gives it a bad case and sees it caught.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// maxReadmeBytes bounds README.md: at most 12,000 bytes, so at most 12,000 characters.
const maxReadmeBytes = 12000

// docFiles are the Markdown files of the repository: links checked, no issue numbers. They are the files git
// tracks; without git (an exported tree), the *.md files on disk outside node_modules, cdk.out and dot-folders.
func docFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.md")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f))); err == nil { // not deleted in the work tree
				files = append(files, f)
			}
		}
	} else {
		t.Logf("git ls-files: %v: walking the tree instead", err)
		files = walkFiles(t, ".md")
	}
	sort.Strings(files)
	return files
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sizeProblem says what is wrong with a README of n bytes, or "" when nothing is.
func sizeProblem(n int) string {
	if n > maxReadmeBytes {
		return fmt.Sprintf("README.md is %d bytes, over %d: move the depth into docs/ and link it", n, maxReadmeBytes)
	}
	return ""
}

func TestReadmeIsShort(t *testing.T) {
	if p := sizeProblem(len(read(t, "README.md"))); p != "" {
		t.Error(p)
	}
}

func TestSizeProblemCatchesALongReadme(t *testing.T) {
	if sizeProblem(maxReadmeBytes) != "" {
		t.Errorf("a README of exactly %d bytes was refused", maxReadmeBytes)
	}
	if sizeProblem(maxReadmeBytes+1) == "" {
		t.Errorf("a README of %d bytes passed", maxReadmeBytes+1)
	}
}

var (
	// inlineLink is [text](target) or ![alt](target), the target up to a space (a title may follow) or ")".
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink is a reference definition: [label]: target.
	refLink = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// scheme is an absolute URL's scheme (https:, mailto:).
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// withoutCode blanks fenced code blocks and inline code spans, where brackets are not links.
func withoutCode(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.SplitAfter(md, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			b.WriteString("\n")
			continue
		}
		if fenced {
			b.WriteString("\n")
			continue
		}
		b.WriteString(codeSpan.ReplaceAllString(line, "``"))
	}
	return b.String()
}

var codeSpan = regexp.MustCompile("`[^`\n]*`")

// brokenLinks lists the relative links of file (a path relative to repo, with slashes) whose target, anchor
// dropped, is not a file or directory inside repo.
func brokenLinks(repo, file, md string) []string {
	var targets []string
	text := withoutCode(md)
	for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
		targets = append(targets, m[1])
	}
	for _, m := range refLink.FindAllStringSubmatch(text, -1) {
		targets = append(targets, m[1])
	}
	var broken []string
	for _, target := range targets {
		if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
			continue // absolute: not this check's business
		}
		p, _, _ := strings.Cut(target, "#")
		p, _, _ = strings.Cut(p, "?")
		if p == "" {
			continue // an anchor in the same file
		}
		var resolved string
		if strings.HasPrefix(p, "/") {
			resolved = path.Clean(strings.TrimPrefix(p, "/"))
		} else {
			resolved = path.Join(path.Dir(file), p)
		}
		if resolved == ".." || strings.HasPrefix(resolved, "../") {
			broken = append(broken, fmt.Sprintf("%s: %s leaves the repository", file, target))
			continue
		}
		if _, err := os.Stat(filepath.Join(repo, filepath.FromSlash(resolved))); err != nil {
			broken = append(broken, fmt.Sprintf("%s: %s: no %s in the repository", file, target, resolved))
		}
	}
	return broken
}

func TestRelativeLinksResolve(t *testing.T) {
	files := docFiles(t)
	if !slices.Contains(files, "docs/design.md") || !slices.Contains(files, "models/README.md") {
		t.Fatalf("the documents to check are %v: the globs found too few", files)
	}
	for _, f := range files {
		if strings.HasPrefix(f, "testdata/") || strings.Contains(f, "/testdata/") {
			continue // a test's golden output: its links resolve where the program writes it, not here
		}
		for _, b := range brokenLinks(root, f, read(t, f)) {
			t.Error(b)
		}
	}
}

func TestBrokenLinksCatchesABadLink(t *testing.T) {
	repo := t.TempDir()
	for _, f := range []string{"README.md", "docs/a.md", "container/README.md", "docs/chart.svg"} {
		p := filepath.Join(repo, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := "[ok](../container/README.md#contract) ![ok](chart.svg) [ok](#here) [ok](https://example.com/x.md)\n" +
		"[ok](a.md \"title\") `[not a link](nowhere.md)`\n```\n[not a link](nowhere.md)\n```\n" +
		"[bad](../container/MISSING.md) ![bad](missing.svg) [bad](../../outside.md)\n[label]: gone.md\n"
	got := brokenLinks(repo, "docs/a.md", md)
	if len(got) != 4 {
		t.Fatalf("found %d broken links, want 4 (MISSING.md, missing.svg, outside.md, gone.md):\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, want := range []string{"MISSING.md", "missing.svg", "outside.md", "gone.md"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("broken link %d = %q, want it to name %s", i, got[i], want)
		}
	}
}

// topLevelFolders are the repository's top-level folders that git tracks a file in, dot-folders left out.
// Without git (an exported tree), the folders on disk, leaving out what git ignores.
func topLevelFolders(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		for _, f := range strings.Split(string(out), "\x00") {
			if top, _, ok := strings.Cut(f, "/"); ok {
				seen[top] = true
			}
		}
	} else {
		t.Logf("git ls-files: %v: listing the folders on disk instead", err)
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			switch e.Name() {
			case "node_modules", "cdk.out", "bin", "artifacts":
				continue
			}
			if e.IsDir() {
				seen[e.Name()] = true
			}
		}
	}
	var out []string
	for d := range seen {
		if !strings.HasPrefix(d, ".") {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// section is the text of md's "## <heading>" section, up to the next "## " heading; "" when there is none.
func section(md, heading string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			in = strings.TrimSpace(strings.TrimPrefix(line, "## ")) == heading
			continue
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

var tick = regexp.MustCompile("`([^`]+)`")

// missingFolders lists the folders that no row of the table in text names in its first column (as `folder/`
// or `folder/sub...`, in backticks).
func missingFolders(text string, folders []string) []string {
	named := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			top, _, _ := strings.Cut(strings.TrimPrefix(m[1], "./"), "/")
			named[top] = true
		}
	}
	var missing []string
	for _, f := range folders {
		if !named[f] {
			missing = append(missing, f)
		}
	}
	return missing
}

func TestLayoutTablesNameEveryFolder(t *testing.T) {
	folders := topLevelFolders(t)
	if len(folders) < 10 || !slices.Contains(folders, "cmd") {
		t.Fatalf("found the top-level folders %v: too few to be this repository", folders)
	}
	for _, doc := range []struct{ file, heading string }{{"README.md", "Layout"}, {"docs/design.md", "Architecture"}} {
		table := section(read(t, doc.file), doc.heading)
		if table == "" {
			t.Errorf("%s has no \"## %s\" section", doc.file, doc.heading)
			continue
		}
		for _, f := range missingFolders(table, folders) {
			t.Errorf("%s's %q table does not name the top-level folder %s/: add a row saying what it holds", doc.file, doc.heading, f)
		}
	}
}

func TestMissingFoldersCatchesAnUnlistedFolder(t *testing.T) {
	md := "# x\n\n## Layout\n\n| path | what |\n|---|---|\n| `main.go`, `stacks/` | the app |\n| `cmd/speech-infra/`, `cmd/tts-bench/` | CLIs |\n" +
		"| `.ci/`, `.github/` | CI |\n\nNot a row: `perf/` is mentioned in prose only.\n\n## Next\n\n| `tools/` | after the section |\n"
	got := missingFolders(section(md, "Layout"), []string{"cmd", "perf", "stacks", "tools"})
	if !slices.Equal(got, []string{"perf", "tools"}) {
		t.Errorf("missing = %v, want [perf tools]: a folder named only in prose or in another section is missing", got)
	}
	if section(md, "Absent") != "" {
		t.Error("section found a heading the text does not have")
	}
}

// The import rules README.md ("Layout") and design.md ("Architecture") state, by top-level folder ("" is the
// root package, the CDK app). A package may always import its own folder's packages and internal/'s
// utilities; internal/imports checks that internal/ imports none of the product (tests included) and that
// tts-bench reaches AWS only through cloud.
var (
	product = []string{"autoscale", "bench", "capacity", "cloud", "emulator", "loadmodel", "measure", "models", "modelsync", "simulate", "stacks", "traffic"}
	mayUse  = map[string][]string{
		"":          {"capacity", "models", "stacks"},
		"autoscale": {"loadmodel"},
		"bench":     {"loadmodel"},
		"loadmodel": {},
		"modelsync": {},
		"models":    {},
		"simulate":  {"autoscale", "loadmodel"},
		"traffic":   {"simulate"},
		"capacity":  {"simulate", "loadmodel", "autoscale", "bench", "models"},
		"cloud":     {"capacity", "bench", "models"},
		"measure":   {"bench", "capacity", "cloud", "models", "simulate"},
		"emulator":  {"autoscale"},
		"stacks":    {"capacity", "models"},
		"lambda":    {"modelsync"},
		"internal":  {},
		"cmd":       product,
		"perf":      product,
		"tools":     product,
		"docs":      {},
	}
	// wiring are the packages that connect cloud and the emulator for the commands and the tests: only cmd/,
	// perf/ and tools/ (and tests) may import them. Each may import one folder more than its own: cloud/awsenv
	// finds the local emulator of --local (emulator.Running, its access key), and emulator/emulatortest signs
	// its SDK clients with cloud.LocalConfig. capacity/plantest (plan fixtures) needs no more than capacity's.
	wiring = map[string][]string{"cloud/awsenv": {"emulator"}, "emulator/emulatortest": {"cloud"}, "capacity/plantest": {}}
)

const module = "github.com/speech-infra/speech-infra"

// importViolations lists the imports, given as package → its imports (module-relative paths, "" for the root
// package), that run against mayUse.
func importViolations(imports map[string][]string) []string {
	topOf := func(p string) string { top, _, _ := strings.Cut(p, "/"); return top }
	var out []string
	for pkg, imps := range imports {
		from := topOf(pkg)
		allowed, known := mayUse[from]
		if !known {
			out = append(out, fmt.Sprintf("%s: the folder %s/ has no import rule: add it to the README's layout and to mayUse", pkg, from))
			continue
		}
		for _, imp := range imps {
			to := topOf(imp)
			_, wired := wiring[imp]
			switch {
			case wired && from != "cmd" && from != "perf" && from != "tools":
				out = append(out, fmt.Sprintf("%s imports %s: only cmd/, perf/ and tools/ may import the wiring (README.md, \"Layout\")", pkg, imp))
			case to == from, to == "internal":
			case slices.Contains(allowed, to), slices.Contains(wiring[pkg], to):
			default:
				out = append(out, fmt.Sprintf("%s imports %s: %s/ may import only %v (README.md, \"Layout\")", pkg, imp, from, allowed))
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestImportsFollowTheLayout(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, ok := strings.Cut(line, "|")
		if !ok {
			t.Fatalf("go list line %q: want path|imports", line)
		}
		rel := func(p string) (string, bool) {
			if p == module {
				return "", true
			}
			r, ok := strings.CutPrefix(p, module+"/")
			return r, ok
		}
		from, ok := rel(pkg)
		if !ok {
			continue
		}
		var own []string
		for _, i := range strings.Fields(imps) {
			if r, ok := rel(i); ok {
				own = append(own, r)
			}
		}
		imports[from] = own
	}
	if len(imports["cmd/tts-bench"]) == 0 || len(imports["capacity"]) == 0 {
		t.Fatalf("go list gave %d packages, without cmd/tts-bench's or capacity's imports: the check would look at nothing", len(imports))
	}
	for _, v := range importViolations(imports) {
		t.Error(v)
	}
}

func TestImportViolationsCatchesEachKind(t *testing.T) {
	got := importViolations(map[string][]string{
		// Allowed: the layout's arrows, a folder's own packages, internal's utilities, the wiring in cmd and its
		// one more folder.
		"":                      {"stacks", "models"},
		"capacity":              {"simulate", "loadmodel", "internal/strictjson", "capacity/internal/x"},
		"cmd/tts-bench":         {"cloud", "cloud/awsenv"},
		"perf/cost":             {"perf/internal/row", "internal/containerbin", "capacity", "capacity/plantest"},
		"cloud/awsenv":          {"cloud", "emulator", "internal/cliflags"},
		"emulator/emulatortest": {"emulator", "cloud"},
		// Not allowed: an arrow backwards, into cmd, a product package or internal/ using the wiring (even in its
		// own folder), internal/ using the product, an unknown folder, the wiring's one more folder elsewhere.
		"loadmodel":         {"simulate"},
		"bench":             {"cmd/tts-bench"},
		"cloud":             {"emulator/emulatortest"},
		"capacity/x":        {"capacity/plantest"},
		"internal/exitcode": {"models"},
		"newthing/x":        {"bench"},
		"simulate":          {"capacity"},
		"emulator/store":    {"perf/internal/row", "cloud"},
	})
	if len(got) != 9 {
		t.Fatalf("found %d violations, want 9:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, want := range []string{"bench imports cmd/tts-bench", "cloud imports emulator/emulatortest", "capacity/x imports capacity/plantest",
		"internal/exitcode imports models", "emulator/store imports perf/internal/row", "emulator/store imports cloud",
		"loadmodel imports simulate", "newthing/x: the folder newthing/", "simulate imports capacity"} {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, want) }) {
			t.Errorf("no violation says %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
}
