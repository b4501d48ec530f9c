package chaos

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

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
	down  bool // disabled: see disable
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
		f.quiesce()
		p.Toxics.ResetToxics(context.Background())
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

// remove takes a toxic away by name, once no connection goes through the
// proxy (see quiesce): the connections it pipes are closed, one more
// fault at the moment of the change.
func (f *faultProxy) remove(name string) {
	f.t.Helper()
	f.whileQuiet(func() {
		require.NoError(f.t, f.proxy.Toxics.RemoveToxic(context.Background(), name))
	})
}

// reset removes every toxic, as remove does.
func (f *faultProxy) reset() {
	f.t.Helper()
	f.whileQuiet(func() { f.proxy.Toxics.ResetToxics(context.Background()) })
}

// whileQuiet runs change with the proxy stopped and every link it kept
// gone, then listens again unless the proxy was disabled.
func (f *faultProxy) whileQuiet(change func()) {
	f.t.Helper()
	f.quiesce()
	change()
	if !f.down {
		f.enable()
	}
}

// quiesce stops the proxy, closing every connection it pipes, and waits
// until the links toxiproxy keeps for them are gone. Toxiproxy v2.5
// deadlocks when a toxic is removed while a link is live or closing:
// RemoveToxic and ResetToxics hold the collection's lock while they wait
// for each link to drop the toxic, and a closing link needs that lock to
// go (Shopify/toxiproxy#558). It hung the soak with a slicer, then with a
// latency toxic after the connections to the upstream had closed and their
// links had not. The count is read under that lock, through reflection:
// toxiproxy exports none.
func (f *faultProxy) quiesce() {
	f.t.Helper()
	f.proxy.Stop()
	require.Eventually(f.t, func() bool { return f.links() == 0 }, 30*time.Second, time.Millisecond,
		"toxiproxy's links close once the proxy has stopped")
}

// links is the number of links toxiproxy keeps for the connections it
// pipes, two a connection.
func (f *faultProxy) links() int {
	f.proxy.Toxics.Lock()
	defer f.proxy.Toxics.Unlock()
	return reflect.ValueOf(f.proxy.Toxics).Elem().FieldByName("links").Len()
}

// disable stops listening and closes every proxied connection, so that
// new dials are refused: the "upstream host is down" fault.
func (f *faultProxy) disable() {
	f.proxy.Stop()
	f.down = true
}

// enable listens again on the same address.
func (f *faultProxy) enable() {
	f.t.Helper()
	f.down = false
	err := f.proxy.Start()
	if err == toxiproxy.ErrProxyAlreadyStarted {
		return
	}
	require.NoError(f.t, err)
}
