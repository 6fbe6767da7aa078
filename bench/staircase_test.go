package bench

import (
	"reflect"
	"testing"
)

func TestStaircaseExtendsWhileEveryStepPasses(t *testing.T) {
	s := Staircase{Steps: []int{1, 5, 10}, Extension: 10, Max: 35}
	if got := s.WorstCase(); !reflect.DeepEqual(got, []int{1, 5, 10, 20, 30}) {
		t.Errorf("worst case = %v, want 1,5,10 then +10 up to 35", got)
	}
	for _, tt := range []struct {
		done []int
		want int
		ok   bool
	}{
		{nil, 1, true}, {[]int{1}, 5, true}, {[]int{1, 5, 10}, 20, true}, {[]int{1, 5, 10, 20, 30}, 0, false},
	} {
		if c, ok := s.Next(tt.done); c != tt.want || ok != tt.ok {
			t.Errorf("Next(%v) = %d %v, want %d %v", tt.done, c, ok, tt.want, tt.ok)
		}
	}
	if got := (Staircase{Steps: []int{1, 2}, Max: 100}).WorstCase(); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("no extension: worst case = %v, want the steps alone", got)
	}
	// MaxSteps stops the extension, never the steps given.
	if got := (Staircase{Steps: []int{1, 2, 3}, Extension: 1, Max: 100, MaxSteps: 4}).WorstCase(); !reflect.DeepEqual(got, []int{1, 2, 3, 4}) {
		t.Errorf("MaxSteps 4: worst case = %v, want 1,2,3,4", got)
	}
	if got := (Staircase{Steps: []int{1, 2, 3}, Extension: 1, Max: 100, MaxSteps: 2}).WorstCase(); !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Errorf("MaxSteps 2: worst case = %v, want the three steps given", got)
	}
}

func TestBisectHalvesTheBracketUntilAdjacent(t *testing.T) {
	for _, tt := range []struct {
		pass, fail, mid int
		ok              bool
	}{{5, 10, 7, true}, {5, 7, 6, true}, {6, 7, 0, false}, {0, 1, 0, false}} {
		if mid, ok := Bisect(tt.pass, tt.fail); mid != tt.mid || ok != tt.ok {
			t.Errorf("Bisect(%d, %d) = %d %v, want %d %v", tt.pass, tt.fail, mid, ok, tt.mid, tt.ok)
		}
	}
	if got := RefineSteps(60, 70); got != 4 {
		t.Errorf("RefineSteps(60, 70) = %d, want 4 (65, 67, 68, 69 when every bisection passes)", got)
	}
	// 1,5,10,20,30: the widest gap is 10 (10 to 20 or 20 to 30): 4 bisections at most.
	if got := (Staircase{Steps: []int{1, 5, 10}, Extension: 10, Max: 35}).MostRefineSteps(); got != 4 {
		t.Errorf("MostRefineSteps = %d, want 4", got)
	}
}
