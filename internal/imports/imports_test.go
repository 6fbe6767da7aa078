// Package imports_test checks the direction of the module's imports: the leaf utilities under
// internal/ sit below everything, the wiring packages above cloud and emulator, and tts-bench (the command
// and its engine, measure) reaches AWS only through cloud.
package imports_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/speech-infra/speech-infra"

// wiring are the packages under internal/ that connect the commands to cloud and the emulator: awsenv turns
// --local, --region and --profile into an SDK configuration (starting the emulator for --local), and
// emulatortest starts an emulator for a test. Everything else under internal/ is a leaf utility
// (strictjson, atomicfile, exitcode, cliflags, containerbin) and must not depend on cloud, the emulator or
// the wiring, so that no arrow runs back up.
var wiring = []string{module + "/internal/awsenv", module + "/internal/emulatortest"}

// pkg is one package of go list: its import path, its direct imports and every package it depends on.
type pkg struct {
	path    string
	imports []string
	deps    []string
}

// under says whether path is root or a package below it.
func under(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }

func anyUnder(path string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return under(path, r) })
}

// violations lists every import that runs against the layering.
func violations(pkgs []pkg) []string {
	var out []string
	upper := append([]string{module + "/cloud", module + "/emulator"}, wiring...)
	for _, p := range pkgs {
		switch {
		case under(p.path, module+"/internal") && !anyUnder(p.path, wiring):
			for _, d := range p.deps {
				if anyUnder(d, upper) {
					out = append(out, p.path+" (a leaf utility) depends on "+d+": only the wiring packages "+strings.Join(wiring, ", ")+" may")
				}
			}
		case under(p.path, module+"/cloud") || under(p.path, module+"/emulator"):
			for _, d := range p.deps {
				if anyUnder(d, wiring) {
					out = append(out, p.path+" depends on the wiring package "+d+": the arrow runs back up")
				}
			}
		}
		if p.path == module+"/cmd/tts-bench" || p.path == module+"/measure" {
			for _, i := range p.imports {
				if strings.HasPrefix(i, "github.com/aws/aws-sdk-go-v2/service/") {
					out = append(out, p.path+" imports "+i+": reach AWS through cloud (cloud.Clients)")
				}
			}
		}
	}
	return out
}

// list runs go list over the module: each package's direct imports and its dependencies (what go list
// -deps lists for it), tests excluded.
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "|")
		if len(f) != 3 {
			t.Fatalf("go list line %q: want path|imports|deps", sc.Text())
		}
		pkgs = append(pkgs, pkg{path: f[0], imports: strings.Fields(f[1]), deps: strings.Fields(f[2])})
	}
	return pkgs
}

func TestImportsRunOneWay(t *testing.T) {
	pkgs := list(t)
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.path] = true
	}
	for _, want := range append([]string{module + "/cmd/tts-bench", module + "/measure", module + "/internal/strictjson", module + "/cloud", module + "/emulator"}, wiring...) {
		if !seen[want] {
			t.Fatalf("go list did not list %s: the check would look at nothing", want)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// The check finds each kind of violation.
func TestViolationsFindsEachKind(t *testing.T) {
	bad := []pkg{
		{path: module + "/internal/strictjson", deps: []string{"fmt", module + "/cloud"}},
		{path: module + "/internal/exitcode", deps: []string{module + "/emulator/store"}},
		{path: module + "/internal/atomicfile", deps: []string{module + "/internal/awsenv"}},
		{path: module + "/cloud/cloudtest", deps: []string{module + "/internal/emulatortest"}},
		{path: module + "/cmd/tts-bench", imports: []string{"github.com/aws/aws-sdk-go-v2/service/sagemaker"}},
		{path: module + "/measure", imports: []string{"github.com/aws/aws-sdk-go-v2/service/cloudwatch"}},
		// Allowed: the wiring above cloud, cloud above the leaves, the SDK below cloud.
		{path: module + "/internal/awsenv", deps: []string{module + "/cloud", module + "/emulator"}},
		{path: module + "/cloud", deps: []string{module + "/internal/strictjson", "github.com/aws/aws-sdk-go-v2/service/sagemaker"}},
		{path: module + "/cmd/speech-infra", imports: []string{"github.com/aws/aws-sdk-go-v2/service/sagemaker"}},
	}
	if got := violations(bad); len(got) != 6 {
		t.Errorf("found %d violations, want 6:\n%s", len(got), strings.Join(got, "\n"))
	}
}
