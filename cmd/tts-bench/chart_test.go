package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// svgText returns the text of every <text> element of an SVG document, failing the test when it is not XML.
func svgText(t *testing.T, doc []byte) string {
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

func TestChartMarksSLOAndQMax(t *testing.T) {
	doc, err := renderChartSVG(staircaseChart{
		Title: "espeak-ng on local, sagemaker-stream", Percentile: 95, SLOMs: 300, StallBudgetMs: 50, QMax: 4, LowestFail: 8,
		Steps: []chartStep{{8, 900, 120, false}, {1, 40, 0, true}, {2, 80, 3, true}, {4, 210, 20, true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := svgText(t, doc)
	for _, want := range []string{"espeak-ng on local, sagemaker-stream", "p95 TTFAB", "p95 stall", "SLO p95 TTFAB ≤ 300 ms",
		"Q_max = 4", "step failed", "stall budget 50 ms", "concurrency (requests in flight, closed loop)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the chart does not say %q; its text is %q", want, text)
		}
	}
	if strings.Contains(text, "lower bound") {
		t.Errorf("a bracketed run is labelled as a lower bound: %q", text)
	}
}

func TestChartWithoutFailureOrPass(t *testing.T) {
	doc, err := renderChartSVG(staircaseChart{Title: "t", Percentile: 95, SLOMs: 1000, QMax: 2, Steps: []chartStep{{1, 40, 0, true}, {2, 50, 0, true}}})
	if err != nil {
		t.Fatal(err)
	}
	if text := svgText(t, doc); !strings.Contains(text, "no step failed: Q_max is a lower bound") {
		t.Errorf("an unbracketed run is not labelled as a lower bound: %q", text)
	}
	doc, err = renderChartSVG(staircaseChart{Title: "t", Percentile: 95, SLOMs: 10, LowestFail: 1, Steps: []chartStep{{1, 400, 0, false}}})
	if err != nil {
		t.Fatal(err)
	}
	if text := svgText(t, doc); !strings.Contains(text, "no step met the SLO") || strings.Contains(text, "Q_max =") {
		t.Errorf("a run where nothing passed must say so and mark no Q_max: %q", text)
	}
	if _, err := renderChartSVG(staircaseChart{Title: "t", Percentile: 95, SLOMs: 10}); err == nil {
		t.Error("a chart of no steps was drawn; want an error")
	}
}
