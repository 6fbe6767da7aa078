package simulate

import (
	"strings"
	"testing"
	"time"
)

// ParseCSV reads a request trace as a rate trace at 1-s steps, equal seconds merged.
func TestParseCSVReadsARequestTrace(t *testing.T) {
	trace := RequestTraceMagic + "\n# start 2024-03-01T12:00:00.1234567Z\n# imported from a log\n" + RequestTraceColumn + "\n0\n0.5\n0.9\n1.2\n1.3\n1.4\n3.999\n# end 7 requests\n"
	tr, err := ParseCSV("day.csv", strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{{0, 3}, {2 * time.Second, 0}, {3 * time.Second, 1}}
	if tr.Duration != 4*time.Second || len(tr.Points) != len(want) {
		t.Fatalf("trace %+v, want %+v over 4s", tr, want)
	}
	for i, p := range want {
		if tr.Points[i] != p {
			t.Errorf("point %d = %+v, want %+v", i, tr.Points[i], p)
		}
	}
	if got := tr.Requests(0, tr.Duration); got != 7 {
		t.Errorf("requests %g, want 7", got)
	}
	q, err := ReadRequests("day.csv", strings.NewReader("\uFEFF"+trace))
	if err != nil || !q.Start.Equal(time.Date(2024, 3, 1, 12, 0, 0, 123456700, time.UTC)) || q.Count != 7 || len(q.Comments) != 1 {
		t.Fatalf("ReadRequests: %v %+v", err, q)
	}
}

// Rows out of order, offsets that are not numbers, and a missing start are refused, naming the line.
func TestReadRequestsRefusals(t *testing.T) {
	head := RequestTraceMagic + "\n# start 2024-03-01T12:00:00Z\n" + RequestTraceColumn + "\n"
	for _, c := range []struct{ text, want string }{
		{head + "1\n0.5\n# end 2 requests\n", "line 5: offset \"0.5\" comes before the previous row's \"1\""},
		{head + "x\n# end 1 requests\n", "line 4: offset \"x\" is not a number of seconds"},
		{head + "-1\n# end 1 requests\n", "line 4: offset \"-1\""},
		{RequestTraceMagic + "\n" + RequestTraceColumn + "\n1\n# end 1 requests\n", "line 2: the column header comes before the \"# start\" line"},
		{head + "# end 0 requests\n", "the request trace has no requests"},
		{head + "1\n2\n", "stops before its \"# end\" line, after 2 requests: it is cut short"},
		{head + "1\n2\n# end 3 requests\n", "the end line counts 3 requests, the trace has 2 rows"},
		{head + "1\n# end 1 requests\n2\n", "\"2\" after the \"# end\" line"},
		{RequestTraceMagic + "\n# start 2024-03-01T12:00:00Z\n", "no \"offset_s\" column header"},
	} {
		if _, err := ParseCSV("t.csv", strings.NewReader(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.text, err, c.want)
		}
	}
}
