package config_test

import (
	"testing"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/config"
)

// TestQAGitHubLabelLimitCountsCharacters: github.labels is documented and
// refused as "a GitHub label is 1–50 characters", and the renderer cuts a
// label at 50 runes (ghissue.Labels), but validation counts bytes
// (len(l) > 50): a 20-character label in Japanese (60 bytes in UTF-8),
// which GitHub accepts, is refused as a configuration error (exit 2).
func TestQAGitHubLabelLimitCountsCharacters(t *testing.T) {
	label := "ドリフト監視チーム：プラットフォーム運用" // 20 characters
	if n := utf8.RuneCountInString(label); n != 20 || len(label) <= 50 {
		t.Fatalf("scenario: %d characters, %d bytes", n, len(label))
	}
	yaml := "targets:\n  - name: sim-a\n    provider: sim\n    model: sim-large\n" +
		"github:\n  repo: acme/drift\n  labels: [\"" + label + "\"]\n"
	cfg, err := config.Parse("qa.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := cfg.Validate(false); err != nil {
		t.Errorf("a 20-character label refused: %v", err)
	}
}
