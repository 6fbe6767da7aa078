// Package docs holds the project's design document (design.md) and the README's charts; its test keeps the
// code's citations of the design true.
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
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" || filepath.Base(path) == "design_test.go" {
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
			if m[1] == "<section>" {
				continue
			}
			cited++
			if !sections[m[1]] {
				t.Errorf("%s cites the section %q, which docs/design.md does not have", path, m[1])
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
