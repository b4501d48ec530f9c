package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/httpretry/httpretry"
	"github.com/httpretry/httpretry/bench"
)

// runUpload is scenario 5: a large body streamed from an io.Pipe with no
// GetBody and no length.
func runUpload(w, log io.Writer, cfg config) error {
	t := bench.NewTable(1, "library", "peak extra heap", "allocated", "first byte: median", "first byte: least", "total", "server read", "status")
	for _, l := range bench.Libraries() {
		r, err := bench.RunUpload(l, cfg.uploadSize, cfg.uploadRounds)
		if err != nil {
			return fmt.Errorf("%s: %w", l.Name, err)
		}
		fmt.Fprintf(log, "upload %s: %+v\n", l.Name, r)
		t.Add(l.Name, bench.FormatBytes(r.PeakHeap), bench.FormatBytes(r.Allocated),
			bench.FormatDuration(r.TTFB), bench.FormatDuration(r.TTFBMin), bench.FormatDuration(r.Total),
			bench.FormatBytes(uint64(r.Received)), strconv.Itoa(r.Status))
	}
	limit := httpretry.DefaultPolicy().MaxReplayBytes
	fmt.Fprintf(w, "## 5. Streamed upload without GetBody\n\nA %s PUT whose body comes from an `io.Pipe` "+
		"(no GetBody, no Content-Length: sent chunked), over loopback, %d times per library after a warm-up "+
		"request. Peak extra heap: the largest heap (live and uncollected objects, sampled every 250 µs with "+
		"runtime/metrics) above the heap at the call, the worst of the runs; allocated: bytes allocated during "+
		"the upload, the worst of the runs; first byte: from the call to the server's first body byte, "+
		"the median and the least of the runs (a wake-up of the virtual machine adds about 2 ms to some runs, "+
		"with or without a middleware). httpretry's MaxReplayBytes is %s, so its target is at most %s.\n\n",
		bench.FormatBytes(uint64(cfg.uploadSize)), cfg.uploadRounds,
		bench.FormatBytes(uint64(limit)), bench.FormatBytes(uint64(limit)+64<<10))
	_, err := t.WriteTo(w)
	fmt.Fprintln(w)
	return err
}
