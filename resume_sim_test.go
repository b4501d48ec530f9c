package httpretry

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestResumeSimulated draws random policies and origins that cut bodies at
// random offsets, ignore Range, replace the object mid-way, stall, answer
// 503 or reset, and checks the invariants of point 21 on every run: a body
// read to its end is the object byte for byte; a body that fails is a
// prefix of the version it started with, never a byte of another, and its
// error wraps the original break; resume requests stay within Max; and
// nothing outlives the body (goleak, and the synctest bubble).
func TestResumeSimulated(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 60
	}
	for seed := range uint64(runs) {
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 21))
			size := 70_000 + r.IntN(200_000)
			p := resumePolicy()
			p.Resume.Max = 1 + r.IntN(4)
			if r.IntN(2) == 0 {
				p.Resume.Idle = 100 * time.Millisecond
			}
			if r.IntN(2) == 0 {
				p.Backoff = Fixed(10 * time.Millisecond)
			}
			newer := bytes.Repeat([]byte{0xEE}, size)
			script := make([]fault, 12)
			for i := range script {
				switch k := r.IntN(10); {
				case k < 4:
					script[i] = fault{cut: 1 + r.Int64N(int64(size)), early: r.IntN(2) == 0}
				case k == 4 && p.Resume.Idle > 0:
					script[i] = fault{cut: 1 + r.Int64N(int64(size)), stall: true}
				case k == 5:
					script[i] = fault{ignoreRange: true, cut: int64(r.IntN(2)) * (1 + r.Int64N(int64(size)))}
				case k == 6 && i > 0:
					script[i] = fault{replace: newer}
				case k == 7 && i > 0:
					script[i] = fault{status: http.StatusServiceUnavailable}
				case k == 8 && i > 0:
					script[i] = fault{reset: true}
				}
			}
			o := newObject(size, func(n int) fault {
				if n <= len(script) {
					return script[n-1]
				}
				return fault{}
			})
			original := bytes.Clone(o.data)
			rt := New(o.memoryBase(), WithPolicy(p))
			resp := getObject(t, rt, "http://o.example/x")
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, resp.Body.Close())

			resumes := len(o.asked()) - 1
			require.LessOrEqual(t, resumes, p.Resume.Max, "seed %d: resume requests within Max", seed)
			if err == nil {
				require.True(t, bytes.Equal(original, got), "seed %d: a body read to its end is the object", seed)
				return
			}
			require.True(t, bytes.Equal(original[:len(got)], got), "seed %d: a failed body is a prefix of its version", seed)
			var wrapsBreak bool
			for _, e := range []error{io.ErrUnexpectedEOF, errBodyIdle} {
				wrapsBreak = wrapsBreak || errors.Is(err, e)
			}
			require.True(t, wrapsBreak, "seed %d: %v wraps the original break", seed, err)
		})
	}
}
