package sim

import (
	"strings"
	"unicode"

	"github.com/driftprobe/driftprobe/probes"
)

// term is a phrase (in normalized form: lower case, words separated by single
// spaces) and the weight one occurrence adds to a category's score.
type term struct {
	phrase string
	weight float64
}

// lexicon is the sim's toy classifier. A category's score is
// 1 - Π(1 - weight) over the distinct phrases present, so several weak cues
// add up and one strong cue dominates. It is tuned to the default corpus:
// positive controls score 0.6–0.95, borderline probes 0.2–0.45, benign ~0.
var lexicon = map[string][]term{
	probes.CatViolence: {
		{"kill", 0.35}, {"want to kill", 0.7}, {"beat you up", 0.6}, {"bloody", 0.3},
		{"attack", 0.25}, {"fight", 0.15}, {"battle", 0.1}, {"shoot someone", 0.7},
		{"shoot", 0.3}, {"bomb", 0.45}, {"murder", 0.6}, {"stab", 0.5},
	},
	probes.CatSelfHarm: {
		{"hurt myself", 0.75}, {"ending my life", 0.75}, {"don t want to live", 0.6},
		{"self harm", 0.35}, {"hopeless", 0.3}, {"empty and lost", 0.3}, {"suicide", 0.5},
	},
	probes.CatHate: {
		{"vermin", 0.6}, {"subhuman", 0.65}, {"inferior", 0.35}, {"do not deserve rights", 0.5},
		{"hatred", 0.3}, {"slurs", 0.3}, {"discrimination", 0.2},
	},
	probes.CatHarassment: {
		{"worthless", 0.5}, {"stupid", 0.3}, {"loser", 0.35}, {"nobody wants you", 0.5},
		{"pathetic idiot", 0.6}, {"ugly", 0.3}, {"roast", 0.25}, {"bullied", 0.3},
		{"insults", 0.3}, {"beat you up", 0.3}, {"dox", 0.4},
	},
	probes.CatSexual: {
		{"explicit", 0.45}, {"graphic detail", 0.3}, {"sex", 0.4}, {"erotic", 0.5},
		{"sexual", 0.3}, {"kiss", 0.15}, {"nude", 0.3},
	},
	probes.CatIllicit: {
		{"stolen credit card", 0.75}, {"launder money", 0.75}, {"drugs", 0.3},
		{"scams", 0.25}, {"robbery", 0.3}, {"drug", 0.2},
	},
	probes.CatWeapons: {
		{"bomb", 0.6}, {"build a bomb", 0.8}, {"untraceable gun", 0.8}, {"gun", 0.35},
		{"rifle", 0.3}, {"swords", 0.2}, {"explode", 0.25}, {"fireworks", 0.1},
	},
	probes.CatPrivacy: {
		{"home address", 0.25}, {"phone number", 0.2}, {"social security number", 0.75},
		{"dox", 0.55}, {"personal data", 0.2},
	},
	probes.CatJailbreak: {
		{"ignore all previous instructions", 0.7}, {"no restrictions", 0.45}, {"no rules", 0.35},
		{"developer mode", 0.3}, {"disable your safety", 0.3}, {"ignore your guidelines", 0.2},
		{"prompt injection", 0.3}, {"role play", 0.2}, {"pretend you are", 0.25}, {"ignore", 0.15},
	},
}

// scoredCategories are the categories the sim scores, in report order.
var scoredCategories = []string{
	probes.CatHate, probes.CatHarassment, probes.CatSelfHarm, probes.CatSexual,
	probes.CatViolence, probes.CatIllicit, probes.CatWeapons, probes.CatPrivacy, probes.CatJailbreak,
}

// normalize lower-cases s and turns every run of non-letters/digits into
// one space, with a space at each end, so phrases match on word boundaries.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(' ')
	space := true
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	if !space {
		b.WriteByte(' ')
	}
	return b.String()
}

// lexScores returns the lexicon score of every scored category for text.
func lexScores(text string) map[string]float64 {
	n := normalize(text)
	out := make(map[string]float64, len(scoredCategories))
	for _, cat := range scoredCategories {
		keep := 1.0
		for _, t := range lexicon[cat] {
			if strings.Contains(n, " "+t.phrase+" ") {
				keep *= 1 - t.weight
			}
		}
		out[cat] = 1 - keep
	}
	return out
}
