package httpretry

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a resume's answer must be to be delivered (point 21, "A resume
// names the same version"): its validator's field, where it has one,
// names the version the body began with, and its body is exactly the
// range it names.

// A server that honours Range but ignores If-Range answers a resume with
// a 206 of the new version, same size: its ETag, or its Last-Modified for
// an object with no ETag, says so, and not one byte of it is delivered. A
// 206 that names no version is trusted to have honoured If-Range.
func TestResumeSameVersion(t *testing.T) {
	newer := bytes.Repeat([]byte{'n'}, 200_000)
	replaced := fault{replace: newer, ignoreIfRange: true}
	for _, tt := range []struct {
		name    string
		etag    bool
		second  fault
		changed bool
	}{
		{"Last-Modified only, If-Range ignored", false, replaced, true},
		{"ETag, If-Range ignored", true, replaced, true},
		{"Last-Modified only, the same version", false, fault{ignoreIfRange: true}, false},
		{"Last-Modified only, a 206 that names no version", false, fault{bare: true}, false},
		{"ETag, a 206 that names no version", true, fault{bare: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newObject(200_000, func(n int) fault {
				if n == 1 {
					return fault{cut: 60_000}
				}
				return tt.second
			})
			o.etag = tt.etag
			o.modtime = time.Now().Add(-time.Hour)
			original := bytes.Clone(o.data)
			srv := o.serve(t)
			rec := &recorder{}
			rt := New(nil, WithPolicy(resumePolicy()), WithObserver(rec.observe))
			defer rt.CloseIdleConnections()
			resp := getObject(t, rt, srv.URL)
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Len(t, o.asked(), 2)
			if !tt.changed {
				require.NoError(t, err)
				assert.True(t, bytes.Equal(original, got), "the object, byte for byte")
				return
			}
			assert.ErrorIs(t, err, ErrBodyChanged)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the original read error")
			assert.Equal(t, 60_000, len(got), "only the bytes of the first version")
			assert.True(t, bytes.Equal(original[:60_000], got))
			assert.Equal(t, ReasonBodyChanged, rec.giveUp(t))
		})
	}
}

// A resume's 206 delivers at most the bytes its Content-Range names. One
// whose Content-Length disagrees with its range delivers nothing of
// itself; one that runs on past the object's end is cut at the end with
// ErrBodyChanged; one that stops short of it is resumed again.
func TestResumePastTheEnd(t *testing.T) {
	const size, cut = 200_000, 60_000
	for _, tt := range []struct {
		name      string
		second    fault
		delivered int  // bytes the caller reads
		changed   bool // the read ends with ErrBodyChanged; else the object whole
		asked     int  // requests the origin saw
		memory    bool // in memory: net/http's server never sends past a Content-Length
	}{
		{name: "longer, with its Content-Length", second: fault{over: 1000, length: bodyLength},
			delivered: cut, changed: true, asked: 2},
		{name: "longer, chunked", second: fault{over: 1000},
			delivered: size, changed: true, asked: 2},
		{name: "longer than the range's Content-Length", second: fault{over: 1000, length: rangeLength},
			delivered: size, changed: true, asked: 2, memory: true},
		{name: "shorter, with its Content-Length", second: fault{over: -1000, length: bodyLength},
			delivered: cut, changed: true, asked: 2},
		{name: "shorter, chunked", second: fault{over: -1000},
			delivered: size, asked: 3},
		{name: "shorter than the range's Content-Length", second: fault{over: -1000, length: rangeLength},
			delivered: size, asked: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newObject(size, func(n int) fault {
				if n == 1 {
					return fault{cut: cut}
				}
				if n == 2 {
					return tt.second
				}
				return fault{}
			})
			rec := &recorder{}
			var rt *RetryTransport
			url := "http://o.example/x"
			if tt.memory {
				rt = New(o.memoryBase(), WithPolicy(resumePolicy()), WithObserver(rec.observe))
			} else {
				url = o.serve(t).URL
				rt = New(nil, WithPolicy(resumePolicy()), WithObserver(rec.observe))
			}
			defer rt.CloseIdleConnections()
			resp := getObject(t, rt, url)
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Len(t, o.asked(), tt.asked)
			assert.Equal(t, tt.delivered, len(got), "bytes read")
			assert.True(t, bytes.Equal(o.data[:min(len(got), size)], got), "the object's own bytes")
			if !tt.changed {
				require.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrBodyChanged)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the original read error")
			assert.Equal(t, ReasonBodyChanged, rec.giveUp(t))
			_, err = resp.Body.Read(make([]byte, 10))
			assert.ErrorIs(t, err, ErrBodyChanged, "every further Read says so")
		})
	}
}

