package bodyrec

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkySource is a caller's body that hands out data in small chunks of
// random size, optionally failing after failAt bytes, and counts what was
// read from it and how often it was closed.
type chunkySource struct {
	data     []byte
	off      int
	rng      *rand.Rand
	maxChunk int
	failAt   int   // fail once off reaches it; negative: never
	failErr  error // returned with the last bytes before failAt
	read     atomic.Int64
	closes   atomic.Int32
	closeErr error
	reads    atomic.Int32 // Read calls in flight, to catch concurrent use
}

func newChunkySource(data []byte, seed uint64) *chunkySource {
	return &chunkySource{data: data, rng: rand.New(rand.NewPCG(seed, 7)), maxChunk: 17, failAt: -1}
}

func (s *chunkySource) Read(p []byte) (int, error) {
	if s.reads.Add(1) != 1 {
		panic("concurrent Read on the caller's body")
	}
	defer s.reads.Add(-1)
	if s.closes.Load() != 0 {
		panic("Read on the caller's body after Close")
	}
	if s.failAt >= 0 && s.off >= s.failAt {
		return 0, s.failErr
	}
	if s.off == len(s.data) {
		return 0, io.EOF
	}
	n := min(len(p), 1+s.rng.IntN(s.maxChunk), len(s.data)-s.off)
	if s.failAt >= 0 {
		n = min(n, s.failAt-s.off)
	}
	copy(p, s.data[s.off:s.off+n])
	s.off += n
	s.read.Add(int64(n))
	if s.failAt >= 0 && s.off == s.failAt {
		return n, s.failErr // the bytes and the error together
	}
	return n, nil
}

func (s *chunkySource) Close() error {
	s.closes.Add(1)
	return s.closeErr
}

func seededBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// readN reads exactly n bytes from r in reads of random small sizes.
func readExactly(t *testing.T, r io.Reader, n int, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]byte, 0, n)
	for len(out) < n {
		buf := make([]byte, min(1+rng.IntN(40), n-len(out)))
		k, err := r.Read(buf)
		out = append(out, buf[:k]...)
		require.NoError(t, err, "after %d bytes", len(out))
	}
	return out
}

