package httpretry

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

// defaultIdempotencyHeaders are the two names net/http itself takes as
// marking a request idempotent (see http.Request.isReplayable).
var defaultIdempotencyHeaders = []string{"Idempotency-Key", "X-Idempotency-Key"}

// idempotentMethod reports whether RFC 9110 §9.2.2 makes method idempotent,
// so that sending it twice has the effect of sending it once.
func idempotentMethod(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// keyable reports whether an idempotency key makes method resendable.
func keyable(method string) bool {
	return method == http.MethodPost || method == http.MethodPatch
}

// hasIdempotencyKey reports whether h carries a key under one of names,
// which are in canonical form: a non-blank value, or the name with a nil or
// empty value, net/http's way to mark a request idempotent without sending
// the header. A blank value that would be sent is no key: no server can
// deduplicate on it.
func hasIdempotencyKey(h http.Header, names []string) bool {
	for _, name := range names {
		vs, ok := h[name]
		if ok && len(vs) == 0 {
			return true
		}
		for _, v := range vs {
			if strings.TrimSpace(v) != "" {
				return true
			}
		}
	}
	return false
}

// resendable reports whether req may be sent more than once whatever
// happened to the first attempt.
func resendable(req *http.Request, names []string) bool {
	return idempotentMethod(req.Method) ||
		keyable(req.Method) && hasIdempotencyKey(req.Header, names) ||
		idempotentFrom(req.Context())
}

// newIdempotencyKey returns a random version 4 UUID, the form the IETF
// Idempotency-Key draft recommends.
func newIdempotencyKey() string {
	var u [16]byte
	rand.Read(u[:]) // never returns an error (crypto/rand, Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}

// upgrades reports whether req asks to switch protocols: a Connection
// header with the token "upgrade" and an Upgrade header (RFC 9110 §7.8).
// Its connection becomes the caller's, so it is never hedged, and an
// answer to it is returned, never resent or resumed (DESIGN point 21);
// an attempt that got no response may be resent like any request's.
func upgrades(req *http.Request) bool {
	if len(req.Header["Upgrade"]) == 0 {
		return false
	}
	for _, v := range req.Header["Connection"] {
		for v != "" {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}
