package recipes_test

import (
	"time"

	"github.com/httpretry/httpretry"
)

// quickPolicy is DefaultPolicy with a 1 ms backoff, so that the examples,
// whose servers answer Retry-After: 0, take no time.
func quickPolicy() httpretry.Policy {
	p := httpretry.DefaultPolicy()
	p.Backoff = httpretry.Fixed(time.Millisecond)
	return p
}
