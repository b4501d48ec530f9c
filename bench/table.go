package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Table is a Markdown table built row by row. Columns from RightFrom on
// are right-aligned, for figures; cells are padded so that the table also
// reads as plain text.
type Table struct {
	Header    []string
	Rows      [][]string
	RightFrom int
}

// NewTable returns a table with the given header whose columns from
// rightFrom on hold figures.
func NewTable(rightFrom int, header ...string) *Table {
	return &Table{Header: header, RightFrom: rightFrom}
}

// Add appends a row; missing cells are left empty, extra ones dropped.
func (t *Table) Add(cells ...string) {
	row := make([]string, len(t.Header))
	copy(row, cells)
	t.Rows = append(t.Rows, row)
}

// WriteTo writes the table in Markdown.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = max(3, utf8.RuneCountInString(h))
	}
	for _, r := range t.Rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i >= t.RightFrom {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	line(t.Header)
	b.WriteString("|")
	for i := range t.Header {
		if i >= t.RightFrom {
			b.WriteString(" " + strings.Repeat("-", width[i]-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", width[i]) + " |")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		line(r)
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// FormatDuration prints d in the unit that suits it, with three
// significant figures at most: 850µs, 12.3ms, 1.50s.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return trimFloat(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		return trimFloat(float64(d)/float64(time.Millisecond)) + "ms"
	default:
		return trimFloat(d.Seconds()) + "s"
	}
}

// FormatBytes prints n bytes in B, KiB or MiB.
func FormatBytes(n uint64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return trimFloat(float64(n)/(1<<10)) + " KiB"
	default:
		return trimFloat(float64(n)/(1<<20)) + " MiB"
	}
}

// trimFloat prints v with three significant figures for values under 1000
// and as a whole number above.
func trimFloat(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
