package httpretry

// Option configures New and Middleware. Options apply in order. Only the With…
// functions of this package make them.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	policy    Policy
	hosts     []hostOption
	budgets   *Budgets
	observers observers
}

type hostOption struct {
	host   string
	policy Policy
}

// WithPolicy sets the policy of every host that has none of its own from
// WithHostPolicy. New panics if p is invalid (see Policy.Validate).
func WithPolicy(p Policy) Option {
	return optionFunc(func(c *config) { c.policy = p })
}

// WithHostPolicy sets the policy of one host. "api.example.com" matches every
// port of that host. "api.example.com:8443" matches that port only, and wins
// over the former. Host names are compared without regard to case. A URL
// without a port matches its scheme's default port. New panics if host is
// malformed or p is invalid.
func WithHostPolicy(host string, p Policy) Option {
	return optionFunc(func(c *config) { c.hosts = append(c.hosts, hostOption{host, p}) })
}

// WithBudgets makes the transport charge its resends to b, which may be
// shared with other transports and outlive them. Without it, a transport
// has a registry of its own. A nil b is ignored.
func WithBudgets(b *Budgets) Option {
	return optionFunc(func(c *config) {
		if b != nil {
			c.budgets = b
		}
	})
}

// WithObserver adds fn to the functions told of every event (see EventKind).
// Those are every retry, hedge, fallback, give-up, demotion, restore and
// resume.
//
// They are called synchronously on the request's goroutine, in the order given,
// with no lock held. So they must be cheap and safe for concurrent use. A
// resume is told on the goroutine that reads the response body. A probe's
// verdict may come after RoundTrip returned. It is then told on the probe's own
// goroutine, where a panic is recovered and dropped. A nil fn is ignored.
func WithObserver(fn func(Event)) Option {
	return optionFunc(func(c *config) {
		if fn != nil {
			c.observers = append(c.observers, observer{fn: fn})
		}
	})
}

// newConfig applies opts in order over the defaults.
func newConfig(opts []Option) *config {
	c := &config{policy: DefaultPolicy()}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	return c
}

// buildPolicies is newPolicyTable for New and Middleware, which panic with
// its message: a bad option is a programming error, best found at start-up.
func (c *config) buildPolicies() policyTable {
	t, err := newPolicyTable(c.policy, c.hosts)
	if err != nil {
		panic(err.Error())
	}
	return t
}