// readRest reads r to its end in reads of random small sizes and returns
// the bytes and the error that ended it (nil for io.EOF).
func readToEnd(r io.Reader, seed uint64) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, 5))
	var out []byte
	for {
		buf := make([]byte, 1+rng.IntN(40))
		k, err := r.Read(buf)
		out = append(out, buf[:k]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func recordCap(rb *Recorder) (caps int64) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	for _, c := range rb.chunks {
		caps += int64(cap(c))
	}
	return caps
}

func TestFirstReaderStreamsThenReplays(t *testing.T) {
	data := seededBytes(10_000, 1)
	src := newChunkySource(data, 1)
	rb := New(src, 1<<20, -1)
	require.True(t, rb.Untouched())
	require.True(t, rb.Replayable())

	r1 := rb.Reader()
	require.NotNil(t, r1)
	got, err := readToEnd(r1, 1)
	require.NoError(t, err)
	require.Equal(t, data, got)
	n, err := r1.Read(make([]byte, 8))
	assert.Equal(t, 0, n)
	assert.Equal(t, io.EOF, err, "EOF again")
	assert.False(t, rb.Untouched())
	assert.True(t, rb.Replayable())

	for i := range 3 {
		r := rb.Reader()
		require.NotNil(t, r, "reader %d", i+2)
		got, err := readToEnd(r, uint64(10+i))
		require.NoError(t, err)
		require.Equal(t, data, got, "reader %d", i+2)
		require.NoError(t, r.Close())
	}
	assert.Equal(t, int64(len(data)), src.read.Load(), "the caller's body is read once")
	assert.Zero(t, src.closes.Load())
	require.NoError(t, r1.Close())
	rb.Finish()
	assert.Equal(t, int32(1), src.closes.Load())
}

func TestZeroLengthRead(t *testing.T) {
	rb := New(newChunkySource([]byte("abc"), 1), 10, -1)
	r := rb.Reader()
	n, err := r.Read(nil)
	assert.Equal(t, 0, n)
	assert.NoError(t, err)
	assert.True(t, rb.Untouched())
}

func TestEmpty(t *testing.T) {
	for _, limit := range []int64{0, 10} {
		src := newChunkySource(nil, 1)
		rb := New(src, limit, 0)
		got, err := readToEnd(rb.Reader(), 1)
		require.NoError(t, err)
		assert.Empty(t, got)
		assert.True(t, rb.Replayable(), "limit %d", limit)
		got, err = readToEnd(rb.Reader(), 2)
		require.NoError(t, err)
		assert.Empty(t, got)
	}
}

func TestSecondReaderHalfway(t *testing.T) {
	data := seededBytes(10_000, 2)
	src := newChunkySource(data, 2)
	rb := New(src, 1<<20, int64(len(data)))

	r1 := rb.Reader()
	first := readExactly(t, r1, 4000, 1)
	require.Equal(t, data[:4000], first)
	assert.Equal(t, int64(4000), src.read.Load(), "no read-ahead")

	r2 := rb.Reader()
	require.NotNil(t, r2)
	// r2 replays the 4000 recorded bytes, then reads the source on.
	mid := readExactly(t, r2, 7000, 2)
	require.Equal(t, data[:7000], mid)
	assert.Equal(t, int64(7000), src.read.Load())

	// r1 goes on from the record, r2 and r1 take turns to the end.
	rest1 := readExactly(t, r1, 5000, 3)
	require.Equal(t, data[4000:9000], rest1)
	rest1, err := readToEnd(r1, 4)
	require.NoError(t, err)
	require.Equal(t, data[9000:], rest1)
	rest2, err := readToEnd(r2, 5)
	require.NoError(t, err)
	require.Equal(t, data[7000:], rest2)
	assert.Equal(t, int64(len(data)), src.read.Load())
}

func TestLargerThanLimit(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name       string
		size       int
		replayable bool
	}{
		{"one byte", 1, true},
		{"just below", limit - 1, true},
		{"exactly the limit", limit, true},
		{"one past", limit + 1, false},
		{"five times", 5 * limit, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := seededBytes(tt.size, 3)
			src := newChunkySource(data, 3)
			rb := New(src, limit, -1)
			r1 := rb.Reader()
			got, err := readToEnd(r1, 1)
			require.NoError(t, err)
			require.Equal(t, data, got, "the first reader gets the whole body")
			assert.Equal(t, tt.replayable, rb.Replayable())
			r2 := rb.Reader()
			if !tt.replayable {
				assert.Nil(t, r2)
				assert.Zero(t, recordCap(rb), "the record is dropped")
			} else {
				require.NotNil(t, r2)
				got, err := readToEnd(r2, 2)
				require.NoError(t, err)
				assert.Equal(t, data, got)
				r2.Close()
			}
			r1.Close()
			rb.Finish()
			assert.Equal(t, int32(1), src.closes.Load())
		})
	}
}

func TestReaderBehindWhenRecordDropped(t *testing.T) {
	data := seededBytes(5000, 4)
	rb := New(newChunkySource(data, 4), 1000, -1)
	r1 := rb.Reader()
	require.Equal(t, data[:500], readExactly(t, r1, 500, 1))
	r2 := rb.Reader()
	require.NotNil(t, r2)
	require.Equal(t, data[:300], readExactly(t, r2, 300, 2))

	got, err := readToEnd(r1, 3)
	require.NoError(t, err)
	require.Equal(t, data[500:], got, "the reader in front streams on")

	_, err = r2.Read(make([]byte, 10))
	assert.ErrorIs(t, err, ErrGone, "the reader behind cannot be served")
	assert.Nil(t, rb.Reader())
}

