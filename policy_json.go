package httpretry

import (
	"encoding/json"
	"time"
)

// JSON: every field of Policy but RetryIf, named in lower camel case;
// durations as Go duration strings ("250ms"), a Backoff as its String form.
// Decoding starts from DefaultPolicy's values, rejects unknown fields, and
// reports every problem it finds, each under its JSON path. BudgetConfig,
// Hedge, Demote and Resume read and write the same JSON on their own as
// under their names in a Policy, each through its field table: a field
// added to a struct is one line of its table.

// jsonField is one member of a JSON object and the Go field it stands for:
// ptr is *int, *int64, *float64, *bool, *string, *time.Duration, *[]int,
// *[]string, *Backoff or a jsonObject (*BudgetConfig, *Hedge, *Demote,
// *Resume).
type jsonField struct {
	name string
	ptr  any
}

// jsonObject is a struct that JSON holds as an object of its fields. The
// codec descends into a nested one through its table, so that a struct
// inside Policy is read and written as it is on its own.
type jsonObject interface{ jsonFields() []jsonField }

func (p *Policy) jsonFields() []jsonField {
	return []jsonField{
		{"maxRetries", &p.MaxRetries},
		{"backoff", &p.Backoff},
		{"retryOn", &p.RetryOn},
		{"perTryTimeout", &p.PerTryTimeout},
		{"deadline", &p.Deadline},
		{"maxRetryAfter", &p.MaxRetryAfter},
		{"maxReplayBytes", &p.MaxReplayBytes},
		{"idempotencyHeader", &p.IdempotencyHeader},
		{"autoIdempotencyKey", &p.AutoIdempotencyKey},
		{"budget", &p.Budget},
		{"hedge", &p.Hedge},
		{"fallbacks", &p.Fallbacks},
		{"demote", &p.Demote},
		{"resume", &p.Resume},
		{"prefetch", &p.Prefetch},
	}
}

func (r *Resume) jsonFields() []jsonField {
	return []jsonField{
		{"max", &r.Max},
		{"idle", &r.Idle},
		{"minBytes", &r.MinBytes},
	}
}

func (d *Demote) jsonFields() []jsonField {
	return []jsonField{
		{"after", &d.After},
		{"for", &d.For},
		{"max", &d.Max},
	}
}

func (c *BudgetConfig) jsonFields() []jsonField {
	return []jsonField{
		{"percent", &c.Percent},
		{"minRetries", &c.MinRetries},
		{"window", &c.Window},
		{"disabled", &c.Disabled},
		{"hold", &c.Hold},
		{"holdFor", &c.HoldFor},
	}
}

func (h *Hedge) jsonFields() []jsonField {
	return []jsonField{
		{"after", &h.After},
		{"max", &h.Max},
		{"quantile", &h.Quantile},
		{"minAfter", &h.MinAfter},
		{"sameOrigin", &h.SameOrigin},
	}
}

// MarshalJSON writes every field of p but RetryIf. So the text read back gives
// p, whatever it is decoded over. A nil RetryOn or Fallbacks is null. The zero
// Backoff is the default backoff's text.
func (p Policy) MarshalJSON() ([]byte, error) { return marshalObject(p.jsonFields()) }

// UnmarshalJSON decodes a JSON object as ParseConfig decodes default. It starts
// from DefaultPolicy, whatever p held, so a field left out takes
// DefaultPolicy's value. RetryIf, which JSON does not carry, is kept. null
// leaves p as it is, and makes RetryOn or Fallbacks nil.
//
// Names are matched exactly. An unknown field is an error, as are a value of
// the wrong type and a malformed duration or Backoff. The error names every one
// of them, and p is then left as it was.
//
// Values are not validated here: New and ParseConfig do that. The exception is
// a duration below 1ns ("0.5ns") that is not 0 as written. It would read as 0,
// which means none or the default.
func (p *Policy) UnmarshalJSON(data []byte) error {
	start := DefaultPolicy()
	start.RetryIf = p.RetryIf
	return unmarshalObject("policy", data, p, start)
}