// The caller's own 206, chunked, that runs past the range it names is cut
// at the range's end with an error: no resume was involved, so the error
// is not ErrBodyChanged, and no byte past the range is delivered.
func TestResumeFirstBodyPastItsRange(t *testing.T) {
	o := newObject(200_000, func(n int) fault { return fault{over: 1000} })
	srv := o.serve(t)
	rt := New(nil, WithPolicy(resumePolicy()))
	defer rt.CloseIdleConnections()
	resp := getObject(t, rt, srv.URL, "Range", "bytes=1000-")
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	require.Equal(t, int64(-1), resp.ContentLength, "chunked")
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorContains(t, err, "runs past the end its headers declare")
	assert.False(t, errors.Is(err, ErrBodyChanged))
	assert.Equal(t, 199_000, len(got))
	assert.True(t, bytes.Equal(o.data[1000:], got))
	assert.Len(t, o.asked(), 1)
}

// A first 200 whose body runs on past its Content-Length is net/http's to
// cut: the caller reads exactly Content-Length bytes and io.EOF, with or
// without httpretry. Shown over a raw connection, since net/http's server
// never writes past a Content-Length.
func TestResumeFirstBodyPastItsLength(t *testing.T) {
	const size = 200_000
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nEtag: \"v1\"\r\nContent-Length: "+strconv.Itoa(size)+
			"\r\nConnection: close\r\n\r\n")
		conn.Write(bytes.Repeat([]byte{'a'}, size+1000))
	}()
	rt := New(nil, WithPolicy(resumePolicy()))
	defer rt.CloseIdleConnections()
	resp := getObject(t, rt, "http://"+ln.Addr().String())
	_, wrapped := resp.Body.(*resumeBody)
	require.True(t, wrapped)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, size, len(got))
	<-served
}

// The trailers the caller finds in its response, once it read the body to
// its end, are those of the body that ended: after a resume over HTTP/2,
// the resume request's.
func TestResumeTrailers(t *testing.T) {
	o := newObject(200_000, cuts(60_000))
	o.trailer = true
	srv := httptest.NewUnstartedServer(o)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	rt := New(srv.Client().Transport, WithPolicy(resumePolicy()))
	defer rt.CloseIdleConnections()
	resp := getObject(t, rt, srv.URL)
	require.Equal(t, 2, resp.ProtoMajor)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.True(t, bytes.Equal(o.data, got))
	assert.Equal(t, []asked{{"", ""}, {"bytes=60000-", `"v1"`}}, o.asked())
	assert.Equal(t, http.Header{"X-Served": {"bytes=60000-"}}, resp.Trailer)
}

// An Upgrade request is never resumed (point 21): a 200 that declines the
// upgrade is handed over as it came, and its cut ends it.
func TestResumeNotAnUpgrade(t *testing.T) {
	for _, tt := range []struct {
		connection string
		resumed    bool
	}{
		{"Upgrade", false},
		{"keep-alive, upgrade", false},
		{"keep-alive", true}, // an Upgrade header alone asks for nothing
	} {
		t.Run(tt.connection, func(t *testing.T) {
			o := newObject(200_000, cuts(60_000))
			srv := o.serve(t)
			rt := New(nil, WithPolicy(resumePolicy()))
			defer rt.CloseIdleConnections()
			resp := getObject(t, rt, srv.URL, "Connection", tt.connection, "Upgrade", "websocket")
			_, wrapped := resp.Body.(*resumeBody)
			assert.Equal(t, tt.resumed, wrapped)
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.resumed {
				require.NoError(t, err)
				assert.Len(t, o.asked(), 2)
				return
			}
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.Equal(t, 60_000, len(got))
			assert.Len(t, o.asked(), 1)
		})
	}
}