func TestContentLengthAboveLimit(t *testing.T) {
	data := seededBytes(5000, 5)
	src := newChunkySource(data, 5)
	rb := New(src, 1000, int64(len(data)))
	assert.True(t, rb.Replayable(), "untouched")
	r1 := rb.Reader()
	require.NotNil(t, r1)
	require.Equal(t, data[:10], readExactly(t, r1, 10, 1))
	assert.Zero(t, recordCap(rb), "not one byte recorded")
	assert.False(t, rb.Replayable())
	assert.Nil(t, rb.Reader())
	got, err := readToEnd(r1, 2)
	require.NoError(t, err)
	require.Equal(t, data[10:], got)
	assert.Zero(t, recordCap(rb))
}

func TestLimitZero(t *testing.T) {
	for _, limit := range []int64{0, -1} {
		data := []byte("hello, world")
		src := newChunkySource(data, 6)
		rb := New(src, limit, -1)
		assert.True(t, rb.Replayable())
		assert.True(t, rb.Untouched())
		r1 := rb.Reader()
		r2 := rb.Reader() // as a resend of a request that never left would
		require.NotNil(t, r1)
		require.NotNil(t, r2)
		assert.True(t, rb.Replayable(), "still untouched")

		got := readExactly(t, r1, 1, 1)
		assert.Equal(t, data[:1], got)
		assert.False(t, rb.Untouched())
		assert.False(t, rb.Replayable(), "limit %d", limit)
		assert.Nil(t, rb.Reader())
		_, err := r2.Read(make([]byte, 4))
		assert.ErrorIs(t, err, ErrGone)

		rest, err := readToEnd(r1, 2)
		require.NoError(t, err)
		assert.Equal(t, data[1:], rest)
		assert.Zero(t, recordCap(rb))
	}
}

var errSourceFailed = errors.New("boom")

func TestReadErrorSticky(t *testing.T) {
	data := seededBytes(1000, 7)
	src := newChunkySource(data, 7)
	src.failAt, src.failErr = 300, errSourceFailed
	rb := New(src, 1<<20, -1)

	r1 := rb.Reader()
	require.Equal(t, data[:100], readExactly(t, r1, 100, 1))
	r2 := rb.Reader()
	require.NotNil(t, r2)

	got, err := readToEnd(r1, 2)
	require.ErrorIs(t, err, errSourceFailed)
	require.Equal(t, data[100:300], got)
	for range 3 {
		n, err := r1.Read(make([]byte, 10))
		assert.Zero(t, n)
		assert.ErrorIs(t, err, errSourceFailed, "sticky")
	}
	assert.ErrorIs(t, rb.ReadErr(), errSourceFailed)
	assert.False(t, rb.Replayable())
	assert.Nil(t, rb.Reader())

	// A reader behind gets what was recorded, then the same error.
	got, err = readToEnd(r2, 3)
	require.ErrorIs(t, err, errSourceFailed)
	require.Equal(t, data[:300], got)
	assert.Equal(t, int64(300), src.read.Load())

	r1.Close()
	r2.Close()
	rb.Finish()
	assert.Equal(t, int32(1), src.closes.Load())
}

func TestReadErrorAtFirstByte(t *testing.T) {
	src := newChunkySource([]byte("abc"), 8)
	src.failAt, src.failErr = 0, errSourceFailed
	rb := New(src, 10, -1)
	r := rb.Reader()
	_, err := r.Read(make([]byte, 4))
	assert.ErrorIs(t, err, errSourceFailed)
	assert.ErrorIs(t, rb.ReadErr(), errSourceFailed)
	assert.True(t, rb.Untouched())
	assert.False(t, rb.Replayable(), "a failed body is not replayable even untouched")
	assert.Nil(t, rb.Reader())
}

