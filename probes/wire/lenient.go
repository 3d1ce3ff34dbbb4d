package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Bookkeeping fields of a provider's answer — token counts, ids, model
// names, fingerprints, indexes — say nothing about the verdict. Decoded
// strictly, one of the wrong type ("prompt_tokens":"12", "id":5) fails the
// whole answer: a clear filter block then reads as malformed, is retried
// and counts against the breaker. Count and Text decode such fields
// leniently instead: they never fail, and record that the value was odd so
// that adapters can note it in Result.Unknown. Fields the verdict is read
// from stay strictly typed.

// Count is a bookkeeping number: a JSON number (integral, within int), or
// a string holding one, sets N; null or absence leaves N 0; anything else
// leaves N 0 and sets Odd.
type Count struct {
	N   int
	Odd bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (c *Count) UnmarshalJSON(b []byte) error {
	*c = Count{}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) != nil {
			c.Odd = true
			return nil
		}
		b = []byte(s)
		c.Odd = true // a string, even a numeric one, is not what the provider documents
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		c.Odd = true
		return nil
	}
	c.N = n
	return nil
}

// Text is bookkeeping text: a JSON string sets S; null or absence leaves
// it empty; anything else (a number, a boolean, an object, an array)
// leaves S empty and sets Odd. S is never made up from an odd value: a
// model id of 5 from a buggy gateway would otherwise read as a model
// change.
type Text struct {
	S   string
	Odd bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (t *Text) UnmarshalJSON(b []byte) error {
	*t = Text{}
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
	case len(b) > 0 && b[0] == '"':
		if json.Unmarshal(b, &t.S) != nil {
			t.S, t.Odd = "", true
		}
	default:
		t.Odd = true
	}
	return nil
}

// OddFields returns "name:bad_type" for each name whose flag is set, in
// order: what an adapter adds to Result.Unknown.
func OddFields(pairs ...any) []string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		name, _ := pairs[i].(string)
		if odd, _ := pairs[i+1].(bool); odd {
			out = append(out, name+":bad_type")
		}
	}
	return out
}

// Score is a provider's filter score decoded leniently: a JSON number sets
// V and Has; null or absence leaves both unset; anything else (a numeric
// string included) leaves them unset and sets Odd. A wrongly typed score
// must not make the whole assessment or rating it sits in unreadable: the
// action or the flag beside it is the verdict.
type Score struct {
	V   float64
	Has bool
	Odd bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (s *Score) UnmarshalJSON(b []byte) error {
	*s = Score{}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if json.Unmarshal(b, &s.V) != nil {
		s.V, s.Odd = 0, true
		return nil
	}
	s.Has = true
	return nil
}
