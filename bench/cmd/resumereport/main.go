// Command resumereport measures what Policy.Resume (DESIGN point 21) does
// for downloads whose bodies break mid-stream, over loopback, and prints
// Markdown tables: 100 GETs of an 8 MiB object with a strong ETag, the
// first response of each cut at a uniform random offset with probability
// 0.3 and 0.6, for a plain client, the hand-rolled download again from
// byte 0, httpretry, and go-retryablehttp and failsafe-go as they are;
// then half the first responses stalling 5 s mid-body, with and without
// Resume.Idle.
//
//	go run ./cmd/resumereport [-gets 100] [-size 8388608]
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/httpretry/httpretry/bench"
)

func main() {
	gets := flag.Int("gets", 100, "downloads per row")
	size := flag.Int("size", 8<<20, "object bytes")
	stall := flag.Duration("stall", 5*time.Second, "how long a stalled body stops")
	flag.Parse()
	if err := report(os.Stdout, os.Stderr, *gets, *size, *stall); err != nil {
		fmt.Fprintln(os.Stderr, "resumereport:", err)
		os.Exit(1)
	}
}

func report(w, progress io.Writer, gets, size int, stall time.Duration) error {
	fmt.Fprintln(w, "## A broken body resumes (DESIGN point 21)")
	fmt.Fprintf(w, "\n%d GETs, one at a time, of a %s object served by http.ServeContent with a strong ETag over loopback; "+
		"the first response of each GET is cut (its bytes up to a uniform random offset flushed, then the connection aborted) "+
		"with the probability given, the responses after it come whole, and each GET meets the same fault whatever the client. "+
		"Intact: read to the end with no error and hashing (SHA-256) as the object. Bytes: body bytes the server wrote ÷ "+
		"body bytes of the bodies the caller finally read. Requests: requests the server received per GET.\n\n",
		gets, bench.FormatBytes(uint64(size)))
	t := bench.NewTable(2, "cut probability", "client", "intact", "bytes served ÷ delivered", "requests / GET", "time / GET")
	for _, p := range []float64{0.3, 0.6} {
		for _, c := range bench.ResumeClients(0) {
			r, err := run(progress, bench.ResumeConfig{Size: size, GETs: gets, Cut: p, Seed: 21}, c)
			if err != nil {
				return err
			}
			t.Add(append([]string{fmt.Sprint(p), c.Name}, bench.FormatResume(r)...)...)
		}
	}
	if _, err := t.WriteTo(w); err != nil {
		return err
	}

	const concurrency = 10
	fmt.Fprintf(w, "\nThe same object, %d GETs, %d at a time; the first response of half of them stops for %v at a uniform random "+
		"offset, then goes on.\n\n", gets, concurrency, stall)
	t = bench.NewTable(1, "client", "intact", "bytes served ÷ delivered", "requests / GET", "time / GET")
	idle := 300 * time.Millisecond
	clients := []bench.ResumeClient{
		{Name: "plain", New: func(base http.RoundTripper) http.RoundTripper { return base }},
		bench.ResumeClients(0)[2],
		{Name: "httpretry DefaultPolicy, Idle 300ms", New: bench.ResumeClients(idle)[2].New},
		{Name: "httpretry Budget.Percent 100, Idle 300ms", New: bench.ResumeClients(idle)[3].New},
	}
	for _, c := range clients {
		r, err := run(progress, bench.ResumeConfig{Size: size, GETs: gets, Concurrency: concurrency, StallShare: 0.5, Stall: stall, Seed: 22}, c)
		if err != nil {
			return err
		}
		t.Add(append([]string{c.Name}, bench.FormatResume(r)...)...)
	}
	_, err := t.WriteTo(w)
	return err
}

func run(progress io.Writer, cfg bench.ResumeConfig, c bench.ResumeClient) (bench.ResumeResult, error) {
	start := time.Now()
	r, err := bench.RunResume(cfg, c)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(progress, "cut %.1f stall %.1f %-40s intact %d/%d served %d delivered %d requests %d in %v\n",
		cfg.Cut, cfg.StallShare, c.Name, r.Intact, r.GETs, r.Served, r.Delivered, r.Requests, time.Since(start).Round(time.Millisecond))
	return r, nil
}