func TestCloseOnce(t *testing.T) {
	tests := []struct {
		name  string
		steps []string // "finish", "c1", "c2"
		// closedAfter is the index of the step after which the source is
		// closed.
		closedAfter int
	}{
		{"finish first", []string{"finish", "c1", "c2"}, 2},
		{"finish between", []string{"c2", "finish", "c1"}, 2},
		{"finish last", []string{"c1", "c2", "finish"}, 2},
		{"closes repeated", []string{"c1", "c1", "finish", "c1", "c2", "c2", "finish"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newChunkySource([]byte("payload"), 9)
			rb := New(src, 100, -1)
			r1, r2 := rb.Reader(), rb.Reader()
			_, err := readToEnd(r1, 1)
			require.NoError(t, err)
			for i, step := range tt.steps {
				switch step {
				case "finish":
					rb.Finish()
				case "c1":
					require.NoError(t, r1.Close())
				case "c2":
					require.NoError(t, r2.Close())
				}
				want := int32(0)
				if i >= tt.closedAfter {
					want = 1
				}
				require.Equal(t, want, src.closes.Load(), "after step %d (%s)", i, step)
			}
			assert.False(t, rb.Replayable(), "closed")
			assert.Nil(t, rb.Reader())
			_, err = r1.Read(make([]byte, 4))
			assert.ErrorIs(t, err, ErrClosed)
		})
	}
}

func TestCloseWithoutReaders(t *testing.T) {
	src := newChunkySource([]byte("x"), 10)
	rb := New(src, 100, -1)
	rb.Finish()
	assert.Equal(t, int32(1), src.closes.Load())
	rb.Finish()
	assert.Equal(t, int32(1), src.closes.Load())
	assert.Nil(t, rb.Reader())
}

func TestCloseError(t *testing.T) {
	src := newChunkySource([]byte("x"), 11)
	src.closeErr = errSourceFailed
	rb := New(src, 100, -1)
	r := rb.Reader()
	rb.Finish()
	assert.ErrorIs(t, r.Close(), errSourceFailed, "the last reader's Close closes the caller's body")
	assert.NoError(t, r.Close(), "a second Close is a no-op")
	assert.Equal(t, int32(1), src.closes.Load())
}

func TestReaderAfterFinishWhileOpen(t *testing.T) {
	data := []byte("0123456789")
	src := newChunkySource(data, 12)
	rb := New(src, 100, -1)
	r1 := rb.Reader()
	rb.Finish()
	r2 := rb.Reader() // a straggling hedge may still ask
	require.NotNil(t, r2)
	r1.Close()
	assert.Zero(t, src.closes.Load())
	got, err := readToEnd(r2, 1)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	r2.Close()
	assert.Equal(t, int32(1), src.closes.Load())
}

func TestConcurrentReaders(t *testing.T) {
	for iter := range 20 {
		data := seededBytes(20_000+iter*37, uint64(iter))
		src := newChunkySource(data, uint64(iter))
		src.maxChunk = 600
		rb := New(src, 1<<20, -1)
		const readers = 4
		rs := make([]*Reader, readers)
		for i := range rs {
			rs[i] = rb.Reader()
			require.NotNil(t, rs[i])
		}
		results := make([][]byte, readers)
		errs := make([]error, readers)
		var wg sync.WaitGroup
		for i := range rs {
			wg.Go(func() {
				results[i], errs[i] = readToEnd(rs[i], uint64(iter*readers+i))
				rs[i].Close()
			})
		}
		wg.Go(rb.Finish)
		wg.Wait()
		for i := range rs {
			require.NoError(t, errs[i], "iteration %d reader %d", iter, i)
			require.True(t, bytes.Equal(data, results[i]), "iteration %d reader %d: %d bytes", iter, i, len(results[i]))
		}
		require.Equal(t, int64(len(data)), src.read.Load())
		require.Equal(t, int32(1), src.closes.Load())
	}
}

