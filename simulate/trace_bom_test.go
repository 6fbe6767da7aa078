package simulate

import (
	"strings"
	"testing"
)

// A CSV saved by a spreadsheet as "CSV UTF-8" starts with a byte-order mark: it must not make the header a data
// row ("rps "rps" is not a finite number").
func TestParseCSVAcceptsAByteOrderMark(t *testing.T) {
	for _, in := range []string{"\uFEFFtimestamp,rps\n0,4\n60,4\n", "\uFEFF0,4\n60,4\n"} {
		tr, err := ParseCSV("bom.csv", strings.NewReader(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if len(tr.Points) != 2 || tr.Points[0].RPS != 4 {
			t.Fatalf("%q: got %+v", in, tr)
		}
	}
	// A BOM anywhere but at the start is still refused.
	if _, err := ParseCSV("bom.csv", strings.NewReader("timestamp,rps\n\uFEFF0,4\n")); err == nil {
		t.Fatal("a byte-order mark inside the file was accepted")
	}
}
