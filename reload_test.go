package httpretry

import (
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReloadsShareOneBase is the pattern docs/reload.md teaches, against
// the one it warns of: ten reloads, each followed by a request read to its
// end, dial the upstream once when every transport shares one base and
// one Budgets, and once per reload when each New(nil) makes a pooled base
// of its own, whose idle connection then stays open until it times out.
func TestReloadsShareOneBase(t *testing.T) {
	const reloads = 10
	tests := []struct {
		name  string
		base  func(shared http.RoundTripper) http.RoundTripper
		dials int64
	}{
		{"one shared base", func(shared http.RoundTripper) http.RoundTripper { return shared }, 1},
		{"New(nil) each time", func(http.RoundTripper) http.RoundTripper { return nil }, reloads},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dials atomic.Int64
			up := newUpstream(t, always(http.StatusOK), func(s *http.Server) {
				s.ConnState = func(_ net.Conn, st http.ConnState) {
					if st == http.StateNew {
						dials.Add(1)
					}
				}
			})
			shared := cleanhttp.DefaultPooledTransport()
			defer shared.CloseIdleConnections()
			budgets := NewBudgets()
			for i := range reloads {
				cfg, err := ParseConfig(fmt.Appendf(nil, `{"default": {"maxRetries": %d}}`, 1+i%3))
				require.NoError(t, err)
				rt := New(tt.base(shared), append(cfg.Options(), WithBudgets(budgets))...)
				resp, err := (&http.Client{Transport: rt}).Get(up.URL)
				require.NoError(t, err)
				readAll(t, resp)
				if tt.dials != 1 {
					// The pools New(nil) made: closed here so that the
					// test leaves nothing behind; a service would not.
					defer rt.CloseIdleConnections()
				}
			}
			assert.Equal(t, tt.dials, dials.Load(), "connections to the upstream across %d reloads", reloads)
		})
	}
}
