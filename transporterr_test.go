package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusedAddr is a loopback address nothing listens on: the port of a
// listener just closed.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func refusedDialError(t *testing.T) error {
	t.Helper()
	conn, err := net.Dial("tcp", refusedAddr(t))
	if conn != nil {
		conn.Close()
	}
	require.Error(t, err)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	return err
}

func refusedRoundTripError(t *testing.T) error {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "http://"+refusedAddr(t)+"/", nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	require.Error(t, err)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	return err
}

func TestPermanent(t *testing.T) {
	cert := &x509.Certificate{DNSNames: []string{"other.example"}}
	unknownAuthority := x509.UnknownAuthorityError{Cert: cert}
	hostname := x509.HostnameError{Certificate: cert, Host: "api.example.com"}
	expired := x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired}
	verification := &tls.CertificateVerificationError{UnverifiedCertificates: []*x509.Certificate{cert}, Err: unknownAuthority}
	recordHeader := tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "https://api.example.com/", Err: err} }

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ftpReq, err := http.NewRequest(http.MethodGet, "ftp://127.0.0.1/file", nil)
	require.NoError(t, err)
	resp, unsupported := tr.RoundTrip(ftpReq)
	require.Nil(t, resp)
	require.Error(t, unsupported)
	require.Contains(t, unsupported.Error(), "unsupported protocol scheme")

	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"unknown authority", unknownAuthority, true},
		{"unknown authority in url.Error", urlErr(unknownAuthority), true},
		{"hostname mismatch", hostname, true},
		{"hostname mismatch wrapped", fmt.Errorf("dial: %w", urlErr(hostname)), true},
		{"expired certificate", expired, true},
		{"certificate verification", verification, true},
		{"certificate verification in url.Error", urlErr(verification), true},
		{"TLS record header", recordHeader, true},
		{"TLS record header in url.Error", urlErr(recordHeader), true},
		{"unsupported scheme from http.Transport", unsupported, true},
		{"unsupported scheme in url.Error", urlErr(unsupported), true},
		{"no Host", errors.New("http: no Host in request URL"), true},
		{"our nil response", errNilResponse, true},
		{"body gone", fmt.Errorf("write: %w", errBodyGone), true},
		{"body closed", errBodyClosed, true},
		{"connection refused", refusedDialError(t), false},
		{"connection refused by http.Transport", refusedRoundTripError(t), false},
		{"unexpected EOF", io.ErrUnexpectedEOF, false},
		{"unexpected EOF in url.Error", urlErr(io.ErrUnexpectedEOF), false},
		{"EOF", io.EOF, false},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{"timeout", context.DeadlineExceeded, false},
		{"our attempt timeout", fmt.Errorf("%w: %w", ErrAttemptTimeout, context.DeadlineExceeded), false},
		{"DNS", &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, permanent(tt.err), "%v", tt.err)
		})
	}
}

func TestDialFailure(t *testing.T) {
	dns := &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"refused dial", refusedDialError(t), true},
		{"refused by http.Transport", refusedRoundTripError(t), true},
		{"DNS error", dns, true},
		{"DNS error in a dial OpError", &net.OpError{Op: "dial", Net: "tcp", Err: dns}, true},
		{"DNS error in url.Error", &url.Error{Op: "Get", URL: "http://nowhere.invalid/", Err: dns}, true},
		{"read reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{"write broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, false},
		{"unexpected EOF", io.ErrUnexpectedEOF, false},
		{"canceled", context.Canceled, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, dialFailure(tt.err), "%v", tt.err)
		})
	}
}
