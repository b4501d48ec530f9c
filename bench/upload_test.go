package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunUpload(t *testing.T) {
	const size = 8 << 20
	for _, name := range []string{NameBare, NameHTTPRetry, NameFailsafe} {
		t.Run(name, func(t *testing.T) {
			r, err := RunUpload(lib(t, name), size, 1)
			require.NoError(t, err)
			assert.Equal(t, 200, r.Status)
			assert.Equal(t, int64(size), r.Received)
			assert.Greater(t, r.TTFB, time.Duration(0))
			assert.LessOrEqual(t, r.TTFB, r.Total)
			assert.LessOrEqual(t, r.PeakHeap, r.Allocated+1<<20)
		})
	}
}

func TestRunUploadHeapTellsBufferingApart(t *testing.T) {
	const size = 8 << 20
	stream, err := RunUpload(lib(t, NameBare), size, 1)
	require.NoError(t, err)
	copied, err := RunUpload(lib(t, NameFailsafe), size, 1)
	require.NoError(t, err)
	// failsafe reads the whole body into memory before it sends it.
	assert.Less(t, stream.PeakHeap, uint64(size/4))
	assert.GreaterOrEqual(t, copied.Allocated, uint64(size))
}
