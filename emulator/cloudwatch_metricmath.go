// CloudWatch metric math: the expressions GetMetricData evaluates, and their parser.

package emulator

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// mathValue is the value of a metric math expression: a time series or, for a constant, a number.
type mathValue struct {
	series *timeSeries
	scalar float64
}

// mathExpr is a parsed metric math expression.
type mathExpr interface {
	eval(m *mathEval) (mathValue, *apiError)
}

type mathNumber float64

type mathID string

type mathSumMetrics struct{}

type mathBinary struct {
	op   byte
	l, r mathExpr
}

func (n mathNumber) eval(*mathEval) (mathValue, *apiError) { return mathValue{scalar: float64(n)}, nil }

func (id mathID) eval(m *mathEval) (mathValue, *apiError) {
	ts, err := m.series(string(id))
	if err != nil {
		return mathValue{}, err
	}
	return mathValue{series: &ts}, nil
}

// eval of SUM(METRICS()) adds, at each timestamp, the values of every metric (not expression) query that has one.
func (mathSumMetrics) eval(m *mathEval) (mathValue, *apiError) {
	sums := map[time.Time]float64{}
	for _, q := range m.queries {
		if q.MetricStat == nil {
			continue
		}
		ts, err := m.series(q.ID)
		if err != nil {
			return mathValue{}, err
		}
		for i, t := range ts.ts {
			sums[t] += ts.vs[i]
		}
	}
	out := timeSeries{}
	for t := range sums {
		out.ts = append(out.ts, t)
	}
	slices.SortFunc(out.ts, func(a, b time.Time) int { return a.Compare(b) })
	for _, t := range out.ts {
		out.vs = append(out.vs, sums[t])
	}
	return mathValue{series: &out}, nil
}

// eval applies the operator pointwise: a series with a number at each of its points, two series at the
// timestamps both have. A result that is not a finite number (a division by zero) is no datapoint.
func (b mathBinary) eval(m *mathEval) (mathValue, *apiError) {
	l, err := b.l.eval(m)
	if err != nil {
		return mathValue{}, err
	}
	r, err := b.r.eval(m)
	if err != nil {
		return mathValue{}, err
	}
	apply := func(x, y float64) float64 {
		switch b.op {
		case '+':
			return x + y
		case '-':
			return x - y
		case '*':
			return x * y
		}
		return x / y
	}
	if l.series == nil && r.series == nil {
		return mathValue{scalar: apply(l.scalar, r.scalar)}, nil
	}
	out := timeSeries{}
	push := func(t time.Time, v float64) {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			out.ts, out.vs = append(out.ts, t), append(out.vs, v)
		}
	}
	switch {
	case r.series == nil:
		for i, t := range l.series.ts {
			push(t, apply(l.series.vs[i], r.scalar))
		}
	case l.series == nil:
		for i, t := range r.series.ts {
			push(t, apply(l.scalar, r.series.vs[i]))
		}
	default:
		right := map[time.Time]float64{}
		for i, t := range r.series.ts {
			right[t] = r.series.vs[i]
		}
		for i, t := range l.series.ts {
			if y, ok := right[t]; ok {
				push(t, apply(l.series.vs[i], y))
			}
		}
	}
	return mathValue{series: &out}, nil
}

// mathParser parses the metric math the emulator evaluates: query ids, numbers, + - * /, parentheses, unary
// minus and SUM(METRICS()).
type mathParser struct {
	src string
	pos int
}

func parseExpression(src string) (mathExpr, error) {
	p := &mathParser{src: src}
	e, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("unexpected %q at position %d", p.src[p.pos:], p.pos+1)
	}
	return e, nil
}

func (p *mathParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *mathParser) peek() byte {
	p.space()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *mathParser) sum() (mathExpr, error) {
	l, err := p.product()
	if err != nil {
		return nil, err
	}
	for c := p.peek(); c == '+' || c == '-'; c = p.peek() {
		p.pos++
		r, err := p.product()
		if err != nil {
			return nil, err
		}
		l = mathBinary{op: c, l: l, r: r}
	}
	return l, nil
}

func (p *mathParser) product() (mathExpr, error) {
	l, err := p.factor()
	if err != nil {
		return nil, err
	}
	for c := p.peek(); c == '*' || c == '/'; c = p.peek() {
		p.pos++
		r, err := p.factor()
		if err != nil {
			return nil, err
		}
		l = mathBinary{op: c, l: l, r: r}
	}
	return l, nil
}

func (p *mathParser) factor() (mathExpr, error) {
	c := p.peek()
	switch {
	case c == 0:
		return nil, errors.New("the expression ends where a value was expected")
	case c == '(':
		p.pos++
		e, err := p.sum()
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, fmt.Errorf("missing ')' at position %d", p.pos+1)
		}
		p.pos++
		return e, nil
	case c == '-':
		p.pos++
		e, err := p.factor()
		if err != nil {
			return nil, err
		}
		return mathBinary{op: '-', l: mathNumber(0), r: e}, nil
	case c == '.' || (c >= '0' && c <= '9'):
		start := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] == '.' || (p.src[p.pos] >= '0' && p.src[p.pos] <= '9')) {
			p.pos++
		}
		v, err := strconv.ParseFloat(p.src[start:p.pos], 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", p.src[start:p.pos])
		}
		return mathNumber(v), nil
	}
	start := p.pos
	for p.pos < len(p.src) && (p.src[p.pos] == '_' || isAlnum(p.src[p.pos])) {
		p.pos++
	}
	word := p.src[start:p.pos]
	switch {
	case word == "":
		return nil, fmt.Errorf("unexpected %q at position %d", p.src[start:start+1], start+1)
	case metricDataID.MatchString(word):
		return mathID(word), nil
	case word == "SUM":
		rest := strings.Join(strings.Fields(p.src[p.pos:]), "")
		if !strings.HasPrefix(rest, "(METRICS())") {
			return nil, errors.New("SUM is supported as SUM(METRICS()) only")
		}
		// Skip "(METRICS())" and the spaces within it.
		for n := 0; n < len("(METRICS())"); p.pos++ {
			if p.src[p.pos] != ' ' && p.src[p.pos] != '\t' {
				n++
			}
		}
		return mathSumMetrics{}, nil
	}
	return nil, fmt.Errorf("the function or name %s is not supported", word)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
