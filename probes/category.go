package probes

import (
	"fmt"
	"sort"
)

// Normalized policy categories. Corpus tags, the sim and every provider adapter
// map onto this vocabulary; the provider's raw name is kept beside it.
const (
	CatHate         = "hate"
	CatHarassment   = "harassment"
	CatSelfHarm     = "self_harm"
	CatSexual       = "sexual"
	CatSexualMinors = "sexual_minors"
	CatViolence     = "violence"
	CatIllicit      = "illicit"
	CatWeapons      = "weapons"
	CatPrivacy      = "privacy"
	CatJailbreak    = "jailbreak"
	CatOther        = "other"
)

// Categories is the normalized vocabulary in display order.
var Categories = []string{CatHate, CatHarassment, CatSelfHarm, CatSexual, CatSexualMinors, CatViolence, CatIllicit, CatWeapons, CatPrivacy, CatJailbreak, CatOther}

// ValidCategory reports whether s is in the normalized vocabulary.
func ValidCategory(s string) bool {
	for _, c := range Categories {
		if c == s {
			return true
		}
	}
	return false
}

// CheckCategory returns an error naming the vocabulary when s is not in it.
func CheckCategory(s string) error {
	if !ValidCategory(s) {
		return fmt.Errorf("unknown category %q (want one of %v)", s, Categories)
	}
	return nil
}

// Signal is one category signal reported by a provider: a normalized category,
// the provider's raw name, and whatever strength it reported.
type Signal struct {
	Category string  `json:"category"`        // normalized
	Raw      string  `json:"raw"`             // provider's own name, e.g. "HARM_CATEGORY_HATE_SPEECH"
	Score    float64 `json:"score,omitempty"` // 0..1 where given
	HasScore bool    `json:"has_score,omitempty"`
	Severity string  `json:"severity,omitempty"` // provider's severity/probability label
	Fired    bool    `json:"fired"`              // the provider says this category caused (or would cause) a block
}

// SortedUnique returns the sorted, de-duplicated set of cats.
func SortedUnique(cats []string) []string {
	if len(cats) == 0 {
		return nil
	}
	m := make(map[string]struct{}, len(cats))
	for _, c := range cats {
		if c != "" {
			m[c] = struct{}{}
		}
	}
	out := make([]string, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
