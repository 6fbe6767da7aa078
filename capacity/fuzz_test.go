package capacity

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseArtifacts feeds arbitrary bytes to every artifact parser and, when one accepts, to Verify: no input
// may panic. Plain go test runs the seed corpus: the fixtures and a few malformed inputs.
func FuzzParseArtifacts(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "plans", "*", "*.json"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "null", "[]", "{}", `{"schema_version":1}`, `{"steps":[null,{}]}`, `{"timeline":[{"at":"x"}]}`,
		`{"inputs":{"throughput":[{"concurrency":-1,"rps":1e308}]}}`, `{"findings":[{}]}`, `{"a":{"b":{"c":[[[]]]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if q, err := ParseQMax("fuzz", data); err == nil {
			q.Verify()
			q.throughputCurve()
			q.cloudWatchRatio(10)
		}
		if tt, err := ParseTTotal("fuzz", data); err == nil {
			tt.Verify()
		}
		if p, err := ParsePlan("fuzz", data); err == nil {
			p.Verify()
		}
	})
}
