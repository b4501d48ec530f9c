// Package recipes shows httpretry with the clients people already use: the
// AWS SDK for Go v2, client-go, oauth2, otelhttp and resty. Each recipe is a
// testable example run against a loopback server that injects a fault.
//
// It is a module of its own so that the root module keeps its one runtime
// dependency; nobody imports it.
package recipes
