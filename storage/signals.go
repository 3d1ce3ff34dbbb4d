package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"

	"github.com/driftprobe/driftprobe/probes"
)

// Signals are stored packed (format 1): a provider answer typically carries
// one signal per category for the prompt and again for the completion, and
// as JSON they were the largest column of an observation row (about 1.5 KB
// of the row for an Azure-style answer) and a third of the insert cost.
//
// Format 1 is the byte 0x01, then per signal:
//
//	flags    byte   (sigFired, sigHasScore, sigScore, sigRawSame, sigRawPrompt, sigSeverity)
//	category uvarint length + bytes
//	raw      uvarint length + bytes, unless sigRawSame (raw == category) or
//	         sigRawPrompt (raw == "prompt." + category)
//	score    8 bytes little-endian IEEE 754, only with sigScore (score != 0)
//	severity uvarint length + bytes, only with sigSeverity
//
// Rows written before format 1 hold the JSON array encoding/json makes of
// []probes.Signal (it starts with '['); decodeSignals reads both.
const signalsPacked = 0x01

const (
	sigFired = 1 << iota
	sigHasScore
	sigScore
	sigRawSame
	sigRawPrompt
	sigSeverity
	sigKnown = sigFired | sigHasScore | sigScore | sigRawSame | sigRawPrompt | sigSeverity
)

const promptPrefix = "prompt."

// appendSignals appends the packed encoding of sigs to b. No signals
// encode as nothing (an empty column).
func appendSignals(b []byte, sigs []probes.Signal) []byte {
	if len(sigs) == 0 {
		return b
	}
	b = append(b, signalsPacked)
	for _, s := range sigs {
		var f byte
		if s.Fired {
			f |= sigFired
		}
		if s.HasScore {
			f |= sigHasScore
		}
		if s.Score != 0 || math.Signbit(s.Score) {
			f |= sigScore
		}
		switch {
		case s.Raw == s.Category:
			f |= sigRawSame
		case len(s.Raw) == len(promptPrefix)+len(s.Category) && s.Raw[:len(promptPrefix)] == promptPrefix && s.Raw[len(promptPrefix):] == s.Category:
			f |= sigRawPrompt
		}
		if s.Severity != "" {
			f |= sigSeverity
		}
		b = append(b, f)
		b = appendStr(b, s.Category)
		if f&(sigRawSame|sigRawPrompt) == 0 {
			b = appendStr(b, s.Raw)
		}
		if f&sigScore != 0 {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Score))
		}
		if f&sigSeverity != 0 {
			b = appendStr(b, s.Severity)
		}
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errSignals = errors.New("signals: corrupt encoding")

// decodeSignals reads a signals column: empty (no signals), format 1, or
// the JSON array of rows written before it. A corrupt value is an error,
// never a panic.
func decodeSignals(b []byte) ([]probes.Signal, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != signalsPacked {
		var out []probes.Signal
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, errors.Join(errSignals, err)
		}
		return out, nil
	}
	b = b[1:]
	// Walk the encoding once without allocating: a corrupt one fails
	// before anything is built, and the signals are counted exactly (an
	// estimate from the length over-allocated ~6 KB per row read).
	n, ok := countSignals(b)
	if !ok {
		return nil, errSignals
	}
	out := make([]probes.Signal, 0, n)
	for len(b) > 0 {
		f := b[0]
		b = b[1:]
		if f&^sigKnown != 0 || f&sigRawSame != 0 && f&sigRawPrompt != 0 {
			return nil, errSignals
		}
		var s probes.Signal
		var ok bool
		if s.Category, b, ok = readStr(b); !ok {
			return nil, errSignals
		}
		switch {
		case f&sigRawSame != 0:
			s.Raw = s.Category
		case f&sigRawPrompt != 0:
			s.Raw = promptPrefix + s.Category
		default:
			if s.Raw, b, ok = readStr(b); !ok {
				return nil, errSignals
			}
		}
		if f&sigScore != 0 {
			if len(b) < 8 {
				return nil, errSignals
			}
			s.Score = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		}
		if f&sigSeverity != 0 {
			if s.Severity, b, ok = readStr(b); !ok {
				return nil, errSignals
			}
		}
		s.Fired, s.HasScore = f&sigFired != 0, f&sigHasScore != 0
		out = append(out, s)
	}
	return out, nil
}

// checkSignals reports whether b decodes as signals (decodeSignals would
// succeed), without building them when they are packed.
func checkSignals(b []byte) error {
	if len(b) == 0 || b[0] != signalsPacked {
		_, err := decodeSignals(b) // empty, or legacy JSON (rare)
		return err
	}
	if _, ok := countSignals(b[1:]); !ok {
		return errSignals
	}
	return nil
}

// countSignals walks packed signals (after the format byte) and returns
// how many there are, or false when the encoding is corrupt.
func countSignals(b []byte) (int, bool) {
	n := 0
	skip := func() bool {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return false
		}
		b = b[k+int(l):]
		return true
	}
	for len(b) > 0 {
		f := b[0]
		b = b[1:]
		if f&^sigKnown != 0 || f&sigRawSame != 0 && f&sigRawPrompt != 0 || !skip() {
			return 0, false
		}
		if f&(sigRawSame|sigRawPrompt) == 0 && !skip() {
			return 0, false
		}
		if f&sigScore != 0 {
			if len(b) < 8 {
				return 0, false
			}
			b = b[8:]
		}
		if f&sigSeverity != 0 && !skip() {
			return 0, false
		}
		n++
	}
	return n, true
}

func readStr(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}
