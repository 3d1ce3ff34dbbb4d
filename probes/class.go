package probes

import "fmt"

// Class is the outcome class of one probe request. The zero value is invalid.
type Class string

// The verdict taxonomy. Allowed, BlockedInput, BlockedOutput, ModelRefusal and
// AbuseBlock are verdicts: the provider answered, deterministically for a
// fixed policy version. Transient, ClientError and FilterUnavailable are not
// verdicts: they never produce flips.
const (
	Allowed           Class = "allowed"
	BlockedInput      Class = "blocked_input"
	BlockedOutput     Class = "blocked_output"
	ModelRefusal      Class = "model_refusal"
	AbuseBlock        Class = "abuse_block"
	Transient         Class = "transient"
	ClientError       Class = "client_error"
	FilterUnavailable Class = "filter_unavailable"
)

// Classes lists every class in a stable display order.
var Classes = []Class{Allowed, BlockedInput, BlockedOutput, ModelRefusal, AbuseBlock, Transient, ClientError, FilterUnavailable}

// ParseClass returns the Class named s.
func ParseClass(s string) (Class, error) {
	for _, c := range Classes {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown verdict class %q", s)
}

// Retryable reports whether sending the identical request again after a wait
// can change the outcome. Only Transient is retryable: a policy block, a
// refusal, an account-level block, a malformed request and a filter that did
// not run are all answers that waiting does not change.
func (c Class) Retryable() bool { return c == Transient }

// BreakerFailure reports whether the outcome counts against the upstream's
// circuit breaker. Policy classes are evidence that the upstream is healthy
// (it answered, promptly, with a verdict) and never count.
func (c Class) BreakerFailure() bool { return c == Transient }

// IsVerdict reports whether the class is a provider verdict that may be
// compared across runs. Transient, ClientError and FilterUnavailable are not.
func (c Class) IsVerdict() bool {
	switch c {
	case Allowed, BlockedInput, BlockedOutput, ModelRefusal, AbuseBlock:
		return true
	}
	return false
}

// IsBlock reports whether a verdict withheld the answer (any stage, refusal or
// account-level enforcement).
func (c Class) IsBlock() bool {
	switch c {
	case BlockedInput, BlockedOutput, ModelRefusal, AbuseBlock:
		return true
	}
	return false
}

// Pages reports whether a single occurrence warrants paging on its own.
// Only account-level enforcement does: it affects every user of the account.
func (c Class) Pages() bool { return c == AbuseBlock }

// Stage is where in the provider's pipeline a verdict was taken.
type Stage string

const (
	StageNone    Stage = ""
	StageInput   Stage = "input"
	StageOutput  Stage = "output"
	StageAccount Stage = "account"
)
