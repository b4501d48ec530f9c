package otelretry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/httpretry/httpretry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Attribute keys, as the OpenTelemetry semantic conventions name them, and
// reason, httpretry.Reason's word.
const (
	keyServerAddress = attribute.Key("server.address")
	keyServerPort    = attribute.Key("server.port")
	keyMethod        = attribute.Key("http.request.method")
	keyReason        = attribute.Key("reason")
)

// Observer returns a function for httpretry.WithObserver that counts, with
// instruments made by meter:
//
//   - httpretry.retries: resends announced (httpretry.EventRetry);
//   - httpretry.hedges: hedged copies (httpretry.EventHedge), with reason
//     set for a copy that was due but not sent, such as "budget";
//   - httpretry.fallbacks: first attempts on a fallback origin
//     (httpretry.EventFallback);
//   - httpretry.giveups: requests that ended on a failure with no further
//     attempt (httpretry.EventGiveUp), with reason, such as "exhausted";
//   - httpretry.demotions: origins sent behind the other candidates after
//     failing in a row (httpretry.EventDemote, Policy.Demote);
//   - httpretry.resumes: requests for the rest of a response body that
//     broke mid-stream (httpretry.EventResume, Policy.Resume).
//
// Each count carries server.address (the host the event's attempt goes
// to: Event.Origin's, or the request's own), server.port when the origin
// names a port other than its scheme's default (http 80, https 443), and
// http.request.method ("_OTHER" for
// a method HTTP does not define, to bound the attributes' cardinality).
// It never records a path, query or header.
//
// The function is safe for concurrent use and adds to the counters with
// the request's context. Observer fails only if meter cannot make a
// counter.
func Observer(meter metric.Meter) (func(httpretry.Event), error) {
	var c counters
	for _, m := range []struct {
		into        *metric.Int64Counter
		name, unit  string
		description string
	}{
		{&c.retries, "httpretry.retries", "{retry}", "Resends of failed HTTP requests."},
		{&c.hedges, "httpretry.hedges", "{copy}", "Hedged copies of slow HTTP requests; with reason, copies that were not sent."},
		{&c.fallbacks, "httpretry.fallbacks", "{fallback}", "First attempts of HTTP requests on a fallback origin."},
		{&c.giveups, "httpretry.giveups", "{request}", "HTTP requests that ended on a failure with no further attempt."},
		{&c.demotions, "httpretry.demotions", "{demotion}", "Origins sent behind the other candidates of HTTP requests after failing in a row."},
		{&c.resumes, "httpretry.resumes", "{resume}", "Requests for the rest of HTTP response bodies that broke mid-stream."},
	} {
		ctr, err := meter.Int64Counter(m.name, metric.WithUnit(m.unit), metric.WithDescription(m.description))
		if err != nil {
			return nil, fmt.Errorf("otelretry: %s: %w", m.name, err)
		}
		*m.into = ctr
	}
	return c.observe, nil
}

type counters struct {
	retries, hedges, fallbacks, giveups, demotions, resumes metric.Int64Counter
}

func (c *counters) observe(e httpretry.Event) {
	var ctr metric.Int64Counter
	switch e.Kind {
	case httpretry.EventRetry:
		ctr = c.retries
	case httpretry.EventHedge:
		ctr = c.hedges
	case httpretry.EventFallback:
		ctr = c.fallbacks
	case httpretry.EventGiveUp:
		ctr = c.giveups
	case httpretry.EventDemote:
		ctr = c.demotions
	case httpretry.EventResume:
		ctr = c.resumes
	default:
		return
	}
	ctx := context.Background()
	attrs := make([]attribute.KeyValue, 0, 4)
	if r := e.Request; r != nil {
		ctx = r.Context()
		attrs = append(attrs, keyMethod.String(method(r.Method)))
	}
	if host, port := server(e); host != "" {
		attrs = append(attrs, keyServerAddress.String(host))
		if port != 0 {
			attrs = append(attrs, keyServerPort.Int(port))
		}
	}
	if e.Reason != 0 {
		attrs = append(attrs, keyReason.String(e.Reason.String()))
	}
	ctr.Add(ctx, 1, metric.WithAttributes(attrs...))
}

// method returns m as the semantic conventions record it.
func method(m string) string {
	switch m {
	case "":
		return http.MethodGet
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// server returns the host name and port of the attempt e announces, from
// Event.Origin, or from the request's URL when there is none. The port is
// 0 when it is the scheme's default (http 80, https 443), as in the origin
// form httpretry keys its budgets by: https://h:80 and https://h are two
// origins, http://h:80 and http://h one.
func server(e httpretry.Event) (string, int) {
	origin := e.Origin
	if origin == "" && e.Request != nil && e.Request.URL != nil {
		origin = e.Request.URL.Scheme + "://" + e.Request.URL.Host
	}
	scheme, hostport, _ := strings.Cut(origin, "://")
	host, port := splitHost(hostport)
	switch scheme = strings.ToLower(scheme); {
	case scheme == "http" && port == 80, scheme == "https" && port == 443:
		port = 0
	}
	return host, port
}

// splitHost splits "host[:port]", as Event.Origin and Budgets.Range write
// it, into a lower-case host name and its port, 0 for none: the port is
// already not the scheme's default, so counts and budget gauges of one
// origin carry the same attributes.
func splitHost(hostport string) (string, int) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		host, portText = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		port = 0
	}
	return strings.ToLower(host), port
}
