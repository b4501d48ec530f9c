package httpretry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The resume tests where time matters run in a synctest bubble against the
// in-memory origin, so that every wait is exact.

func readTimed(t *testing.T, resp *http.Response) ([]byte, time.Duration, error) {
	t.Helper()
	start := time.Now()
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return got, time.Since(start), err
}

func delays(evs []Event) []time.Duration {
	var ds []time.Duration
	for _, e := range evs {
		if e.Kind == EventResume {
			ds = append(ds, e.Delay)
		}
	}
	return ds
}

// A resume request answered with Retry-After waits as long as asked; one
// that asks for more than MaxRetryAfter ends the body.
func TestResumeRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name string
		ra   string
		ok   bool
		took time.Duration
	}{
		{"honoured", "2", true, 2 * time.Second},
		{"too long", "60", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newObject(100_000, func(n int) fault {
					switch n {
					case 1:
						return fault{cut: 1000}
					case 2:
						return fault{status: 503, header: http.Header{"Retry-After": {tt.ra}}}
					}
					return fault{}
				})
				rec := &recorder{}
				p := resumePolicy()
				p.Backoff = Fixed(100 * time.Millisecond)
				rt := New(o.memoryBase(), WithPolicy(p), WithObserver(rec.observe))
				got, took, err := readTimed(t, getObject(t, rt, "http://o.example/x"))
				assert.Equal(t, tt.took, took)
				if tt.ok {
					require.NoError(t, err)
					assert.True(t, bytes.Equal(o.data, got))
					assert.Equal(t, []time.Duration{0, 2 * time.Second}, delays(rec.all()))
					assert.Equal(t, 503, rec.all()[1].Status)
					return
				}
				assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
				assert.Equal(t, 1000, len(got))
				assert.Equal(t, ReasonRetryAfterTooLong, rec.giveUp(t))
				assert.Len(t, o.asked(), 2)
			})
		})
	}
}

// Resume requests that fail in a row wait the policy's backoff, counted
// from the first failure with no byte between; one after progress goes at
// once.
func TestResumeBackoffWithoutProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newObject(100_000, func(n int) fault {
			switch n {
			case 1:
				return fault{cut: 1000}
			case 2:
				return fault{status: 502}
			case 3:
				return fault{reset: true}
			}
			return fault{}
		})
		rec := &recorder{}
		p := resumePolicy()
		p.Backoff = Exponential(time.Second, 10*time.Second)
		rt := New(o.memoryBase(), WithPolicy(p), WithObserver(rec.observe))
		got, took, err := readTimed(t, getObject(t, rt, "http://o.example/x"))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(o.data, got))
		assert.Equal(t, 3*time.Second, took)
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, delays(rec.all()))
		assert.Equal(t, []int{1, 2, 3}, []int{rec.all()[0].Attempt, rec.all()[1].Attempt, rec.all()[2].Attempt})
		assert.ErrorIs(t, rec.all()[2].Err, errReset)
		assert.Len(t, o.asked(), 4)
	})
}

// With Idle, a body that stops arriving is abandoned after Idle and the
// rest asked for; a caller slow between its Reads is no stall.
func TestResumeIdle(t *testing.T) {
	t.Run("stall", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := newObject(100_000, func(n int) fault {
				if n == 1 {
					return fault{cut: 30_000, stall: true}
				}
				return fault{}
			})
			rec := &recorder{}
			p := resumePolicy()
			p.Resume.Idle = 300 * time.Millisecond
			rt := New(o.memoryBase(), WithPolicy(p), WithObserver(rec.observe))
			got, took, err := readTimed(t, getObject(t, rt, "http://o.example/x"))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(o.data, got))
			assert.Equal(t, 300*time.Millisecond, took)
			require.Len(t, rec.all(), 1)
			assert.ErrorIs(t, rec.all()[0].Err, errBodyIdle)
			assert.Equal(t, int64(30_000), rec.all()[0].Offset)
		})
	})
	t.Run("slow caller", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := newObject(100_000, nil)
			p := resumePolicy()
			p.Resume.Idle = 300 * time.Millisecond
			rt := New(o.memoryBase(), WithPolicy(p))
			resp := getObject(t, rt, "http://o.example/x")
			var got []byte
			buf := make([]byte, 10_000)
			for {
				n, err := resp.Body.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				time.Sleep(time.Second)
			}
			resp.Body.Close()
			assert.True(t, bytes.Equal(o.data, got))
			assert.Len(t, o.asked(), 1)
		})
	})
}

