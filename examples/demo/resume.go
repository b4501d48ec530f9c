package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/httpretry/httpretry"
)

// resume downloads a 4 MiB file whose server cuts the connection twice,
// after 1 MiB and after 3 MiB, and prints each resume: the caller reads
// one whole body, byte for byte, and the server sends each byte once.
func resume(*flakyServer) {
	const size = 4 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7 % 251)
	}
	var (
		mu     sync.Mutex
		calls  int
		ranges []string
	)
	cutAt := []int64{1 << 20, 2 << 20} // bytes of each cut response before the cut
	origin, err := startOrigin("127.0.0.1:0", func(w http.ResponseWriter, r *http.Request, _ []byte) {
		mu.Lock()
		calls++
		n := calls
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		w.Header().Set("Etag", `"report-v1"`)
		var cw io.Writer = w
		if n <= len(cutAt) {
			cw = &cutter{w: w, left: cutAt[n-1]}
		}
		http.ServeContent(responseWriter{w, cw}, r, "", time.Time{}, bytes.NewReader(data))
	})
	if err != nil {
		fmt.Fprintln(out, "  cannot start the file server:", err)
		return
	}
	defer origin.close()

	p := httpretry.DefaultPolicy()
	fmt.Fprintf(out, "  policy: DefaultPolicy, Resume{Max: %d}\n", p.Resume.Max)
	fmt.Fprintln(out, "  GET /report.bin, 4 MiB with an ETag, cut after 1 MiB and again 2 MiB later")
	var l log
	c, rt := client(p, &l)
	defer rt.CloseIdleConnections()
	resp, err := c.Get(origin.url + "/report.bin")
	if err != nil {
		fmt.Fprintln(out, "  =>", err)
		return
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	for _, e := range l.take() {
		if e.Kind == httpretry.EventResume {
			fmt.Fprintf(out, "    body broke after %d bytes (%s) -> resume request for the rest\n", e.Offset, outcomeOf(e))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(out, "    ranges asked: %q\n", ranges)
	whole := err == nil && bytes.Equal(h.Sum(nil), sha(data))
	fmt.Fprintf(out, "    => read %d bytes, error %v, identical to the file: %v  (server saw %d call(s))\n", n, err, whole, calls)
}

func sha(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// cutter writes left bytes, then aborts the connection, as a proxy that
// drops it mid-body would.
type cutter struct {
	w    http.ResponseWriter
	left int64
}

func (c *cutter) Write(p []byte) (int, error) {
	if int64(len(p)) < c.left {
		c.left -= int64(len(p))
		return c.w.Write(p)
	}
	c.w.Write(p[:c.left])
	c.w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// responseWriter is w with its body written through body.
type responseWriter struct {
	http.ResponseWriter
	body io.Writer
}

func (w responseWriter) Write(p []byte) (int, error) { return w.body.Write(p) }
