// Package docs holds the project's design document (design.md), the pages the README links to and a demo run's
// charts; its tests keep the code's citations of the design true (design_test.go) and the README a front door
// (readme_test.go).
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citation is a comment's reference to a section: docs/design.md, "Section" (the comment may break the line
// between the two, with the next line's comment marker).
var citation = regexp.MustCompile(`design\.md[,:]?\s*(?://\s*)?"([^"]+)"`)

// lineBreak is a break inside a quoted section name in a comment: the newline, the next line's comment marker and
// the spaces around them.
var lineBreak = regexp.MustCompile(`\s*\n\s*(?://)?\s*`)

// sectionName is a cited name as design.md's heading has it: a comment may break it across two lines
// ("Queue\n\t// gate" is "Queue gate").
func sectionName(cited string) string { return lineBreak.ReplaceAllString(cited, " ") }

// Every citation of the design in the repository's Go and Markdown files names a section design.md has, and
// nothing cites a DESIGN.md (a file the repository does not hold).
func TestDesignCitations(t *testing.T) {
	doc, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			sections[h] = true
		}
	}
	cited := 0
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "cdk.out", ".cache", ".git", ".demo", ".state", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" || filepath.Base(path) == "design_test.go" || filepath.Base(path) == "readme_test.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		if strings.Contains(text, "DESIGN.md") {
			t.Errorf("%s cites DESIGN.md, which is not in the repository: cite docs/design.md and its section", path)
		}
		for _, m := range citation.FindAllStringSubmatch(text, -1) {
			name := sectionName(m[1])
			if name == "<section>" {
				continue
			}
			cited++
			if !sections[name] {
				t.Errorf("%s cites the section %q, which docs/design.md does not have", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 10 {
		t.Errorf("found %d citations of docs/design.md; the code has more: is the pattern still right?", cited)
	}
}

func TestSectionNameJoinsABrokenLine(t *testing.T) {
	for in, want := range map[string]string{"Queue gate": "Queue gate", "Queue\n\t// gate": "Queue gate", "One instance\n// model": "One instance model"} {
		if got := sectionName(in); got != want {
			t.Errorf("sectionName(%q) = %q, want %q", in, got, want)
		}
	}
}
