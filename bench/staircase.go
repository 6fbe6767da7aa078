package bench

// Staircase is the step plan of a closed-loop Q_max measurement (docs/design.md, "Closed loop"): Steps in
// order; then, while every step passes, the last passing step plus Extension, up to Max; at most MaxSteps
// steps in all. Nothing above the first failing step can move the bracket, so the staircase ends there;
// Bisect then refines the bracket between the highest pass and the lowest fail when asked (--refine).
//
// The staircase only says which concurrency comes next: the caller measures each step (RunStep), judges it
// and brackets Q_max from all the steps measured (capacity.Bracket), as vegeta's pacer says when to send
// and its attacker sends.
type Staircase struct {
	// Steps are the concurrencies measured first, distinct and increasing.
	Steps []int
	// Extension is how far each further step goes beyond the last while every step passes; 0 adds none.
	Extension int
	// Max bounds the extension.
	Max int
	// MaxSteps bounds the staircase: the extension adds no step once it holds MaxSteps; 0 bounds nothing.
	MaxSteps int
}

// Next returns the concurrency to measure after the passing steps done (in the order measured), and false
// when the staircase is over.
func (s Staircase) Next(done []int) (int, bool) {
	if len(done) < len(s.Steps) {
		return s.Steps[len(done)], true
	}
	if len(s.Steps) == 0 {
		return 0, false
	}
	last := s.Steps[len(s.Steps)-1]
	if len(done) > 0 {
		last = done[len(done)-1]
	}
	n := last + s.Extension
	if s.Extension <= 0 || n > s.Max || (s.MaxSteps > 0 && len(done) >= s.MaxSteps) {
		return 0, false
	}
	return n, true
}

// WorstCase is every concurrency the staircase reaches when every step passes, in order.
func (s Staircase) WorstCase() []int {
	var all []int
	for {
		n, ok := s.Next(all)
		if !ok {
			return all
		}
		all = append(all, n)
	}
}

// Bisect returns the concurrency halfway between the highest pass and the lowest fail of the bracket, and
// false when they are adjacent (the bracket cannot be refined further).
func Bisect(pass, fail int) (int, bool) {
	if fail-pass <= 1 {
		return 0, false
	}
	return pass + (fail-pass)/2, true
}

// RefineSteps is the most steps Bisect can add between a pass and a fail before they are adjacent.
func RefineSteps(pass, fail int) int {
	n := 0
	for fail-pass > 1 {
		pass += (fail - pass) / 2
		n++
	}
	return n
}

// MostRefineSteps is the most steps Bisect can add after the staircase, whichever of its steps fails first
// (the gap below it is the bracket then).
func (s Staircase) MostRefineSteps() int {
	most, prev := 0, 0
	for _, c := range s.WorstCase() {
		most, prev = max(most, RefineSteps(prev, c)), c
	}
	return most
}
