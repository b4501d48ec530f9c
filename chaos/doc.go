// Package chaos proves httpretry under network faults, hostile responses and
// sustained load.
//
// Everything lives in the tests: an in-process toxiproxy in front of a
// loopback upstream, raw TCP servers that misbehave on purpose, and a soak
// run. The package itself exports nothing.
package chaos
