package main

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestDemoReport runs the demo as a new user would and checks the story it
// tells, scenario by scenario.
func TestDemoReport(t *testing.T) {
	var buf bytes.Buffer
	out = &buf
	t.Cleanup(func() { http.DefaultTransport.(*http.Transport).CloseIdleConnections() })
	require.NoError(t, run())
	report := buf.String()
	t.Log("\n" + report)
	for _, want := range []string{
		`(?s)1\. A flaky.*attempt 1: status 503 -> retry after.*attempt 2: status 503 -> retry after.*=> 200 ok  \(server saw 3 call\(s\)`,
		`(?s)2\. Rate limited.*attempt 1: status 429 -> retry after 1(\.\d+)?s\n.*=> 200 ok  \(server saw 2 call\(s\)`,
		`(?s)3\. A slow endpoint.*attempt 1: no response headers within PerTryTimeout -> retry after.*=> 200 ok  \(server saw 2 call\(s\)`,
		`(?s)4\. A POST without.*attempt 1: status 503 -> gave up \(not-idempotent\)\n.*=> 503 busy  \(server saw 1 call\(s\)`,
		`(?s)5\. A POST with.*attempt 1: status 503 -> retry after.*order "3 pears" taken \(key "order-7f3a"\)  \(server saw 2 call\(s\)`,
		`(?s)6\. A burst.*resends sent: [01] of the 300 that MaxRetries 3 allows\n +gave up: \d+ requests when the upstream kept failing \(hold\),\n +\d+ when the budget refused a resend, 0 when MaxRetries ran out\n +=> server saw 10[01] calls for 100 requests: amplification 1\.0[01]`,
		`(?s)7\. One request in ten.*without hedging\n.*0 copies sent.*with Hedge.*[1-9] copies sent`,
		`(?s)8\. Failover.*primary http://127\.0\.0\.1:\d+, standby http://127\.0\.0\.1:\d+\n.*GET /report\n +attempt 1 to primary: connection refused -> fallback: attempt 2 to standby, at once\n +=> 200 report from the standby  \(primary saw 0 call\(s\), standby 1;`,
		`(?s)8\. Failover.*POST /orders/c\n +attempt 1 to primary: connection refused -> fallback: attempt 2 to standby, at once\n +=> 200 order "1 melon" taken by the standby  \(primary saw 0 call\(s\), standby 1;`,
		`(?s)8\. Failover.*POST /orders/d\n +attempt 1 to primary: status 503 -> gave up \(not-idempotent\)\n +it reached the primary[^\n]*\n +without an Idempotency-Key[^\n]*\n +=> 503 overloaded  \(primary saw 1 call\(s\), standby 0;`,
		`(?s)11\. A download cut twice.*body broke after 1048576 bytes \(error: unexpected EOF\) -> resume request for the rest\n +body broke after 3145728 bytes \(error: unexpected EOF\) -> resume request.*ranges asked: \["" "bytes=1048576-" "bytes=3145728-"\]\n +=> read 4194304 bytes, error <nil>, identical to the file: true  \(server saw 3 call\(s\)\)`,
		`(?s)9\. One attempt in fifty.*300 GET without hedging\n +=> [^\n]*; 0 copies sent;.*300 GET with Hedge\{Quantile: 0\.95, Max: 1\}\n +no copy until 32 answers are in[^\n]*\n +learned delay \(BudgetStats\.HedgeAfter\): [1-9][^\n]*\n.*=> [^\n]*; [1-9]\d* copies sent;`,
	} {
		assert.Regexp(t, regexp.MustCompile(want), report)
	}
	// A terminal's width, and a reader's: a summary of 202 columns on one
	// line was hard to parse.
	for i, line := range strings.Split(report, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), 100, "line %d: %s", i+1, line)
	}
}