// Close at any time ends everything: a wait, a resume request in flight,
// a stalled body. The Read in progress returns, and nothing is left.
func TestResumeCloseMidResume(t *testing.T) {
	for _, tt := range []struct {
		name   string
		second fault
		idle   time.Duration
		asked  int
	}{
		{"during the backoff", fault{status: 503}, 0, 2},
		{"during the resume request", fault{hang: true}, 0, 2},
		{"during a stalled read", fault{}, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newObject(100_000, func(n int) fault {
					switch n {
					case 1:
						return fault{cut: 1000, stall: tt.asked == 1}
					case 2:
						return tt.second
					}
					return fault{}
				})
				p := resumePolicy()
				p.Backoff = Fixed(10 * time.Second)
				rt := New(o.memoryBase(), WithPolicy(p))
				resp := getObject(t, rt, "http://o.example/x")
				done := make(chan error, 1)
				var got []byte
				go func() {
					var err error
					got, err = io.ReadAll(resp.Body)
					done <- err
				}()
				time.Sleep(time.Second)
				synctest.Wait()
				require.NoError(t, resp.Body.Close())
				start := time.Now()
				err := <-done
				assert.Zero(t, time.Since(start), "Read returns at once")
				assert.Error(t, err)
				assert.Equal(t, 1000, len(got))
				assert.Len(t, o.asked(), tt.asked)
				time.Sleep(time.Minute)
				assert.Len(t, o.asked(), tt.asked, "no request after Close")
				assert.NoError(t, resp.Body.Close(), "a second Close is harmless")
			})
		})
	}
}

// The caller's context ending during a resume ends the body with its
// error; ending while a body stalls is the caller's doing, not a break.
func TestResumeContextCanceled(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stall bool
		asked int
	}{
		{"during the backoff", false, 2},
		{"during a stalled read", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newObject(100_000, func(n int) fault {
					switch n {
					case 1:
						return fault{cut: 1000, stall: tt.stall}
					case 2:
						return fault{status: 503}
					}
					return fault{}
				})
				rec := &recorder{}
				p := resumePolicy()
				p.Backoff = Fixed(10 * time.Second)
				rt := New(o.memoryBase(), WithPolicy(p), WithObserver(rec.observe))
				ctx, cancel := context.WithCancel(context.Background())
				resp := getCtx(t, ctx, rt, "http://o.example/x")
				time.AfterFunc(time.Second, cancel)
				got, took, err := readTimed(t, resp)
				assert.Equal(t, time.Second, took)
				assert.ErrorIs(t, err, context.Canceled)
				assert.Equal(t, 1000, len(got))
				assert.Len(t, o.asked(), tt.asked)
				if !tt.stall {
					assert.Equal(t, ReasonCanceled, rec.giveUp(t))
				} else {
					assert.Empty(t, rec.all())
				}
			})
		})
	}
}

// No resume request starts once the policy's Deadline has passed.
func TestResumeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newObject(100_000, func(n int) fault {
			if n == 1 {
				return fault{cut: 1000, stall: true}
			}
			return fault{}
		})
		rec := &recorder{}
		p := resumePolicy()
		p.Deadline = 5 * time.Second
		p.Resume.Idle = 6 * time.Second
		rt := New(o.memoryBase(), WithPolicy(p), WithObserver(rec.observe))
		got, took, err := readTimed(t, getObject(t, rt, "http://o.example/x"))
		assert.Equal(t, 6*time.Second, took)
		assert.ErrorIs(t, err, errBodyIdle)
		assert.Equal(t, 1000, len(got))
		assert.Equal(t, ReasonDeadline, rec.giveUp(t))
		assert.Len(t, o.asked(), 1)
	})
}