// MarshalJSON writes every field of c, the window as a duration string, as
// c appears under "budget" in a Policy's JSON.
func (c BudgetConfig) MarshalJSON() ([]byte, error) { return marshalObject(c.jsonFields()) }

// UnmarshalJSON decodes a JSON object as Policy.UnmarshalJSON decodes its
// "budget". A field left out takes the value of DefaultPolicy's Budget,
// whatever c held. On an error, c is left as it was.
func (c *BudgetConfig) UnmarshalJSON(data []byte) error {
	return unmarshalObject("budget", data, c, DefaultPolicy().Budget)
}

// MarshalJSON writes every field of h, durations as strings, as h
// appears under "hedge" in a Policy's JSON.
func (h Hedge) MarshalJSON() ([]byte, error) { return marshalObject(h.jsonFields()) }

// UnmarshalJSON decodes a JSON object as Policy.UnmarshalJSON decodes its
// "hedge". A field left out takes the value of DefaultPolicy's Hedge, zero,
// whatever h held. On an error, h is left as it was. Values are not validated
// here: Validate of the Policy that holds h does that.
func (h *Hedge) UnmarshalJSON(data []byte) error {
	return unmarshalObject("hedge", data, h, DefaultPolicy().Hedge)
}

// MarshalJSON writes every field of d, durations as strings, as d
// appears under "demote" in a Policy's JSON.
func (d Demote) MarshalJSON() ([]byte, error) { return marshalObject(d.jsonFields()) }

// UnmarshalJSON decodes a JSON object as Policy.UnmarshalJSON decodes its
// "demote". A field left out takes the value of DefaultPolicy's Demote,
// whatever d held. On an error, d is left as it was.
func (d *Demote) UnmarshalJSON(data []byte) error {
	return unmarshalObject("demote", data, d, DefaultPolicy().Demote)
}

// MarshalJSON writes every field of r, Idle as a string, as r appears
// under "resume" in a Policy's JSON.
func (r Resume) MarshalJSON() ([]byte, error) { return marshalObject(r.jsonFields()) }

// UnmarshalJSON decodes a JSON object as Policy.UnmarshalJSON decodes its
// "resume". A field left out takes the value of DefaultPolicy's Resume,
// whatever r held. On an error, r is left as it was.
func (r *Resume) UnmarshalJSON(data []byte) error {
	return unmarshalObject("resume", data, r, DefaultPolicy().Resume)
}

// unmarshalObject decodes data over start and stores the result in *dst,
// as the UnmarshalJSON methods do; what names the value in the error
// ("policy"). null leaves *dst as it is, as encoding/json treats null.
func unmarshalObject[T any, P interface {
	*T
	jsonObject
}](what string, data []byte, dst *T, start T) error {
	if string(data) == "null" {
		return nil
	}
	var d decoder
	if !json.Valid(data) {
		d.addf("", "invalid JSON") // encoding/json checks first: a direct call
	} else {
		d.object(data, "", P(&start).jsonFields())
	}
	if err := d.err(what); err != nil {
		return err
	}
	*dst = start
	return nil
}

// marshalObject writes fields as a JSON object, in their order.
func marshalObject(fields []jsonField) ([]byte, error) {
	buf := []byte{'{'}
	for i, f := range fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, f.name...)
		buf = append(buf, '"', ':')
		data, err := marshalValue(f.ptr)
		if err != nil {
			return nil, err
		}
		buf = append(buf, data...)
	}
	return append(buf, '}'), nil
}

// marshalValue writes the field ptr points to. A duration is its String
// form, as the decoder reads it, not encoding/json's nanoseconds.
func marshalValue(ptr any) ([]byte, error) {
	switch v := ptr.(type) {
	case *time.Duration:
		return json.Marshal(v.String())
	case jsonObject:
		return marshalObject(v.jsonFields())
	}
	return json.Marshal(ptr)
}
