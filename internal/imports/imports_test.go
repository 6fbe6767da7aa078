// Package imports_test checks the direction of the module's imports: the utilities under internal/ sit below
// every product package, so none of them, tests included, imports cloud, emulator, capacity or models, even
// through another package; and tts-bench reaches AWS only through cloud.
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

// above are the product packages no package under internal/ may depend on. What wires them together lives
// beside them: cloud/awsenv (the commands' AWS configuration), emulator/emulatortest (emulators for tests),
// capacity/plantest (plan fixtures).
var above = []string{module + "/cloud", module + "/emulator", module + "/capacity", module + "/models"}

// pkg is one package of go list: its import path, the direct imports of its non-test files and of its _test.go
// files (in the package and in package x_test), and every package its non-test files depend on.
type pkg struct {
	path        string
	imports     []string
	testImports []string
	deps        []string
}

// under says whether path is root or a package below it.
func under(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }

func anyUnder(path string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return under(path, r) })
}

// violations lists every import that runs against the layering. A package under internal/ may not import a
// package of above, nor a package that depends on one: each of its imports is looked up in pkgs for that.
func violations(pkgs []pkg) []string {
	byPath := map[string]pkg{}
	for _, p := range pkgs {
		byPath[p.path] = p
	}
	var out []string
	for _, p := range pkgs {
		if under(p.path, module+"/internal") {
			for _, i := range slices.Concat(p.imports, p.testImports) {
				if anyUnder(i, above) {
					out = append(out, p.path+" imports "+i+": nothing under internal/ may import "+strings.Join(above, ", "))
					continue
				}
				for _, d := range byPath[i].deps {
					if anyUnder(d, above) {
						out = append(out, p.path+" imports "+i+", which depends on "+d+": nothing under internal/ may depend on "+strings.Join(above, ", "))
						break
					}
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

// list runs go list over the module: each package's imports, those of its _test.go files (in the package and
// in package x_test) among them, and the dependencies of its non-test files (what go list -deps lists for it).
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}|{{join .Deps " "}}`, "./...")
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
		if len(f) != 4 {
			t.Fatalf("go list line %q: want path|imports|test imports|deps", sc.Text())
		}
		pkgs = append(pkgs, pkg{path: f[0], imports: strings.Fields(f[1]), testImports: strings.Fields(f[2]), deps: strings.Fields(f[3])})
	}
	return pkgs
}

func TestImportsRunOneWay(t *testing.T) {
	pkgs := list(t)
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.path] = true
	}
	for _, want := range append([]string{module + "/cmd/tts-bench", module + "/internal/strictjson", module + "/internal/cliflags"}, above...) {
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
		{path: module + "/internal/strictjson", imports: []string{"fmt", module + "/cloud"}},
		{path: module + "/internal/exitcode", testImports: []string{module + "/emulator/emulatortest"}},
		{path: module + "/internal/atomicfile", imports: []string{module + "/capacity/plantest"}},
		{path: module + "/internal/cliflags/cliflagstest", testImports: []string{module + "/models"}},
		// Through another package: containerbin imports loadmodel, which (here) depends on models.
		{path: module + "/internal/containerbin", imports: []string{module + "/loadmodel"}},
		{path: module + "/loadmodel", deps: []string{module + "/internal/strictjson", module + "/models"}},
		{path: module + "/cmd/tts-bench", imports: []string{"github.com/aws/aws-sdk-go-v2/service/sagemaker"}},
		// Allowed: the product above internal/, one utility using another, the SDK below cloud, and in
		// tts-bench's tests.
		{path: module + "/bench", deps: []string{module + "/internal/strictjson"}},
		{path: module + "/internal/editdistance", imports: []string{module + "/internal/strictjson"}, testImports: []string{module + "/bench"}},
		{path: module + "/cloud/awsenv", imports: []string{module + "/cloud", module + "/emulator"}},
		{path: module + "/cloud", imports: []string{module + "/internal/strictjson", "github.com/aws/aws-sdk-go-v2/service/sagemaker"}},
		{path: module + "/cmd/speech-infra", imports: []string{"github.com/aws/aws-sdk-go-v2/service/sagemaker"}},
		{path: module + "/cmd/tts-bench", testImports: []string{"github.com/aws/aws-sdk-go-v2/service/cloudwatch"}},
	}
	got := violations(bad)
	for _, want := range []string{"internal/strictjson imports " + module + "/cloud:", "internal/exitcode imports " + module + "/emulator/emulatortest:",
		"internal/atomicfile imports " + module + "/capacity/plantest:", "internal/cliflags/cliflagstest imports " + module + "/models:",
		"internal/containerbin imports " + module + "/loadmodel, which depends on " + module + "/models:", "cmd/tts-bench imports github.com/aws/aws-sdk-go-v2/service/sagemaker:"} {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, want) }) {
			t.Errorf("no violation says %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) != 6 {
		t.Errorf("found %d violations, want 6:\n%s", len(got), strings.Join(got, "\n"))
	}
}
