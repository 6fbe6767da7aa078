package capacity

import (
	"reflect"
	"testing"
)

// The list's entries are counted and its repeats named before any type is checked; blank entries are dropped.
func TestParseInstanceTypeList(t *testing.T) {
	l := ParseInstanceTypeList(" ml.g5.xlarge,,ml.g6.xlarge, ml.g5.xlarge,a,a,a,b,b,c,c ")
	if l.Entries != 10 || !reflect.DeepEqual(l.Distinct, []string{"ml.g5.xlarge", "ml.g6.xlarge", "a", "b", "c"}) {
		t.Errorf("entries %d, distinct %q", l.Entries, l.Distinct)
	}
	want := []string{"ml.g5.xlarge is given twice", "a is given 3 times", "b is given twice", "c is given twice"}
	if !reflect.DeepEqual(l.Repeated, want) {
		t.Errorf("repeated %q, want %q", l.Repeated, want)
	}
	if got := l.FirstRepeated(3); got != "ml.g5.xlarge is given twice, a is given 3 times, b is given twice and 1 more repeated" {
		t.Errorf("FirstRepeated(3) = %q", got)
	}
	if got := l.FirstRepeated(4); got != "ml.g5.xlarge is given twice, a is given 3 times, b is given twice, c is given twice" {
		t.Errorf("FirstRepeated(4) = %q", got)
	}
	if l := ParseInstanceTypeList(" , "); l.Entries != 0 || l.Distinct != nil {
		t.Errorf("blank list: %+v", l)
	}
}
