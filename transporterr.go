package httpretry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
)

// permanentMessages are errors net/http returns for requests that no resend
// can fix; it exports no types for them.
var permanentMessages = []string{
	"unsupported protocol scheme",
	"no Host in request URL",
	"invalid header field",
	"invalid method",
	"nil Request.URL",
	"nil Request.Header",
	"server gave HTTP response to HTTPS client",
	// The request's ContentLength disagrees with its body: every attempt
	// would put the same truncated or overlong request on the wire.
	"with Body length",
}

// permanent reports whether err is a transport error that a resend would
// only repeat: a certificate the client rejects, a malformed request or URL,
// an unsupported scheme.
func permanent(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		recordHeader     tls.RecordHeaderError
	)
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verification) || errors.As(err, &recordHeader) ||
		errors.Is(err, errNilResponse) || errors.Is(err, errBodyGone) || errors.Is(err, errBodyClosed) ||
		errors.Is(err, errBodyRevoked) {
		return true
	}
	msg := err.Error()
	for _, m := range permanentMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// dialFailure reports whether err says no connection could be made: a
// refused or unreachable dial, or a failed name lookup.
func dialFailure(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
