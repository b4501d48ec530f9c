package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// writeMachine prints what a reader needs to compare a run with theirs:
// when, on what CPU and with which Go.
func writeMachine(w io.Writer, now time.Time) {
	fmt.Fprintf(w, "- date: %s\n", now.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "- Go: %s\n\n", runtime.Version())
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "unknown
// CPU" where there is none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
