package bench

import (
	"testing"
)

// BenchmarkGET is scenario 1's happy path: a GET whose first attempt
// succeeds, against an in-process stub base.
func BenchmarkGET(b *testing.B) { benchCase(b, OverheadCases()[0]) }

// BenchmarkPOSTGetBody is a 1 MiB POST whose request has GetBody.
func BenchmarkPOSTGetBody(b *testing.B) { benchCase(b, OverheadCases()[1]) }

// BenchmarkPOSTReader is a 1 MiB POST from a plain io.Reader.
func BenchmarkPOSTReader(b *testing.B) { benchCase(b, OverheadCases()[2]) }

// BenchmarkLoopbackGET is scenario 2: sequential GETs to a net/http server
// on 127.0.0.1, every library wrapping the same base transport.
func BenchmarkLoopbackGET(b *testing.B) {
	srv, err := NewOKServer()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	base := NewLoopbackBase()
	defer base.CloseIdleConnections()
	for _, lib := range Libraries() {
		b.Run(lib.Name, LoopbackGET(srv.URL, lib.Wrap(base)))
	}
}

func benchCase(b *testing.B, c Case) {
	var base StubTransport
	for _, lib := range Libraries() {
		b.Run(lib.Name, c.Bench(lib.Wrap(base)))
	}
}

// BenchmarkResend is the cost of one resend: a GET whose first attempt
// gets a 503 and whose second a 200, resent at once and with no budget,
// against two calls of the bare stub.
func BenchmarkResend(b *testing.B) {
	for _, lib := range ResendLibraries() {
		b.Run(lib.Name, BenchResend(lib))
	}
}