func TestConcurrentReadersOverLimit(t *testing.T) {
	// Hedged attempts of a body that outgrows the limit: every reader gets
	// a prefix of the body, then either the rest or ErrGone.
	for iter := range 20 {
		data := seededBytes(8000, uint64(iter))
		src := newChunkySource(data, uint64(iter))
		src.maxChunk = 300
		rb := New(src, 3000, -1)
		rs := []*Reader{rb.Reader(), rb.Reader(), rb.Reader()}
		results := make([][]byte, len(rs))
		errs := make([]error, len(rs))
		var wg sync.WaitGroup
		for i := range rs {
			wg.Go(func() {
				results[i], errs[i] = readToEnd(rs[i], uint64(iter*10+i))
				rs[i].Close()
			})
		}
		wg.Wait()
		rb.Finish()
		whole := 0
		for i := range rs {
			require.True(t, bytes.HasPrefix(data, results[i]), "iteration %d reader %d", iter, i)
			if errs[i] == nil {
				require.Len(t, results[i], len(data))
				whole++
			} else {
				require.ErrorIs(t, errs[i], ErrGone)
			}
		}
		require.GreaterOrEqual(t, whole, 1, "the reader in front gets all of it")
		require.Equal(t, int64(len(data)), src.read.Load())
		require.Equal(t, int32(1), src.closes.Load())
	}
}

func TestMemoryBound(t *testing.T) {
	tests := []struct {
		name          string
		size          int
		limit         int64
		contentLength int64
		maxChunk      int
	}{
		{"small, unknown length", 3000, 1 << 20, -1, 17},
		{"large, unknown length", 300_000, 1 << 20, -1, 5000},
		{"at the limit", 100_000, 100_000, -1, 3000},
		{"over the limit", 150_000, 100_000, -1, 3000},
		{"odd limit", 50_001, 50_001, -1, 4097},
		{"known length", 200_000, 1 << 20, 200_000, 9000},
		{"known short length", 20_000, 1 << 20, 20_000, 900},
		{"known length at the limit", 65_536, 65_536, 65_536, 999},
		{"length understated", 100_000, 1 << 20, 10, 700},
		{"length overstated", 1000, 1 << 20, 500_000, 100},
		{"length zero means unknown", 10_000, 1 << 20, 0, 100},
		{"tiny limit", 100, 7, -1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := seededBytes(tt.size, 13)
			src := newChunkySource(data, 13)
			src.maxChunk = tt.maxChunk
			rb := New(src, tt.limit, tt.contentLength)
			r := rb.Reader()
			buf := make([]byte, 8192)
			var peak int64
			var got []byte
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				c := recordCap(rb)
				peak = max(peak, c)
				require.LessOrEqual(t, c, tt.limit+chunkSize, "after %d bytes", len(got))
				rb.mu.Lock()
				size := rb.size
				rb.mu.Unlock()
				require.LessOrEqual(t, size, c)
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
			}
			require.Equal(t, data, got)
			if int64(tt.size) <= tt.limit {
				require.True(t, rb.Replayable())
				assert.GreaterOrEqual(t, peak, int64(tt.size))
				replay, err := readToEnd(rb.Reader(), 1)
				require.NoError(t, err)
				require.Equal(t, data, replay)
			} else {
				assert.False(t, rb.Replayable())
				assert.Zero(t, recordCap(rb))
			}
			if tt.contentLength == int64(tt.size) && tt.size < chunkSize {
				assert.Equal(t, int64(tt.size), peak, "a known length below a chunk is recorded exactly")
			}
		})
	}
}

func TestRevokedReaderStopsAndTheRecordReplaysWhole(t *testing.T) {
	data := seededBytes(100, 11)
	src := newChunkySource(data, 11)
	rb := New(src, 1000, -1)
	old := rb.Reader()
	require.Equal(t, data[:40], readExactly(t, old, 40, 11))
	assert.True(t, rb.Busy())
	rb.Revoke()
	_, err := old.Read(make([]byte, 40))
	assert.ErrorIs(t, err, ErrRevoked)
	fresh := rb.Reader()
	got, err := io.ReadAll(fresh)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	old.Close()
	fresh.Close()
	rb.Finish()
	assert.EqualValues(t, 1, src.closes.Load())
}
