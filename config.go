package httpretry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// Config is a transport's policies as a configuration file holds them. It has
// the policy of every host, and the policies of some hosts. Those are keyed as
// WithHostPolicy takes them ("api.example.com", "api.example.com:8443"). Read
// one with ParseConfig, and apply it with Options.
//
// The zero Config configures nothing: its Options leave New's defaults in
// place. So a Config field of a larger configuration struct changes nothing
// when its key is absent or null.
type Config struct {
	// Default is the policy of every host that Hosts does not name.
	Default Policy `json:"default"`
	// Hosts are the policies of some hosts, keyed as WithHostPolicy takes them.
	// In JSON each entry starts from Default.
	Hosts map[string]Policy `json:"hosts"`
}

// ParseConfig reads a Config from JSON such as
//
//	{"default": {"maxRetries": 2, "perTryTimeout": "2s"},
//	 "hosts": {"payments.example.com": {"autoIdempotencyKey": true}}}
//
// A field left out of default takes DefaultPolicy's value. So {} is the default
// policy, and "maxRetries": 0 turns retrying off. A host's entry starts from
// default. The fields it names replace default's, field by field, inside
// budget, hedge, demote and resume too. A copy is a resend, so an entry that
// names "maxRetries": 0 and no hedge turns default's hedge off.
//
// Field names are Policy's in lower camel case, matched exactly. Durations are
// Go duration strings ("250ms"). A duration below 1ns ("0.5ns") that is not 0
// as written is invalid, never read as 0. A backoff is its String form
// ("exponentialJitter(100ms, 2s)"). null makes retryOn or fallbacks nil.
//
// Every policy is validated as New would, and every host key parsed as
// WithHostPolicy would. So a Config that ParseConfig returns never makes New
// panic. The error lists every problem, each under its JSON path
// (`hosts["api.example.com"].maxRetries: 20 is outside 0..16`). The problems
// are unknown fields, values of the wrong type, malformed durations and
// backoffs, and invalid values. For invalid values it wraps ErrInvalidPolicy.
// Every element of a list is checked, its path indexed ("retryOn[2]"). A
// problem that a host inherits from default is reported once, under default.
// Checking takes time linear in the size of data.
func ParseConfig(data []byte) (Config, error) {
	var d decoder
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		d.addf("", "%s", syntaxProblem(data, err))
		return Config{}, d.err("config")
	}
	var defaults, hosts json.RawMessage
	for _, m := range d.members(data, "", nil) {
		switch m.name {
		case "default":
			defaults = m.value
		case "hosts":
			hosts = m.value
		default:
			d.addf(m.name, "unknown field; want default or hosts")
		}
	}
	cfg := Config{Default: DefaultPolicy()}
	if defaults != nil && string(defaults) != "null" {
		d.object(defaults, "default", cfg.Default.jsonFields())
	}
	defaultBad := d.validate("default", cfg.Default, nil)
	if hosts != nil && string(hosts) != "null" {
		cfg.Hosts = d.hosts(hosts, cfg.Default, defaultBad)
	}
	if err := d.err("config"); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// UnmarshalJSON reads c as ParseConfig does. So a Config inside a larger
// configuration gets the same defaults and checks. null leaves c as it is: the
// zero Config when the larger struct was fresh, which configures nothing. On
// error c is left as it was.
func (c *Config) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return err
	}
	*c = cfg
	return nil
}

// MarshalJSON writes c as ParseConfig reads it back, every field of every
// policy spelled out. The zero Config, which configures nothing, is null.
// UnmarshalJSON reads null as the zero Config again. Written as a policy, it
// would be read back as one that turns retrying off.
func (c Config) MarshalJSON() ([]byte, error) {
	if c.configuresNothing() {
		return []byte("null"), nil
	}
	type fields Config // Config's fields and tags, without this method
	return json.Marshal(fields(c))
}

// configuresNothing reports whether c is the zero Config.
func (c Config) configuresNothing() bool { return reflect.ValueOf(c).IsZero() }

// hosts decodes the host entries, each over def, whose problems, but
// those of its lists, are defaultBad: a problem that def has too is
// reported once, under default. A list an entry does not name is def's,
// checked once under default, so that checking stays linear in the input
// however many hosts inherit a long list. It returns nil when d has found
// a problem.
func (d *decoder) hosts(data []byte, def Policy, defaultBad []problem) map[string]Policy {
	type rule struct{ name, port string }
	ruleKeys := make(map[rule]string)
	policies := make(map[string]Policy)
	for _, m := range d.members(data, "hosts", hostPath) {
		path := hostPath(m.name)
		name, port, err := splitHostRule(m.name)
		if err != nil {
			d.invalidf(path, "%v", err)
		} else if earlier, ok := ruleKeys[rule{name, port}]; ok {
			d.invalidf(path, "the same host as hosts[%q]", earlier)
		} else {
			ruleKeys[rule{name, port}] = m.name
		}
		p := def
		var named []string
		if string(m.value) != "null" {
			named = d.object(m.value, path, p.jsonFields())
		}
		if p.MaxRetries == 0 && slices.Contains(named, "maxRetries") && !slices.Contains(named, "hedge") {
			// An entry that turns resending off turns off the hedge it
			// inherits, a copy being a resend, rather than be refused for
			// a field it never wrote; a hedge it names is checked.
			p.Hedge = Hedge{}
		}
		own := p
		if !slices.Contains(named, "retryOn") {
			own.RetryOn = nil
		}
		if !slices.Contains(named, "fallbacks") {
			own.Fallbacks = nil
		}
		d.validate(path, own, defaultBad)
		policies[m.name] = p
	}
	if len(d.problems) > 0 {
		return nil
	}
	// Each host's lists are its own, copied only once the whole config
	// stands, so that a rejected one costs no copies.
	for host, p := range policies {
		p.RetryOn = slices.Clone(p.RetryOn)
		p.Fallbacks = slices.Clone(p.Fallbacks)
		policies[host] = p
	}
	return policies
}

// hostPath is the JSON path of a host's entry.
func hostPath(host string) string { return fmt.Sprintf("hosts[%q]", host) }

// syntaxProblem words a JSON syntax error with its line and column.
func syntaxProblem(data []byte, err error) string {
	se, ok := err.(*json.SyntaxError)
	if !ok || se.Offset == 0 {
		return "invalid JSON: " + err.Error()
	}
	before := data[:se.Offset-1]
	line := 1 + bytes.Count(before, []byte{'\n'})
	column := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, column, err)
}

// Options is c as options for New or Middleware: WithPolicy(c.Default), then
// WithHostPolicy for each host in sorted order. The zero Config returns no
// option, so that options given before it stand. Reload a configuration into a
// new transport that shares the old one's budgets with
//
//	New(base, append(c.Options(), WithBudgets(budgets))...)
func (c Config) Options() []Option {
	if c.configuresNothing() {
		return nil
	}
	opts := []Option{WithPolicy(c.Default)}
	for _, host := range slices.Sorted(maps.Keys(c.Hosts)) {
		opts = append(opts, WithHostPolicy(host, c.Hosts[host]))
	}
	return opts
}
