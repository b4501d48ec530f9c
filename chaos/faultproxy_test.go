package chaos

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// faultProxy is one toxiproxy proxy run in-process on 127.0.0.1, driven
// through toxiproxy's Go types rather than its HTTP API so that no admin
// port is opened and no goroutine outlives the test.
type faultProxy struct {
	t     testing.TB
	proxy *toxiproxy.Proxy
	addr  string
}

// newFaultProxy starts a proxy in front of upstream and stops it, closing
// every connection it holds, when the test ends.
func newFaultProxy(t testing.TB, upstream string) *faultProxy {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(server, "chaos", "127.0.0.1:0", upstream)
	require.NoError(t, p.Start())
	f := &faultProxy{t: t, proxy: p, addr: p.Listen}
	t.Cleanup(func() {
		p.Toxics.ResetToxics(context.Background())
		p.Stop()
	})
	return f
}

// URL is the proxy's base URL.
func (f *faultProxy) URL() string { return "http://" + f.addr }

// toxic describes one toxic as toxiproxy's API takes it.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// add installs a toxic; a zero Toxicity means always.
func (f *faultProxy) add(tx toxic) {
	f.t.Helper()
	if tx.Toxicity == 0 {
		tx.Toxicity = 1
	}
	if tx.Stream == "" {
		tx.Stream = "downstream"
	}
	if tx.Name == "" {
		tx.Name = tx.Type + "_" + tx.Stream
	}
	raw, err := json.Marshal(tx)
	require.NoError(f.t, err)
	_, err = f.proxy.Toxics.AddToxicJson(strings.NewReader(string(raw)))
	require.NoError(f.t, err)
}

// remove takes a toxic away by name.
func (f *faultProxy) remove(name string) {
	f.t.Helper()
	require.NoError(f.t, f.proxy.Toxics.RemoveToxic(context.Background(), name))
}

// reset removes every toxic.
func (f *faultProxy) reset() { f.proxy.Toxics.ResetToxics(context.Background()) }

// disable stops listening and closes every proxied connection, so that
// new dials are refused: the "upstream host is down" fault.
func (f *faultProxy) disable() { f.proxy.Stop() }

// enable listens again on the same address.
func (f *faultProxy) enable() {
	f.t.Helper()
	err := f.proxy.Start()
	if err == toxiproxy.ErrProxyAlreadyStarted {
		return
	}
	require.NoError(f.t, err)
}
