package otelretry

import (
	"os"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/httpretry/httpretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// namingMeter is a meter that notes the name of every instrument made
// with it, of whatever kind.
type namingMeter struct {
	noop.Meter
	mu    sync.Mutex
	names []string
}

func (m *namingMeter) note(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.names = append(m.names, name)
}

func (m *namingMeter) Int64Counter(n string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.note(n)
	return m.Meter.Int64Counter(n, o...)
}

func (m *namingMeter) Int64UpDownCounter(n string, o ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.note(n)
	return m.Meter.Int64UpDownCounter(n, o...)
}

func (m *namingMeter) Int64Histogram(n string, o ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	m.note(n)
	return m.Meter.Int64Histogram(n, o...)
}

func (m *namingMeter) Int64Gauge(n string, o ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	m.note(n)
	return m.Meter.Int64Gauge(n, o...)
}

func (m *namingMeter) Int64ObservableCounter(n string, o ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	m.note(n)
	return m.Meter.Int64ObservableCounter(n, o...)
}

func (m *namingMeter) Int64ObservableUpDownCounter(n string, o ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	m.note(n)
	return m.Meter.Int64ObservableUpDownCounter(n, o...)
}

func (m *namingMeter) Int64ObservableGauge(n string, o ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	m.note(n)
	return m.Meter.Int64ObservableGauge(n, o...)
}

func (m *namingMeter) Float64Counter(n string, o ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	m.note(n)
	return m.Meter.Float64Counter(n, o...)
}

func (m *namingMeter) Float64UpDownCounter(n string, o ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	m.note(n)
	return m.Meter.Float64UpDownCounter(n, o...)
}

func (m *namingMeter) Float64Histogram(n string, o ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.note(n)
	return m.Meter.Float64Histogram(n, o...)
}

func (m *namingMeter) Float64Gauge(n string, o ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	m.note(n)
	return m.Meter.Float64Gauge(n, o...)
}

func (m *namingMeter) Float64ObservableCounter(n string, o ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	m.note(n)
	return m.Meter.Float64ObservableCounter(n, o...)
}

func (m *namingMeter) Float64ObservableUpDownCounter(n string, o ...metric.Float64ObservableUpDownCounterOption) (metric.Float64ObservableUpDownCounter, error) {
	m.note(n)
	return m.Meter.Float64ObservableUpDownCounter(n, o...)
}

func (m *namingMeter) Float64ObservableGauge(n string, o ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	m.note(n)
	return m.Meter.Float64ObservableGauge(n, o...)
}

// TestREADMEListsEveryInstrument: the instrument tables of README.md name
// exactly the instruments Observer and ObserveBudgets make, so that a new
// one cannot go out undocumented (three once did).
func TestREADMEListsEveryInstrument(t *testing.T) {
	m := &namingMeter{}
	_, err := Observer(m)
	require.NoError(t, err)
	reg, err := ObserveBudgets(m, httpretry.NewBudgets())
	require.NoError(t, err)
	require.NoError(t, reg.Unregister())

	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var documented []string
	for _, row := range regexp.MustCompile("(?m)^\\| `(httpretry\\.[a-z.]+)` \\|").FindAllStringSubmatch(string(data), -1) {
		documented = append(documented, row[1])
	}
	slices.Sort(m.names)
	slices.Sort(documented)
	assert.Equal(t, m.names, documented, "instruments made against the README's table rows")
}
