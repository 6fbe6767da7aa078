package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// --instance-types is counted, and its repeats found, before any type is looked at: a list of a thousand
// entries, repeated or not, is one line saying how many and the limit, not a line per entry.
func TestCompareCountsTypesBeforeCheckingThem(t *testing.T) {
	dir := t.TempDir()
	base := func(types string) []string {
		return []string{"compare", "--local", "--state-dir", filepath.Join(dir, "state"), "--model", "espeak-ng", "--instance-types", types,
			"--trace", "diurnal", "--artifacts", filepath.Join(dir, "artifacts"), "--container-dir", containerDir}
	}
	repeat := func(types []string, n int) string {
		var all []string
		for range n {
			all = append(all, types...)
		}
		return strings.Join(all, ",")
	}
	distinct, sevenKinds := make([]string, 1000), make([]string, 1000)
	for i := range distinct {
		distinct[i] = "ml.banana" + strconv.Itoa(i) + ".xlarge"
		sevenKinds[i] = "ml.banana" + strings.Repeat("x", i%7) + ".xlarge"
	}
	for _, tc := range []struct {
		name, types string
		want        []string
	}{
		{"a thousand repeats of one type", repeat([]string{"ml.c5.large"}, 1000),
			[]string{"--instance-types: 1000 entries, 1 of them distinct (ml.c5.large is given 1000 times): compare at most 10 types at once, each named once"}},
		{"a thousand distinct invalid types", strings.Join(distinct, ","),
			[]string{"--instance-types: 1000 types: compare at most 10 types at once, each named once"}},
		{"a thousand entries of seven invalid types", strings.Join(sevenKinds, ","),
			[]string{"--instance-types: 1000 entries, 7 of them distinct (", "and 4 more repeated): compare at most 10 types at once"}},
		{"eleven types", "ml.c5.large,ml.c5.xlarge,ml.c5.2xlarge,ml.c5.4xlarge,ml.c5.9xlarge,ml.m5.large,ml.m5.xlarge,ml.m5.2xlarge,ml.m5.4xlarge,ml.g5.xlarge,ml.g6.xlarge",
			[]string{"--instance-types: 11 types: compare at most 10 types at once"}},
		{"repeats within the limit", repeat([]string{"ml.c5.large", "ml.c5.xlarge"}, 3) + ",ml.c5.large",
			[]string{"--instance-types: ml.c5.large is given 4 times, ml.c5.xlarge is given 3 times: name each type once"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, base(tc.types)...)
			if code != exitcode.CodeUsage || stdout != "" {
				t.Fatalf("exit %d, want %d and nothing on stdout; stderr:\n%s", code, exitcode.CodeUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if n := strings.Count(stderr, "--instance-types"); n != 1 {
				t.Errorf("--instance-types is named %d times, want once:\n%.2000s", n, stderr)
			}
			if len(stderr) > 1000 {
				t.Errorf("%d bytes on stderr for one problem:\n%.2000s", len(stderr), stderr)
			}
		})
	}
}
