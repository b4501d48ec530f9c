package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTableMarkdown(t *testing.T) {
	tb := NewTable(1, "library", "ns/op")
	tb.Add("bare", "5")
	tb.Add("httpretry", "12345", "dropped")
	tb.Add("short")
	var b strings.Builder
	_, err := tb.WriteTo(&b)
	require.NoError(t, err)
	want := "" +
		"| library   | ns/op |\n" +
		"| --------- | ----: |\n" +
		"| bare      |     5 |\n" +
		"| httpretry | 12345 |\n" +
		"| short     |       |\n"
	assert.Equal(t, want, b.String())
}

func TestFormatDuration(t *testing.T) {
	tests := map[time.Duration]string{
		850 * time.Nanosecond:    "850ns",
		1500 * time.Nanosecond:   "1.50µs",
		12300 * time.Microsecond: "12.3ms",
		104 * time.Millisecond:   "104ms",
		1500 * time.Millisecond:  "1.50s",
		17 * time.Second:         "17.0s",
	}
	for d, want := range tests {
		assert.Equal(t, want, FormatDuration(d), d.String())
	}
}

func TestFormatBytes(t *testing.T) {
	assert.Equal(t, "512 B", FormatBytes(512))
	assert.Equal(t, "39.8 KiB", FormatBytes(40800))
	assert.Equal(t, "1.00 MiB", FormatBytes(1<<20))
	assert.Equal(t, "158 MiB", FormatBytes(158<<20))
}
