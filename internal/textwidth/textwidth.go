// Package textwidth fits text output for humans to a width: the terminal's when the output is one, else
// Default columns, so that no line of a command's text output runs past a terminal or a review window.
// Tables keep their columns and wrap their last, free-text column under itself.
package textwidth

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// Default is the width when the output is not a terminal (a file, a pipe, a test's buffer).
const Default = 100

// Min is the narrowest width a terminal is taken at: below it a table's free text has no room.
const Min = 60

// Width is the width output written to w wraps to: a terminal's columns (at least Min), else Default.
func Width(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return max(cols, Min)
		}
	}
	return Default
}

// Wrap breaks s between words into lines of at most width runes (a word longer than that stands alone on its
// line), the first line starting with first and every other with rest; the lines end with a newline. Runs of
// spaces inside a line are kept (columns of a line stay apart); a break drops the spaces it falls on.
func Wrap(s string, width int, first, rest string) string {
	var b strings.Builder
	prefix := first
	line := []string{}
	n := 0
	flush := func() {
		b.WriteString(strings.TrimRight(prefix+strings.Join(line, " "), " "))
		b.WriteByte('\n')
		prefix, line, n = rest, line[:0], 0
	}
	for _, w := range strings.Split(strings.TrimSpace(s), " ") {
		l := utf8.RuneCountInString(w)
		if n > 0 && utf8.RuneCountInString(prefix)+n+1+l > width && w != "" {
			flush()
		}
		if n == 0 && w == "" {
			continue
		}
		if n > 0 {
			n++
		}
		line = append(line, w)
		n += l
	}
	if n > 0 || b.Len() == 0 {
		flush()
	}
	return b.String()
}

// Table writes rows (the first is the header when header is true) indented by indent, two spaces between
// columns, every column but the last as wide as its widest cell and the last wrapped within width under
// itself. When the columns before it leave the last fewer than Min/2 runes and its text does not fit on the
// row, the text goes on the lines below the row, indented by four more spaces.
func Table(w io.Writer, width int, indent string, rows [][]string) error {
	if len(rows) == 0 {
		return nil
	}
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	widths := make([]int, cols)
	for _, r := range rows {
		for i := 0; i < len(r)-1; i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	lead := utf8.RuneCountInString(indent)
	for i := 0; i < cols-1; i++ {
		lead += widths[i] + 2
	}
	var b strings.Builder
	for _, r := range rows {
		var head strings.Builder
		head.WriteString(indent)
		for i := 0; i < len(r)-1; i++ {
			fmt.Fprintf(&head, "%-*s  ", widths[i], r[i])
		}
		last := ""
		if len(r) > 0 {
			last = r[len(r)-1]
		}
		h := head.String()
		if len(r) < cols {
			h = strings.TrimRight(h, " ")
			last = ""
		}
		switch {
		case last == "":
			b.WriteString(strings.TrimRight(h, " ") + "\n")
		case width-lead >= Min/2 || lead+utf8.RuneCountInString(last) <= width:
			b.WriteString(Wrap(last, width, h, strings.Repeat(" ", lead)))
		default:
			b.WriteString(strings.TrimRight(h, " ") + "\n")
			b.WriteString(Wrap(last, width, indent+"    ", indent+"    "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
