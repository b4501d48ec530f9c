package bench

import (
	"flag"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResendStubAlternates(t *testing.T) {
	var s ResendStub
	req, err := http.NewRequest(http.MethodGet, stubURL, nil)
	require.NoError(t, err)
	for i, want := range []int{503, 200, 503, 200} {
		resp, err := s.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, want, resp.StatusCode, "call %d", i+1)
	}
}

// TestResendCaseRunsForEveryLibrary runs the resend benchmark a few times
// per library: BenchResend fails unless every operation ends with the
// 200, so a library that gave up on the 503 or resent twice would fail.
func TestResendCaseRunsForEveryLibrary(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	require.NotNil(t, bt)
	old := bt.Value.String()
	require.NoError(t, flag.Set("test.benchtime", "3x"))
	defer func() { _ = flag.Set("test.benchtime", old) }()

	libs := ResendLibraries()
	require.Len(t, libs, 4)
	assert.Equal(t, NameBareTwice, libs[0].Name)
	for _, l := range libs {
		r := testing.Benchmark(BenchResend(l))
		assert.Equal(t, 3, r.N, "Resend/%s failed", l.Name)
	}
}
