// Package measuretest holds what the tests of measure and of tts-bench share: the text of an SVG chart, a buffer
// several goroutines may write, and the records of a staircase whose Q_max differs by TTFAB and stall and by
// TTFAB alone. It exists only for tests.
package measuretest

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
)

// SVGText returns the text of every <text> element of an SVG document, failing the test when it is not XML.
func SVGText(t *testing.T, doc []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var texts []string
	inText := false
	sawSVG := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			sawSVG = sawSVG || v.Name.Local == "svg"
			inText = v.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(v))
			}
		}
	}
	if !sawSVG {
		t.Fatal("the chart has no <svg> element")
	}
	return strings.Join(texts, "|")
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a live view's goroutines, a command run as a process.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BothWaysRunID and BothWaysStart are the run id and the start of BothWays's records.
const BothWaysRunID = "qmax-bothways-test"

// BothWaysStart is when BothWays's first step starts.
var BothWaysStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// BothWays is a judgement and the records of a staircase whose step at concurrency 4 meets the TTFAB SLO but
// not the stall budget, as the engine writes them: steps at 1, 2 and 4, each worker back to back, 500-ms
// responses over a 10-s window. TTFAB 100 ms everywhere (SLO 1000 ms at the given percentile); p95 stall 0
// at 1 and 2, 400 ms at 4 (budget 250 + 50).
func BothWays(percentile int) (bench.Config, []bench.Record) {
	cfg := bench.DefaultConfig()
	cfg.SLO, cfg.StallBudget, cfg.MinRequests = time.Second, 250*time.Millisecond, 10
	cfg.SLOPercentile = percentile
	var recs []bench.Record
	for _, c := range []int{1, 2, 4} {
		stall := 0.0
		if c == 4 {
			stall = 400
		}
		ws := BothWaysStart.Add(time.Duration(c) * time.Minute)
		we := ws.Add(10 * time.Second)
		for w := 0; w < c; w++ {
			for k := 0; k < 20; k++ {
				sent := ws.Add(time.Duration(k) * 500 * time.Millisecond)
				recs = append(recs, bench.Record{
					RunID: BothWaysRunID, Transport: capacity.TransportSageMakerStream, Step: c, Worker: w, Seq: k, Chars: 40,
					Sent: sent, FirstAudio: sent.Add(100 * time.Millisecond), End: sent.Add(500 * time.Millisecond),
					WindowStart: ws, WindowEnd: we, Measured: true, TTFABMs: 100, ResponseMs: 500, StallMs: stall,
					Status: 200, Class: bench.ClassOK,
				})
			}
		}
	}
	return cfg, recs
}

// GzipRecords is recs as a records file holds them: JSON lines, gzipped.
func GzipRecords(t *testing.T, recs []bench.Record) []byte {
	t.Helper()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	rw := bench.NewRecordWriter(zw)
	for _, rec := range recs {
		if err := rw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return gz.Bytes()
}
