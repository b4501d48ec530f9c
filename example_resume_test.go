package httpretry_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/httpretry/httpretry"
)

// A download whose connection drops after 100,000 bytes is read whole: the
// rest is asked for with Range and If-Range, and the caller's Read never
// sees the break.
func ExamplePolicy_resume() {
	data := strings.Repeat("0123456789", 30_000) // 300,000 bytes
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Etag", `"v1"`) // a strong validator makes the body resumable
		if n.Add(1) == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			io.WriteString(w, data[:100_000])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-body
		}
		fmt.Printf("server: Range %s, If-Range %s\n", r.Header.Get("Range"), r.Header.Get("If-Range"))
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(data))
	}))
	defer srv.Close()

	rt := httpretry.New(nil, httpretry.WithObserver(func(e httpretry.Event) {
		if e.Kind == httpretry.EventResume {
			fmt.Printf("resume after %d bytes: %v\n", e.Offset, e.Err)
		}
	}))
	defer rt.CloseIdleConnections()
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("read %d bytes, identical: %v, error: %v\n", len(body), string(body) == data, err)
	// Output:
	// resume after 100000 bytes: unexpected EOF
	// server: Range bytes=100000-, If-Range "v1"
	// read 300000 bytes, identical: true, error: <nil>
}
