package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/yamlx"
	_ "github.com/driftprobe/driftprobe/probes/all" // registers every provider
	"github.com/driftprobe/driftprobe/probes/sim"
)

// Environment variables the testdata files name.
const (
	setKeyVar   = "DRIFTPROBE_TEST_KEY"
	unsetKeyVar = "DRIFTPROBE_TEST_UNSET_VAR"
	emptyKeyVar = "DRIFTPROBE_TEST_EMPTY_VAR" // set to blanks: a key that cannot authenticate
	// set to a key with a line break inside (brokenKeyValue): a key no
	// HTTP header can carry
	brokenKeyVar   = "DRIFTPROBE_TEST_BROKEN_VAR"
	brokenKeyValue = "sk-first-half-SECRET\nsecond-half-SECRET\n"

	// Bedrock's SigV4 credentials (probes/bedrock EnvAccessKeyID,
	// EnvSecretAccessKey), read when a target names no api_key_env.
	awsKeyIDVar  = "AWS_ACCESS_KEY_ID"
	awsSecretVar = "AWS_SECRET_ACCESS_KEY"
)

// unsetenv makes sure name is unset for the test and restored afterwards.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // registers the restore
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		file  string // under testdata, without "invalid-" and ".yaml"
		field string // regexp for the FIELD part; "" for none (syntax errors)
		at    string // text on the offending line ("" for line 1)
		msg   string // fragment of the message
	}{
		{"unknown-top", `schedul`, "schedul:", "unknown field"},
		{"unknown-target-field", `targets\[1\]\.bogus`, "bogus: true", "unknown field"},
		{"type-string-int", `confirm_runs`, "confirm_runs: two", `wrong type: string "two" where an integer expected`},
		{"type-target-int", `targets\[0\]\.concurrency`, "concurrency: many", `wrong type: string "many" where an integer expected`},
		{"type-list-mapping", `targets\[0\]\.price`, "price:", "wrong type: list where a mapping expected"},
		{"type-targets-mapping", `targets`, "targets:", "wrong type: mapping where a list expected"},
		{"duration", `timeout`, "timeout: 5 minutes", `"5 minutes": not a duration (e.g. 30s, 5m, 90d)`},
		{"duration-target", `targets\[0\]\.breaker\.cooldown`, "cooldown: soon", `"soon": not a duration`},
		{"duplicate-target", `targets\[1\]\.name`, "- name: sim-a\n    provider: sim\n    model: sim-small", `duplicate target name "sim-a" (first at targets[0])`},
		{"unknown-provider", `targets\[1\]\.provider`, "provider: openia", `unknown provider "openia" (want one of anthropic, azure, bedrock, gemini, mistral, openai, openai_compatible, sim)`},
		{"missing-env", `targets\[0\]\.api_key_env`, "api_key_env:", "environment variable " + unsetKeyVar + " is not set"},
		{"empty-env", `targets\[0\]\.api_key_env`, "api_key_env:", "environment variable " + emptyKeyVar + " is empty"},
		{"env-line-break", `targets\[0\]\.api_key_env`, "api_key_env:", "environment variable " + brokenKeyVar + " holds a control character (U+000A) inside its value: a line break or tab within the key? No HTTP request can carry it (the value is not repeated)"},
		// TestLoadInvalid sets AWS_SECRET_ACCESS_KEY and unsets AWS_ACCESS_KEY_ID.
		{"bedrock-no-aws-key", `targets\[0\]\.provider`, "provider: bedrock",
			"bedrock signs requests with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: environment variable AWS_ACCESS_KEY_ID is not set (or name an Amazon Bedrock API key in api_key_env)"},
		{"key-env-is-a-key", `targets\[0\]\.api_key_env`, "api_key_env:", "must name an environment variable holding the key (letters, digits and '_'), not the key itself"},
		{"github-token-env-is-a-token", `github\.token_env`, "token_env:", "must name an environment variable holding the token"},
		{"jitter-interval", `jitter`, "jitter:", "10m0s: must be shorter than the schedule's interval (10m0s)"},
		{"github-kinds", `github\.kinds\[0\]`, "kinds:", `"policy-change": want one of policy_change, model_change, score_drift, nondeterminism`},
		{"github-label-empty", `github\.labels\[0\]`, "labels:", `"": a GitHub label is 1–50 characters, no comma`},
		{"schedule-banana", `schedule`, "schedule:", `"@every banana": bad interval`},
		{"schedule-cron", `schedule`, "schedule:", `"61 * * * *": not "@every DURATION" or a cron expression`},
		{"schedule-never", `schedule`, "schedule:", `"0 0 30 2 *": the cron expression never fires`},
		{"confirm-zero", `confirm_runs`, "confirm_runs: 0", "0: must be at least 1 (omit it for the default 2)"},
		{"confirm-negative", `confirm_runs`, "confirm_runs: -1", "-1: must be at least 1"},
		{"sim-on-openai", `targets\[0\]\.sim`, "sim:", "only valid for provider sim"},
		// A sim at base_url is a standalone `driftprobe sim`: its own
		// --sim-config scripts it, and this block was silently ignored.
		{"sim-block-with-base-url", `targets\[0\]\.sim`, "sim:", "the simulator at base_url follows its own --sim-config"},
		{"sim-unknown-category", `targets\[0\]\.sim\.policies\[0\]\.thresholds\.bananas`, "bananas: 0.2", "unknown category (want one of hate, harassment, self_harm, sexual, violence, illicit, weapons, privacy, jailbreak)"},
		{"sim-negative-threshold", `targets\[0\]\.sim\.policies\[1\]\.thresholds\.hate`, "hate: -0.1", "-0.1: must be >= 0"},
		{"retention-negative", `retention\.observations`, "observations: -1h", "must be positive (or 0: keep forever)"},
		{"retention-days", `retention\.bodies`, "bodies: 30 days", `"30 days": not a duration (e.g. 30s, 5m, 90d)`},
		{"sim-policy-order", `targets\[0\]\.sim\.policies\[1\]\.from_run`, "from_run: 2", "policies must be in increasing from_run order"},
		{"sim-noise", `targets\[0\]\.sim\.noise`, "noise: 1.5", "1.5: must be between 0 and 1"},
		{"sim-input-margin-zero", `targets\[0\]\.sim\.input_margin`, "input_margin: 0", "0: must be above 0 (omit it for the default 0.3"},
		{"unknown-option", `targets\[0\]\.options\.region`, "region: us-east-1", "unknown option for provider openai (accepted: organization, project, token_param)"},
		{"azure-no-base-url", `targets\[0\]\.base_url`, "- name: az", "required for azure"},
		{"github-repo", `github\.repo`, "repo: just-a-name", `"just-a-name": want owner/name`},
		{"github-app-partial", `github\.installation_id`, "github:", "required with github.app_id and github.private_key_env: GitHub App auth needs app_id, installation_id and private_key_env"},
		{"yaml-tab", ``, "\tprovider: sim", "invalid YAML: found a tab character that violates indentation"},
		{"yaml-bracket", ``, "options: {a: b", "invalid YAML: did not find expected ',' or '}'"},
		{"empty", ``, "", "empty document"},
		{"empty-dashes", ``, "", "empty document"},
		{"duplicate-key", `targets\[0\]\.model`, "model: sim-small", "duplicate key (first at line 5)"},
		{"duplicate-top-key", `database`, "database: y.db", "duplicate key (first at line 1)"},
		{"attribution-url", `attribution\.prometheus`, "prometheus: prometheus:9090", `"prometheus:9090": want an http(s) URL such as http://prometheus:9090`},
		{"attribution-no-prometheus", `attribution\.prometheus`, "attribution:", "required: the Prometheus API root"},
		{"attribution-no-query", `attribution\.query`, "attribution:", "required: PromQL returning blocked requests"},
		{"attribution-step", `attribution\.step`, "step: 0s", "0s: must be at least 1s"},
		{"attribution-since-short", `attribution\.since`, "since: 5h", "5h0m0s: shorter than 2 × step × 3 points (6h0m0s): no series could hold a change"},
		{"attribution-too-many-steps", `attribution\.since`, "since: 30d", "720h0m0s at step 1m0s spans 43200 steps; Prometheus refuses more than 11000"},
		{"attribution-same-labels", `attribution\.category_label`, "category_label: model", `"model": must differ from target_label`},
		{"attribution-tolerance", `attribution\.tolerance`, "tolerance: -2h", "-2h0m0s: must be positive (omit it for twice the step)"},
		{"attribution-since-duration", `attribution\.since`, "since: a week", `"a week": not a duration (e.g. 30s, 5m, 90d)`},
		{"attribution-min-z", `attribution\.min_z`, "min_z: 0", "0: must be a positive number (omit it for 3)"},
		{"attribution-min-points", `attribution\.min_points`, "min_points: 1", "1: must be at least 2 (the Welch check needs two values on each side)"},
		{"attribution-min-change", `attribution\.min_change`, "min_change: .nan", "NaN: must be a positive number (omit it for 0.5)"},
		{"attribution-min-rate-change", `attribution\.min_rate_change`, "min_rate_change: -0.2", "-0.2: must be a number at least 0 (0: off)"},
		{"attribution-since-points", `attribution\.since`, "since: 9h", "9h0m0s: shorter than 2 × step × 5 points (10h0m0s)"},
		// Numeric bounds; an explicit 0 is refused where it has no documented meaning.
		{"timeout-negative", `timeout`, "timeout: -5s", "-5s: must be at least 1s"},
		{"timeout-zero", `timeout`, "timeout: 0s", "0s: must be at least 1s (omit it for the default 30s)"},
		{"target-timeout-negative", `targets\[0\]\.timeout`, "timeout: -5s", "-5s: must be at least 1s"},
		{"target-timeout-zero", `targets\[0\]\.timeout`, "timeout: 0s", "0s: must be at least 1s (omit it for the default 30s)"},
		{"target-timeout-long", `targets\[0\]\.timeout`, "timeout: 2h", "2h0m0s: must be at most 10m0s"},
		{"max-tokens-negative", `targets\[0\]\.max_tokens`, "max_tokens: -1", "-1: must be at least 1"},
		{"max-tokens-zero", `targets\[0\]\.max_tokens`, "max_tokens: 0", "0: must be at least 1 (omit it for the default 64)"},
		{"max-tokens-huge", `targets\[0\]\.max_tokens`, "max_tokens: 2000000", "2000000: must be at most 1000000"},
		{"max-attempts-huge", `max_attempts`, "max_attempts: 100000", "100000: must be at most 10"},
		{"max-attempts-zero", `max_attempts`, "max_attempts: 0", "0: must be at least 1 (omit it for the default 3)"},
		{"target-max-attempts-huge", `targets\[0\]\.max_attempts`, "max_attempts: 100000", "100000: must be at most 10"},
		{"concurrency-zero", `concurrency`, "concurrency: 0", "0: must be at least 1 (omit it for the default 16)"},
		{"target-concurrency-huge", `targets\[0\]\.concurrency`, "concurrency: 1000000", "1000000: must be at most 1000"},
		{"breaker-failures-zero", `targets\[0\]\.breaker\.failures`, "breaker:", "0: must be at least 1 (omit it for the default 5)"},
		{"breaker-failures-negative", `targets\[0\]\.breaker\.failures`, "failures: -1", "-1: must be at least 1"},
		{"breaker-cooldown-zero", `targets\[0\]\.breaker\.cooldown`, "breaker:", "0s: must be at least 1s (omit it for the default 30s)"},
		{"seed-negative", `targets\[0\]\.seed`, "seed: -1", "-1: must be between 0 and 2147483647 (negative seeds mean random to some servers"},
		{"seed-huge", `targets\[0\]\.seed`, "seed: 4294967296", "4294967296: must be between 0 and 2147483647"},
		{"price-nan", `targets\[0\]\.price\.output_per_mtok`, "price:", "NaN: must be a number >= 0 (USD per million tokens)"},
		{"rate-limit-inf", `targets\[0\]\.rate_limit_rpm`, "rate_limit_rpm: .inf", "+Inf: must be a number >= 0 (0: unlimited)"},
		{"temperature-nan", `targets\[0\]\.temperature`, "temperature: .nan", "NaN: must be between 0 and 2"},
		{"lock-ttl-negative", `lock_ttl`, "lock_ttl: -1m", "-1m0s: must be at least 30s"},
		{"lock-ttl-zero", `lock_ttl`, "lock_ttl: 0s", "0s: must be at least 30s (omit it for the default 10m0s)"},
		// Renewed every 10 s, a 29 s lease could lapse under a live run
		// whose renewal waited out the 10 s busy timeout.
		{"lock-ttl-short", `lock_ttl`, "lock_ttl: 29s", "29s: must be at least 30s"},
		{"max-body-negative", `max_body_bytes`, "max_body_bytes: -1", "-1: must be at least 1"},
		{"max-body-zero", `max_body_bytes`, "max_body_bytes: 0", "0: must be at least 1 (omit it for the default 65536)"},
		{"max-body-huge", `max_body_bytes`, "max_body_bytes: 1073741824", "1073741824: must be at most 67108864"},
		{"jitter-negative", `jitter`, "jitter: -5m", "-5m0s: must be positive (or 0: none)"},
		{"detection-degraded-zero", `detection\.degraded_fraction`, "degraded_fraction: 0", "0: must be in (0, 1] (omit it for 0.2)"},
		{"detection-score-tolerance", `detection\.score_tolerance`, "score_tolerance: -0.1", "-0.1: must be a positive number (omit it for 0.15)"},
		{"detection-flips", `detection\.nondeterministic_flips`, "nondeterministic_flips: -1", "-1: must be at least 1 (omit it for 2)"},
		{"detection-window-zero", `detection\.window_runs`, "window_runs: 0", "0: must be at least 1 (omit it for 3)"},
		{"detection-screen-zero", `detection\.screen_samples`, "screen_samples: 0", "0: ambiguous: -1 turns screening off; omit it for 2 extra samples"},
		{"detection-screen-huge", `detection\.screen_samples`, "screen_samples: 50", "50: must be at most 10 (-1: off)"},
		{"all-disabled", `targets`, "targets:", "every target is disabled: at least one must be enabled"},
		// One problem per field: a from_run of 0 is not also "out of order".
		{"sim-from-run-zero", `targets\[0\]\.sim\.policies\[0\]\.from_run`, "from_run: 0", "0: run ids start at 1"},
		// Empty entries (`- `, `~`) are located problems, never a crash, and
		// name the entry as written (the decoder would drop most of them
		// and shift every later index).
		{"target-null", `targets\[1\]`, "  -\n", "empty entry: a target needs at least name, provider and model"},
		{"target-null-flow", `targets\[0\]`, "targets: [~]", "empty entry: a target needs at least name, provider and model"},
		{"sim-policy-null", `targets\[0\]\.sim\.policies\[0\]`, "- ~", "empty entry: a policy needs from_run and thresholds"},
		{"sim-threshold-null", `targets\[0\]\.sim\.policies\[0\]\.thresholds\.hate`, "hate: ~", "empty: give a threshold from 0 to 1"},
		{"option-null", `targets\[0\]\.options\.organization`, "organization: ~", "empty: give the option's value, or remove the line"},
		{"github-label-null", `github\.labels\[1\]`, "    -\n", "empty entry: a GitHub label is 1–50 characters, no comma"},
		{"github-kinds-null", `github\.kinds\[0\]`, "kinds: [~", "empty entry: want one of policy_change, model_change, score_drift, nondeterminism"},
		// A cron schedule's jitter is bounded by its shortest gap.
		{"jitter-cron", `jitter`, "jitter: 2h", "2h0m0s: must be shorter than the schedule's shortest gap between runs (1h0m0s)"},
		{"jitter-cron-weekdays", `jitter`, "jitter: 24h", "24h0m0s: must be shorter than the schedule's shortest gap between runs (24h0m0s)"},
		// One message per problem, and messages that say what is wrong.
		{"anthropic-endpoint", `targets\[0\]\.endpoint`, "endpoint: moderation", `"moderation": provider anthropic supports chat`},
		{"base-url-scheme", `targets\[0\]\.base_url`, "base_url: ftp", `"ftp://vllm/v1": must start with http:// or https://`},
		{"sim-option", `targets\[0\]\.options\.x`, "x: y", "unknown option: provider sim takes no options"},
		{"sim-unscored-category", `targets\[0\]\.sim\.policies\[0\]\.thresholds\.sexual_minors`, "sexual_minors: 0.2",
			"the simulator does not score sexual_minors, so a threshold on it would never apply (it scores hate, harassment, self_harm, sexual, violence, illicit, weapons, privacy, jailbreak)"},
		{"github-no-repo", `github\.repo`, "github:", "required: the repository issues are filed in, as owner/name"},
		// A decimal number in an integer field is refused, never
		// truncated (yaml.v3 reads 2.5, and 1.9999, as 2): 2.0 too.
		{"float-confirm-runs", `confirm_runs`, "confirm_runs: 2.5", `wrong type: decimal number "2.5" where an integer expected (write a whole number, without a decimal point or exponent)`},
		{"float-max-tokens", `targets\[0\]\.max_tokens`, "max_tokens: 2.5", `wrong type: decimal number "2.5" where an integer expected`},
		{"float-max-tokens-almost", `targets\[0\]\.max_tokens`, "max_tokens: 1.9999", `wrong type: decimal number "1.9999" where an integer expected`},
		{"float-integral", `concurrency`, "concurrency: 2.0", `wrong type: decimal number "2.0" where an integer expected (write 2, without a decimal point or exponent)`},
		{"float-seed", `targets\[0\]\.seed`, "seed: 7.5", `wrong type: decimal number "7.5" where an integer expected`},
		{"float-sim-from-run", `targets\[0\]\.sim\.policies\[0\]\.from_run`, "from_run: 2.9", `wrong type: decimal number "2.9" where an integer expected`},
		{"float-sim-abuse", `targets\[0\]\.sim\.abuse_from_run`, "abuse_from_run: 2.7", `wrong type: decimal number "2.7" where an integer expected`},
		{"float-sim-seed", `targets\[0\]\.sim\.seed`, "sim: {seed: 1e3}", `wrong type: decimal number "1e3" where an integer expected (write 1000, without a decimal point or exponent)`},
		{"float-attribution-min-points", `attribution\.min_points`, "min_points: 2.5", `wrong type: decimal number "2.5" where an integer expected`},
		{"float-github-app-id", `github\.app_id`, "app_id: 1.5e6", `wrong type: decimal number "1.5e6" where an integer expected (write 1500000, without a decimal point or exponent)`},
		// A boolean is true or false (YAML 1.2), unquoted: YAML 1.1's
		// yes/no/on/off/y/n, which yaml.v3 reads into a bool even quoted,
		// are refused.
		{"bool-yes", `targets\[1\]\.disabled`, "disabled: yes", `wrong type: string "yes" where a boolean expected (write true or false: YAML 1.1's yes/no, on/off and y/n are not booleans here)`},
		{"bool-quoted-yes", `targets\[1\]\.disabled`, "disabled: 'yes'", `wrong type: string "yes" where a boolean expected (write true or false: YAML 1.1's`},
		{"bool-quoted-true", `targets\[1\]\.disabled`, `disabled: "true"`, `wrong type: string "true" where a boolean expected (write true or false, without quotes)`},
		{"bool-github-on", `github\.close_on_revert`, "close_on_revert: on", `wrong type: string "on" where a boolean expected (write true or false: YAML 1.1's`},
		// A base URL, for every provider and GitHub: an absolute http(s)
		// URL with a host, no query or fragment, a port in 1–65535.
		{"base-url-no-host", `targets\[0\]\.base_url`, "base_url:", `"http://": no host (want http(s)://host[:port][/path])`},
		{"base-url-query", `targets\[0\]\.base_url`, "base_url:", "must not carry a query (?…): request paths are appended to the base URL"},
		{"base-url-fragment", `targets\[0\]\.base_url`, "base_url:", "must not carry a fragment (#…): request paths are appended to the base URL"},
		{"base-url-port", `targets\[0\]\.base_url`, "base_url:", `"http://127.0.0.1:99999/v1": port 99999 out of range (1–65535)`},
		{"base-url-port-zero", `targets\[0\]\.base_url`, "base_url:", `"http://127.0.0.1:0": port 0 out of range (1–65535)`},
		// A stray space or newline in a quoted value would be sent in every
		// request path (404s), and a v1 Azure root would not be recognised.
		{"base-url-space", `targets\[0\]\.base_url`, "base_url:", `white space (a stray space or newline inside the quotes?)`},
		{"base-url-newline", `targets\[0\]\.base_url`, "base_url:", `white space (a stray space or newline inside the quotes?)`},
		{"github-base-url-port", `github\.base_url`, "base_url:", `port 70000 out of range (1–65535)`},
		// A null is an omitted field: a from_run left null is missing,
		// not the 0 it decodes to.
		{"sim-from-run-null", `targets\[0\]\.sim\.policies\[0\]\.from_run`, "from_run: ~", "required: the run id the policy applies from (1 or more)"},
		// A key a merge key (`<<`) supplies is as given as one written in
		// place: its explicit 0 (or empty value) is refused, at its line,
		// not read as the default.
		{"merge-max-tokens-zero", `targets\[0\]\.max_tokens`, "<<: {max_tokens: 0}", "0: must be at least 1 (omit it for the default 64)"},
		{"merge-concurrency-zero", `targets\[0\]\.concurrency`, "<<: {concurrency: 0}", "0: must be at least 1 (omit it for the default 4)"},
		{"merge-confirm-zero", `confirm_runs`, "", "0: must be at least 1 (omit it for the default 2)"},
		{"merge-threshold-null", `targets\[0\]\.sim\.policies\[0\]\.thresholds\.hate`, "<<: {hate: ~}", "empty: give a threshold from 0 to 1"},
		// A base URL's host is an IP literal or a syntactically valid DNS
		// name (the placeholder https://... is neither).
		{"base-url-host-dots", `targets\[0\]\.base_url`, "base_url:", `host "...": empty label`},
		{"base-url-host-dot", `targets\[0\]\.base_url`, "base_url:", `host ".": not a host name`},
		{"base-url-host-empty-label", `targets\[0\]\.base_url`, "base_url:", `host "a..b": empty label (two dots in a row, or a leading dot) (want http(s)://host[:port][/path])`},
		{"base-url-host-hyphen", `targets\[0\]\.base_url`, "base_url:", `host "-bad-": label "-bad-" starts or ends with a hyphen`},
		// Only null is the same as an omitted field: a string field with a
		// default given "" is refused, not read as the default.
		{"empty-string-schedule", `schedule`, "schedule:", `"": must not be empty (omit the field for its default "@every 1h")`},
		{"empty-string-database", `database`, "", `"": must not be empty (omit the field for its default driftprobe.db)`},
		{"empty-string-corpus", `corpus`, "", `"": must not be empty (omit the field for the embedded default corpus)`},
		{"empty-string-endpoint", `targets\[0\]\.endpoint`, "endpoint:", `"": must not be empty (omit the field for its default chat)`},
		{"empty-string-api-key-env", `targets\[0\]\.api_key_env`, "api_key_env:", `"": must not be empty (omit the field for its default OPENAI_API_KEY)`},
		{"empty-string-base-url", `targets\[0\]\.base_url`, "base_url:", `"": must not be empty (omit the field for provider openai's API root)`},
		{"empty-string-github-token-env", `github\.token_env`, "token_env:", `"": must not be empty (omit the field for its default GITHUB_TOKEN)`},
		{"empty-string-github-base-url", `github\.base_url`, "base_url:", `"": must not be empty (omit the field for github.com's API)`},
		{"empty-string-attribution-label", `attribution\.category_label`, "category_label:", `"": must not be empty (omit the field for its default category)`},
		// A refused Prometheus URL that may hold a credential is not
		// repeated (the row's message must not carry PROMSECRET99).
		{"attribution-url-credential", `attribution\.prometheus`, "prometheus:", `want an http(s) URL such as http://prometheus:9090 (the value is not repeated: it may hold a credential)`},
		// Anchors and aliases: every problem yaml.v3 reports about them is
		// located, at the alias that causes it, and names its field.
		{"alias-undefined", `targets\[0\]\.seed`, "seed: *nope", "invalid YAML: unknown anchor 'nope' referenced (an alias *nope names a value anchored &nope earlier in the file)"},
		{"alias-undefined-flow", `targets\[0\]\.options\.project`, "project: *nope", "unknown anchor 'nope' referenced"},
		{"alias-contains-itself", `targets\[0\]\.sim\.<<`, "<<: *s", "*s is written inside the value it names (&s at line 6): a value cannot contain itself"},
		{"alias-billion-laughs", `targets\[8\]\.options\.<<`, "options: &o8", `excessive aliasing: *o7 stands for 33333333 YAML nodes once its aliases are expanded`},
		{"alias-wrong-kind", `targets\[0\]\.price`, "price: *p", "wrong type: list where a mapping expected"},
		// A model or an option value is sent as written: blank, padded, or
		// holding a control or formatting character, it names nothing.
		{"model-blank", `targets\[0\]\.model`, "model:", `"  ": blank (give the model, or the Azure deployment name)`},
		{"model-space", `targets\[0\]\.model`, "model:", `"sim-large ": leading or trailing white space`},
		{"model-zero-width", `targets\[0\]\.model`, "model:", `"sim\u200blarge": control or formatting characters`},
		{"option-line-break", `targets\[0\]\.options\.organization`, "organization:", `"org-abc\n": control or formatting characters`},
		// A null key is dropped by yaml.v3 with its value, silently: refused,
		// named as written, beside the file's other problems.
		{"null-key", `targets\[0\]\.~`, "~: 4", `a null key names nothing: its value would be ignored (write the name meant, or quote the key if it is the name: "~")`},
		{"alias-merge-list", `targets\[1\]\.<<`, "<<: *p", "not an alias (*p) of a list (write the list in place: <<: [*a, *b])"},
	}
	// The other problems of a file that has more than one, after "FILE:",
	// in file order: every problem of a file is reported at once.
	more := map[string][]string{
		// The policy after the empty one is validated too, under its
		// own index (ValidateSim used to stop at the empty one).
		"sim-policy-null": {"8: targets[0].sim.policies[1].from_run: 0: run ids start at 1"},
		"null-key": {
			`12: targets[0].sim.policies[0].thresholds.null: a null key names nothing: its value would be ignored (write the name meant, or quote the key if it is the name: "null")`,
			"13: targets[0].concurrency: 0: must be at least 1 (omit it for the default 4)",
		},
	}
	for f := range more {
		if !slices.ContainsFunc(tests, func(tt struct{ file, field, at, msg string }) bool { return tt.file == f }) {
			t.Errorf("more[%q]: no such row", f)
		}
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Setenv(setKeyVar, "test-key")
			t.Setenv(emptyKeyVar, " ")
			t.Setenv(brokenKeyVar, brokenKeyValue)
			unsetenv(t, unsetKeyVar)
			unsetenv(t, awsKeyIDVar)
			t.Setenv(awsSecretVar, "test-secret")
			file := "testdata/invalid-" + tt.file + ".yaml"
			_, err := Load(file, true)
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want an error", file)
			}
			if !yamlx.IsInputError(err) {
				t.Errorf("error %T is not an input error", err)
			}
			var l yamlx.List
			if !errors.As(err, &l) {
				t.Fatalf("error %T is not a yamlx.List: %v", err, err)
			}
			also := more[tt.file]
			if len(l) != 1+len(also) {
				t.Fatalf("got %d problems, want exactly %d:\n%v", len(l), 1+len(also), err)
			}
			for i, a := range also {
				if got := l[1+i].Error(); got != file+":"+a {
					t.Errorf("problem %d: %q, want %q", 2+i, got, file+":"+a)
				}
			}
			prefix := "^" + regexp.QuoteMeta(file) + `:(\d+): `
			if tt.field != "" {
				prefix += tt.field + ": "
			}
			re := regexp.MustCompile(prefix)
			msg := l[0].Error()
			g := re.FindStringSubmatch(msg)
			if g == nil {
				t.Fatalf("error %q does not match %q", msg, re)
			}
			want := 1
			if tt.at != "" {
				// A marker spanning lines names the line of its first part.
				data, _ := os.ReadFile(file)
				i := strings.Index(string(data), tt.at)
				if i < 0 {
					t.Fatalf("%s: marker %q not found", file, tt.at)
				}
				want = strings.Count(string(data[:i]), "\n") + 1
			}
			if got, _ := strconv.Atoi(g[1]); got != want {
				t.Errorf("error %q names line %d, want %d", msg, got, want)
			}
			if !strings.Contains(msg, tt.msg) {
				t.Errorf("error %q does not contain %q", msg, tt.msg)
			}
			if strings.Contains(err.Error(), "half-SECRET") {
				t.Errorf("a key's value is echoed: %v", err)
			}
		})
	}
}

// Every testdata/invalid-*.yaml has a row in TestLoadInvalid (those with
// many problems, invalid-every-*, in TestLoadReportsEveryProblem).
func TestLoadInvalidCoversTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	t.Setenv(setKeyVar, "test-key")
	t.Setenv(brokenKeyVar, brokenKeyValue)
	unsetenv(t, unsetKeyVar)
	unsetenv(t, awsKeyIDVar)
	for _, f := range files {
		if _, err := Load(f, true); err == nil {
			t.Errorf("%s loads without error", f)
		} else if !strings.HasPrefix(err.Error(), f+":") {
			t.Errorf("%s: error does not start with the file name: %v", f, err)
		}
	}
}

func TestMissingEnvVar(t *testing.T) {
	const file = "testdata/invalid-missing-env.yaml"
	unsetenv(t, unsetKeyVar)
	// Commands that only read the database do not need keys.
	c, err := Load(file, false)
	if err != nil {
		t.Fatalf("Load(needKeys=false): %v", err)
	}
	if _, err := c.Targets[0].Key(); err == nil || !strings.Contains(err.Error(), unsetKeyVar) {
		t.Errorf("Key() with the variable unset: %v, want an error naming %s", err, unsetKeyVar)
	}
	// Once the variable is set, the same file is valid.
	t.Setenv(unsetKeyVar, "sk-test")
	c, err = Load(file, true)
	if err != nil {
		t.Fatalf("Load with %s set: %v", unsetKeyVar, err)
	}
	if k, err := c.Targets[0].Key(); err != nil || k != "sk-test" {
		t.Errorf("Key() = %q, %v", k, err)
	}
	// A disabled target needs no key (another one is enabled: a config
	// whose every target is disabled is an error of its own).
	unsetenv(t, unsetKeyVar)
	c, err = Parse(file, mustRead(t, file))
	if err != nil {
		t.Fatal(err)
	}
	c.Targets[0].Disabled = true
	c.Targets = append(c.Targets, &Target{Name: "on", Provider: "sim", Model: "m", Endpoint: "chat", Concurrency: 1,
		Timeout: c.Timeout, MaxAttempts: c.MaxAttempts, MaxTokens: 1, Breaker: Breaker{Failures: 1, Cooldown: Duration(time.Second)}})
	if err := c.Validate(true); err != nil {
		t.Errorf("disabled target without key: %v", err)
	}
}

// A Bedrock target naming no api_key_env signs with AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY: when keys are needed (config check, run), each
// one unset or blank is a problem located at the target's provider line,
// and no value is echoed. Without needKeys (--no-keys), with both set, with
// api_key_env named (a Bedrock API key) or with the target disabled, the
// AWS variables are not needed.
func TestBedrockCredentialEnv(t *testing.T) {
	const (
		file   = "br.yaml"
		keyID  = "AKIAQATESTKEYID0001"
		secret = "QA-SECRET-wJalrXUtnFEMI"
	)
	parse := func(t *testing.T, src string) *Config {
		t.Helper()
		c, err := Parse(file, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const plain = "database: x.db\ntargets:\n  - name: b\n    provider: bedrock\n    model: anthropic.claude-3-haiku-20240307-v1:0\n    options: {region: us-east-1}\n"
	msg := func(name, problem string) string {
		return "br.yaml:4: targets[0].provider: bedrock signs requests with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: environment variable " +
			name + " " + problem + " (or name an Amazon Bedrock API key in api_key_env)"
	}
	for _, tt := range []struct {
		name          string
		keyID, secret *string // nil: unset
		want          []string
	}{
		{"both unset", nil, nil, []string{msg(awsKeyIDVar, "is not set"), msg(awsSecretVar, "is not set")}},
		{"key id unset", nil, new(secret), []string{msg(awsKeyIDVar, "is not set")}},
		{"secret unset", new(keyID), nil, []string{msg(awsSecretVar, "is not set")}},
		{"secret blank", new(keyID), new(" \t"), []string{msg(awsSecretVar, "is empty")}},
		{"key id blank", new(""), new(secret), []string{msg(awsKeyIDVar, "is empty")}},
		// A line break inside a value (a secret file of two lines).
		{"secret broken", new(keyID), new(secret + "\r\n" + secret), []string{msg(awsSecretVar, "holds a control character (U+000D) inside its value: a line break or tab within the key? No HTTP request can carry it (the value is not repeated)")}},
		{"both set", new(keyID), new(secret), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []struct {
				name string
				val  *string
			}{{awsKeyIDVar, tt.keyID}, {awsSecretVar, tt.secret}} {
				if v.val == nil {
					unsetenv(t, v.name)
				} else {
					t.Setenv(v.name, *v.val)
				}
			}
			err := parse(t, plain).Validate(true)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate(true): %v", err)
				}
			} else if err == nil || err.Error() != strings.Join(tt.want, "\n") {
				t.Fatalf("Validate(true):\n%v\nwant\n%s", err, strings.Join(tt.want, "\n"))
			} else if !yamlx.IsInputError(err) {
				t.Errorf("error %T is not an input error", err)
			}
			if err != nil && (strings.Contains(err.Error(), keyID) || strings.Contains(err.Error(), secret)) {
				t.Errorf("a credential value is echoed: %v", err)
			}
			// --no-keys: commands that send nothing need no credentials.
			if err := parse(t, plain).Validate(false); err != nil {
				t.Errorf("Validate(false): %v", err)
			}
		})
	}

	t.Run("api_key_env", func(t *testing.T) {
		unsetenv(t, awsKeyIDVar)
		unsetenv(t, awsSecretVar)
		t.Setenv(setKeyVar, "bedrock-api-key")
		unsetenv(t, unsetKeyVar)
		src := strings.Replace(plain, "    options:", "    api_key_env: "+setKeyVar+"\n    options:", 1)
		if err := parse(t, src).Validate(true); err != nil {
			t.Errorf("api_key_env set, AWS variables unset: %v", err)
		}
		// A named but unset key variable is that variable's problem only.
		src = strings.Replace(plain, "    options:", "    api_key_env: "+unsetKeyVar+"\n    options:", 1)
		err := parse(t, src).Validate(true)
		if want := "br.yaml:6: targets[0].api_key_env: environment variable " + unsetKeyVar + " is not set"; err == nil || err.Error() != want {
			t.Errorf("api_key_env unset: %v, want %s", err, want)
		}
	})

	t.Run("disabled", func(t *testing.T) {
		unsetenv(t, awsKeyIDVar)
		unsetenv(t, awsSecretVar)
		src := strings.Replace(plain, "    options:", "    disabled: true\n    options:", 1) + "  - {name: s, provider: sim, model: m}\n"
		if err := parse(t, src).Validate(true); err != nil {
			t.Errorf("disabled bedrock target: %v", err)
		}
	})
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml", false)
	if err == nil || !strings.HasPrefix(err.Error(), "testdata/does-not-exist.yaml: cannot read config") {
		t.Errorf("Load(missing) = %v", err)
	}
}

// Several problems are all reported, in file order, each with its own line.
func TestManyProblemsInFileOrder(t *testing.T) {
	const src = `database: x.db
confirm_runs: 0
schedule: "@every banana"
targets:
  - name: a
    provider: nope
    model: m
  - name: a
    provider: sim
    model: sim-large
    concurrency: -3
`
	c, err := Parse("many.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate(false)
	var l yamlx.List
	if !errors.As(err, &l) {
		t.Fatalf("Validate = %v", err)
	}
	want := []string{
		`many.yaml:2: confirm_runs: 0: must be at least 1`,
		`many.yaml:3: schedule: "@every banana": bad interval`,
		`many.yaml:6: targets[0].provider: unknown provider "nope"`,
		`many.yaml:8: targets[1].name: duplicate target name "a"`,
		`many.yaml:11: targets[1].concurrency: -3: must be at least 1`,
	}
	if len(l) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(l), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(l[i].Error(), w) {
			t.Errorf("problem %d = %q, want prefix %q", i, l[i].Error(), w)
		}
	}
}

// Decoding keeps going after a bad value: every type problem is reported.
func TestManyDecodeProblems(t *testing.T) {
	const src = `timeout: soon
confirm_runs: two
targets:
  - name: a
    provider: sim
    model: sim-large
    colour: red
`
	_, err := Parse("d.yaml", []byte(src))
	var l yamlx.List
	if !errors.As(err, &l) {
		t.Fatalf("Parse = %v", err)
	}
	want := []string{
		`d.yaml:1: timeout: "soon": not a duration`,
		`d.yaml:2: confirm_runs: wrong type: string "two"`,
		`d.yaml:7: targets[0].colour: unknown field`,
	}
	if len(l) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(l), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(l[i].Error(), w) {
			t.Errorf("problem %d = %q, want prefix %q", i, l[i].Error(), w)
		}
	}
}

func TestLoadDesignExample(t *testing.T) {
	t.Setenv("AZURE_OPENAI_API_KEY", "az-test")
	t.Setenv("GITHUB_TOKEN", "gh-test")
	c, err := Load("testdata/valid-design.yaml", true)
	if err != nil {
		t.Fatalf("the documented example config does not load: %v", err)
	}
	if c.File != "testdata/valid-design.yaml" {
		t.Errorf("File = %q", c.File)
	}
	if c.Database != "driftprobe.db" || c.Corpus != "./corpus/default" || c.Schedule != "@every 1h" || c.ConfirmRuns != 2 {
		t.Errorf("top level = %q %q %q %d", c.Database, c.Corpus, c.Schedule, c.ConfirmRuns)
	}
	// Defaults for what the file leaves out.
	if c.Concurrency != DefaultConcurrency || c.Timeout.D() != DefaultTimeout || c.MaxAttempts != DefaultMaxAttempts || c.MaxBody != DefaultMaxBody {
		t.Errorf("defaults: concurrency %d timeout %v attempts %d body %d", c.Concurrency, c.Timeout.D(), c.MaxAttempts, c.MaxBody)
	}
	if len(c.Targets) != 2 {
		t.Fatalf("%d targets, want 2", len(c.Targets))
	}
	az, sm := c.Target("azure-gpt4o-eastus"), c.Target("sim-a")
	if az == nil || sm == nil {
		t.Fatalf("targets by name: %v %v", az, sm)
	}
	if az.Provider != "azure" || az.Model != "gpt-4o" || az.Endpoint != "chat" || az.APIKeyEnv != "AZURE_OPENAI_API_KEY" ||
		az.RateLimitRPM != 60 || az.Concurrency != 4 || az.Price != (Price{2.5, 10}) {
		t.Errorf("azure target = %+v", az)
	}
	if k, err := az.Key(); err != nil || k != "az-test" {
		t.Errorf("azure key = %q, %v", k, err)
	}
	// sim-a sets no endpoint, concurrency or timeout: defaults apply.
	if sm.Endpoint != "chat" || sm.Concurrency != 4 || sm.Timeout.D() != DefaultTimeout || sm.MaxAttempts != DefaultMaxAttempts ||
		sm.MaxTokens != DefaultMaxTokens || sm.Breaker.Failures != 5 || sm.Breaker.Cooldown.D() != 30*time.Second || sm.APIKeyEnv != "" {
		t.Errorf("sim target defaults = %+v", sm)
	}
	if k, err := sm.Key(); err != nil || k != "" {
		t.Errorf("sim key = %q, %v", k, err)
	}
	wantSim := &sim.Config{Policies: []sim.Policy{
		{FromRun: 1, Thresholds: map[string]float64{"violence": 0.5, "hate": 0.5}, Fingerprint: "fp-a"},
		{FromRun: 3, Thresholds: map[string]float64{"violence": 0.01}},
	}}
	if sm.Sim == nil || len(sm.Sim.Policies) != 2 || sm.Sim.Policies[0].FromRun != 1 || sm.Sim.Policies[1].FromRun != 3 ||
		sm.Sim.Policies[0].Thresholds["hate"] != 0.5 || sm.Sim.Policies[1].Thresholds["violence"] != 0.01 || sm.Sim.Policies[0].Fingerprint != "fp-a" {
		t.Errorf("sim block = %+v, want %+v", sm.Sim, wantSim)
	}
	if g := c.GitHub; g == nil || g.Repo != "owner/name" || g.TokenEnv != "GITHUB_TOKEN" || g.BaseURL != "https://github.example.com/api/v3/" {
		t.Errorf("github = %+v", c.GitHub)
	}
	if d := c.Detection; d.DegradedFraction != 0.2 || d.ScoreTolerance != 0.15 || d.NondeterministicFlips != 2 || d.WindowRuns != 3 || d.ScreenSamples != 2 {
		t.Errorf("detection defaults = %+v", d)
	}
	if pt := sm.ProbeTarget(""); pt.Name != "sim-a" || pt.Provider != "sim" || pt.Endpoint != "chat" || pt.Sim == nil {
		t.Errorf("ProbeTarget = %+v", pt)
	}
}

// The azure target's key variable is needed only when keys are.
func TestLoadDesignExampleWithoutKeys(t *testing.T) {
	unsetenv(t, "AZURE_OPENAI_API_KEY")
	if _, err := Load("testdata/valid-design.yaml", false); err != nil {
		t.Errorf("needKeys=false: %v", err)
	}
	_, err := Load("testdata/valid-design.yaml", true)
	re := regexp.MustCompile(`^testdata/valid-design\.yaml:11: targets\[0\]\.api_key_env: environment variable AZURE_OPENAI_API_KEY is not set`)
	if err == nil || !re.MatchString(err.Error()) {
		t.Errorf("needKeys=true without the variable: %v", err)
	}
}

func TestDefaultsFromProvider(t *testing.T) {
	c, err := Parse("p.yaml", []byte("targets:\n  - {name: o, provider: openai, model: gpt-4o-mini}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Targets[0].APIKeyEnv; got != "OPENAI_API_KEY" {
		t.Errorf("default api_key_env = %q, want OPENAI_API_KEY", got)
	}
	if c.GitHub != nil {
		t.Errorf("github = %+v, want nil when absent", c.GitHub)
	}
}

func TestDefault(t *testing.T) {
	c := Default()
	if err := c.Validate(true); err != nil {
		t.Fatalf("Default().Validate: %v", err)
	}
	if c.File != "" || c.Corpus != "" {
		t.Errorf("File %q Corpus %q, want empty (embedded)", c.File, c.Corpus)
	}
	if c.ConfirmRuns != DefaultConfirmRuns || c.Schedule != DefaultSchedule || c.Database != DefaultDatabase {
		t.Errorf("Default = %+v", c)
	}
	if len(c.Enabled()) != 1 || c.Enabled()[0].Provider != "sim" || c.Enabled()[0].Endpoint != "chat" {
		t.Errorf("Default targets = %+v", c.Targets)
	}
	// Problems in the built-in config still carry a location.
	c.ConfirmRuns = -1
	if err := c.Validate(false); err == nil || !strings.HasPrefix(err.Error(), "(built-in config): confirm_runs: ") {
		t.Errorf("built-in problem = %v", err)
	}
}

func TestEnabled(t *testing.T) {
	c := Default()
	c.Targets = append(c.Targets, &Target{Name: "off", Provider: "sim", Model: "m", Disabled: true})
	if got := c.Enabled(); len(got) != 1 || got[0].Name != "sim-a" {
		t.Errorf("Enabled = %v", got)
	}
	if c.Target("off") == nil || c.Target("nope") != nil {
		t.Error("Target lookup")
	}
}

func TestValidateSchedule(t *testing.T) {
	tests := []struct {
		in  string
		bad string // fragment of the error; "" when valid
	}{
		{"@every 1h", ""},
		{"@every 30s", ""},
		{"  @every 1m  ", ""},
		{"*/15 * * * *", ""},
		{"0 9 * * 1-5", ""},
		{"CRON_TZ=Europe/Berlin 0 * * * *", ""},
		{"TZ=UTC 30 2 * * *", ""},
		{"@hourly", ""},
		{"@every banana", "bad interval"},
		{"@every 500ms", "at least 1s"},
		{"@every -1h", "at least 1s"},
		{"61 * * * *", "above maximum"},
		{"* * * *", "not \"@every DURATION\" or a cron expression"},
		{"CRON_TZ=Nowhere/Land 0 * * * *", "not \"@every DURATION\" or a cron expression"},
		{"", "not \"@every DURATION\" or a cron expression"},
	}
	for _, tt := range tests {
		err := ValidateSchedule(tt.in)
		switch {
		case tt.bad == "" && err != nil:
			t.Errorf("ValidateSchedule(%q) = %v, want ok", tt.in, err)
		case tt.bad != "" && err == nil:
			t.Errorf("ValidateSchedule(%q) = nil, want an error", tt.in)
		case tt.bad != "" && !strings.Contains(err.Error(), tt.bad):
			t.Errorf("ValidateSchedule(%q) = %v, want it to contain %q", tt.in, err, tt.bad)
		}
	}
}

func TestParseDuration(t *testing.T) {
	day := 24 * time.Hour
	for in, want := range map[string]time.Duration{"7d": 7 * day, "1w": 7 * day, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute,
		"2w1d": 15 * day, "36500d": 36500 * day, "0s": 0, "-1h": -time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	// Wrap-around: 213504 days overflowed int64 nanoseconds to 25 minutes.
	for _, in := range []string{"", "d", "7x", "12h1d", "1.5d", "-3d", "213504d", "36500w", "36501d", "36500d1h", "1d-1h", "9223372036854775807d"} {
		if d, err := ParseDuration(in); err == nil {
			t.Errorf("%q accepted as %v", in, d)
		}
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		src  string
		want time.Duration
		bad  string
	}{
		{"timeout: 45s", 45 * time.Second, ""},
		{"timeout: 1m30s", 90 * time.Second, ""},
		{"timeout: 5 minutes", 0, `p.yaml:1: timeout: "5 minutes": not a duration`},
		{"timeout: 5", 0, `p.yaml:1: timeout: "5": not a duration`},
		{"timeout: 2d", 48 * time.Hour, ""},
		{"timeout: d", 0, `p.yaml:1: timeout: "d": not a duration`},
		{"timeout: 1.5d", 0, `p.yaml:1: timeout: "1.5d": not a duration`},
		{"timeout: -3d", 0, `p.yaml:1: timeout: "-3d": not a duration`},
		{"timeout: [1s]", 0, "p.yaml:1: timeout: wrong type: list where a duration (e.g. 30s, 5m) expected"},
		{"timeout:\n  s: 1", 0, "p.yaml:1: timeout: wrong type: mapping where a duration"},
	}
	for _, tt := range tests {
		c, err := Parse("p.yaml", []byte(tt.src+"\ntargets: [{name: s, provider: sim, model: m}]\n"))
		if tt.bad != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.bad) {
				t.Errorf("%q: error %v, want prefix %q", tt.src, err, tt.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		if c.Timeout.D() != tt.want || c.Targets[0].Timeout.D() != tt.want {
			t.Errorf("%q: timeout %v (target %v), want %v", tt.src, c.Timeout.D(), c.Targets[0].Timeout.D(), tt.want)
		}
	}
}

// Field-level checks that have no testdata file of their own.
func TestValidateFields(t *testing.T) {
	base := "targets:\n  - name: s\n    provider: sim\n    model: sim-large\n"
	tests := []struct {
		extra string // appended to the target
		want  string // "" when valid
	}{
		{"", ""},
		{"    endpoint: moderation\n", "p.yaml:5: targets[0].endpoint: \"moderation\": provider sim supports"},
		{"    base_url: ftp://x\n", "p.yaml:5: targets[0].base_url: \"ftp://x\": must start with http:// or https://"},
		{"    rate_limit_rpm: -1\n", "p.yaml:5: targets[0].rate_limit_rpm: -1: must be a number >= 0 (0: unlimited)"},
		{"    concurrency: -1\n", "p.yaml:5: targets[0].concurrency: -1: must be at least 1"},
		{"    confirm_samples: 11\n", "p.yaml:5: targets[0].confirm_samples: 11: must be between 0 and 10"},
		{"    temperature: 3\n", "p.yaml:5: targets[0].temperature: 3: must be between 0 and 2"},
		{"    price: {input_per_mtok: -1}\n", "p.yaml:5: targets[0].price.input_per_mtok: -1: must be a number >= 0 (USD per million tokens)"},
		{"    name: s\n", "p.yaml:5: targets[0].name: duplicate key (first at line 2)"},
		{"    seed: abc\n", "p.yaml:5: targets[0].seed: wrong type: string \"abc\" where an integer expected"},
		{"    options: [a]\n", "p.yaml:5: targets[0].options: wrong type: list where a mapping expected"},
		{"    sim: {policies: [{from_run: 0}]}\n", "p.yaml:5: targets[0].sim.policies[0].from_run: 0: run ids start at 1"},
		{"    sim: {error_rate: 0.5}\n", "p.yaml:5: targets[0].sim.error_status: required when error_rate or fail_first is set"},
	}
	for _, tt := range tests {
		c, err := Parse("p.yaml", []byte(base+tt.extra))
		if err == nil {
			err = c.Validate(false)
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.extra, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%q: error %v, want prefix %q", tt.extra, err, tt.want)
		}
	}
	for _, src := range []string{
		"targets: []\n",
		"database: x.db\n",
	} {
		c, err := Parse("p.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(false); err == nil || !strings.Contains(err.Error(), "targets: at least one target is required") {
			t.Errorf("%q: %v", src, err)
		}
	}
	for name, want := range map[string]string{
		"":            "targets[0].name: required",
		"has space":   `targets[0].name: "has space": use letters`,
		"ok.name_1-2": "",
	} {
		c, err := Parse("p.yaml", []byte("targets:\n  - {name: \""+name+"\", provider: sim, model: m}\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate(false)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), "p.yaml:2: "+want)) {
			t.Errorf("name %q: %v, want %q", name, err, want)
		}
	}
}

// GitHub App auth: all three fields select it (token_env gets no default);
// a token alongside, a file path or the key itself are errors that never
// echo the value.
func TestGitHubAppAuth(t *testing.T) {
	const base = "targets:\n  - {name: s, provider: sim, model: m}\ngithub:\n  repo: o/r\n"
	c, err := Parse("a.yaml", []byte(base+"  app_id: 12345\n  installation_id: 678\n  private_key_env: GH_APP_KEY\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(true); err != nil {
		t.Fatalf("app auth: %v", err)
	}
	if g := c.GitHub; !g.AppAuth() || g.AppID != 12345 || g.InstallationID != 678 || g.PrivateKeyEnv != "GH_APP_KEY" || g.TokenEnv != "" {
		t.Errorf("github = %+v", g)
	}
	for _, tt := range []struct{ extra, want string }{
		{"  app_id: 1\n  installation_id: 2\n  private_key_env: K\n  token_env: GITHUB_TOKEN\n", "a.yaml:8: github.token_env: set together with GitHub App auth"},
		{"  app_id: 1\n  installation_id: 2\n  private_key_env: /etc/driftprobe/app.pem\n", "a.yaml:7: github.private_key_env: must name an environment variable"},
		{"  app_id: 1\n  installation_id: 2\n  private_key_env: \"-----BEGIN RSA PRIVATE KEY-----\\nMIIsecret\"\n", "a.yaml:7: github.private_key_env: must name an environment variable"},
		{"  app_id: -1\n  installation_id: 2\n  private_key_env: K\n", "a.yaml:5: github.app_id: -1: must be a positive GitHub App id"},
		{"  private_key_env: K\n", "github.app_id: required with github.private_key_env"},
	} {
		c, err := Parse("a.yaml", []byte(base+tt.extra))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate(false)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.extra, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), "/etc/") || strings.Contains(err.Error(), "MIIsecret")) {
			t.Errorf("the value is echoed: %v", err)
		}
	}
}

// The attribution block takes its documented defaults; without it there
// is none.
func TestAttributionDefaults(t *testing.T) {
	c, err := Parse("a.yaml", []byte("targets: [{name: a, provider: sim, model: m}]\nattribution:\n  prometheus: http://prom:9090/prefix\n  query: q\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(false); err != nil {
		t.Fatal(err)
	}
	want := Attribution{Prometheus: "http://prom:9090/prefix", Query: "q", TargetLabel: "target", CategoryLabel: "category",
		Since: Duration(7 * 24 * time.Hour), Step: Duration(time.Hour), MinZ: 3, MinPoints: 3, MinChange: 0.5}
	if a := c.Attribution; a == nil || *a != want {
		t.Errorf("attribution = %+v, want %+v", a, want)
	}
	// The shortest range that can hold a change: 2 × 3 steps.
	c, err = Parse("b.yaml", []byte("targets: [{name: a, provider: sim, model: m}]\nattribution: {prometheus: https://p, query: q, since: 30m, step: 5m, tolerance: 10m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(false); err != nil {
		t.Errorf("since = 6 steps: %v", err)
	}
	// Thresholds given are kept; min_points 2 lowers the shortest since.
	c, err = Parse("c.yaml", []byte("targets: [{name: a, provider: sim, model: m}]\nattribution: {prometheus: https://p, query: q, since: 4h, min_z: 4.5, min_points: 2, min_change: 0.25, min_rate_change: 0.2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(false); err != nil {
		t.Errorf("thresholds: %v", err)
	}
	if a := c.Attribution; a.MinZ != 4.5 || a.MinPoints != 2 || a.MinChange != 0.25 || a.MinRateChange != 0.2 {
		t.Errorf("thresholds not kept: %+v", a)
	}
	if Default().Attribution != nil {
		t.Error("the built-in config attributes nothing")
	}
}

// The bounds' own edges, and the documented zeros, are accepted.
func TestNumericBoundsAccepted(t *testing.T) {
	const src = `concurrency: 1000
timeout: 10m
max_attempts: 10
max_body_bytes: 1
lock_ttl: 30s
jitter: 0s
detection:
  degraded_fraction: 1
  score_tolerance: 0.01
  nondeterministic_flips: 1
  window_runs: 1
  screen_samples: -1
targets:
  - name: a
    provider: sim
    model: m
    concurrency: 1
    timeout: 1s
    max_attempts: 1
    max_tokens: 1000000
    seed: 2147483647
    rate_limit_rpm: 0
    confirm_samples: 0
    price: {input_per_mtok: 0, output_per_mtok: 0}
    temperature: 2
    breaker: {failures: 1000000, cooldown: 1s}
  - name: b
    provider: sim
    model: m
    seed: 0
    max_tokens: 1
    disabled: true
`
	c, err := Parse("b.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(false); err != nil {
		t.Fatalf("edges refused: %v", err)
	}
	// b inherits the top level's timeout and attempts.
	if b := c.Target("b"); b.Timeout.D() != 10*time.Minute || b.MaxAttempts != 10 || b.Concurrency != 4 || b.Breaker.Failures != 5 {
		t.Errorf("inherited/defaults: %+v", b)
	}
}

// A bad top-level value a target inherits is reported once, at the top
// level.
func TestInheritedProblemReportedOnce(t *testing.T) {
	c, err := Parse("i.yaml", []byte("timeout: 0s\nmax_attempts: 50\ntargets:\n  - {name: a, provider: sim, model: m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate(false)
	var l yamlx.List
	if !errors.As(err, &l) || len(l) != 2 || !strings.HasPrefix(l[0].Error(), "i.yaml:1: timeout: ") || !strings.HasPrefix(l[1].Error(), "i.yaml:2: max_attempts: ") {
		t.Fatalf("want one problem each for timeout and max_attempts, got:\n%v", err)
	}
}

// The example configuration in README.md's configuration reference is
// valid (keys are not needed to validate it).
func TestREADMEExampleConfig(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Skipf("README.md: %v", err)
	}
	s := string(data)
	i := strings.Index(s, "## Configuration reference")
	if i < 0 {
		t.Fatal("README.md has no configuration reference")
	}
	s = s[i:]
	start := strings.Index(s, "```yaml\n")
	if start < 0 {
		t.Fatal("no yaml block in the configuration reference")
	}
	s = s[start+len("```yaml\n"):]
	end := strings.Index(s, "```")
	if end < 0 {
		t.Fatal("unterminated yaml block")
	}
	c, err := Parse("README.md", []byte(s[:end]))
	if err != nil {
		t.Fatalf("README example: %v", err)
	}
	if err := c.Validate(false); err != nil {
		t.Fatalf("README example: %v", err)
	}
}

// A plain-http API root off loopback, carrying a key or token, is a
// warning naming its line; loopback and https are not.
func TestWarningsPlainHTTP(t *testing.T) {
	c, err := Parse("w.yaml", []byte(`targets:
  - {name: a, provider: openai, model: m, base_url: "http://api.example.invalid/v1"}
  - {name: b, provider: openai, model: m, base_url: "http://LocalHost:8080/v1"}
  - {name: c, provider: openai, model: m, base_url: "https://api.example.invalid/v1"}
  - {name: d, provider: openai_compatible, model: m, base_url: "http://llm.internal/v1"}
  - {name: e, provider: bedrock, model: m, base_url: "http://10.1.2.3:8081", options: {region: us-east-1}}
github: {repo: o/r, base_url: "http://github.example.invalid/api/v3/"}
`))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Warnings()
	if len(w) != 3 || !strings.HasPrefix(w[0], "w.yaml:2: targets[0].base_url: \"http://api.example.invalid/v1\" is plain http") ||
		!strings.HasPrefix(w[1], "w.yaml:6: targets[4].base_url:") || !strings.Contains(w[1], "AWS session token") ||
		!strings.HasPrefix(w[2], "w.yaml:7: github.base_url:") || !strings.Contains(w[2], "the token would travel") {
		t.Errorf("warnings %q", w)
	}
}

// A base URL carrying credentials is refused for every provider, and
// the credentials are not repeated.
func TestBaseURLWithCredentials(t *testing.T) {
	for _, p := range []string{"openai", "anthropic", "gemini", "mistral", "openai_compatible"} {
		c, err := Parse("u.yaml", []byte("targets:\n  - {name: a, provider: "+p+", model: m, api_key_env: "+setKeyVar+", base_url: \"https://user:pa55word@api.example.invalid/v1\"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(setKeyVar, "k")
		err = c.Validate(true)
		if err == nil || !strings.Contains(err.Error(), "u.yaml:2: targets[0].base_url: must not carry credentials") || strings.Contains(err.Error(), "pa55word") ||
			strings.Count(err.Error(), "base_url") != 1 {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A key pasted into a base URL's path (it would be stored as every
// observation's request path and shown in evidence) is refused without
// being repeated, as are credentials in github.base_url; a gateway URL
// with a 32-hex account id passes.
func TestBaseURLKeyInPath(t *testing.T) {
	t.Setenv(setKeyVar, "k")
	for _, tc := range []struct{ yaml, want string }{
		{"targets:\n  - {name: a, provider: openai_compatible, model: m, api_key_env: " + setKeyVar + ", base_url: \"http://127.0.0.1:18081/v1/sk-QA-SECRET-0123456789abcdef/\"}\n",
			"u.yaml:2: targets[0].base_url: must not carry a credential in its path"},
		{"targets:\n  - {name: a, provider: gemini, model: m, api_key_env: " + setKeyVar + ", base_url: \"https://proxy.example.invalid/AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW/v1\"}\n",
			"u.yaml:2: targets[0].base_url: must not carry a credential in its path"},
		{"targets:\n  - {name: a, provider: sim, model: m}\ngithub:\n  repo: o/r\n  base_url: \"https://bot:ghp_" + strings.Repeat("aB3", 12) + "@ghe.example.invalid/\"\n",
			"u.yaml:5: github.base_url: must not carry credentials"},
		{"targets:\n  - {name: a, provider: gemini, model: m, api_key_env: " + setKeyVar + ", base_url: \"https://proxy.example.invalid/v1beta?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW\"}\n",
			"u.yaml:2: targets[0].base_url: must not carry a credential in its query"},
		{"targets:\n  - {name: a, provider: gemini, model: m, api_key_env: " + setKeyVar + ", base_url: \"https://proxy.example.invalid/v1;key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW\"}\n",
			"u.yaml:2: targets[0].base_url: must not carry a credential in its path"},
		{"targets:\n  - {name: a, provider: openai_compatible, model: m, api_key_env: " + setKeyVar + ", base_url: \"https://proxy.example.invalid/v1/gsk_Q8r3LmN0pXyZ7a2Bc4De6Fg8Hj0Kl2Mn4Op6\"}\n",
			"u.yaml:2: targets[0].base_url: must not carry a credential in its path"},
		{"targets:\n  - {name: a, provider: sim, model: m}\ngithub:\n  repo: o/r\n  base_url: \"https://ghe.example.invalid/api/v3#ghp_" + strings.Repeat("aB3", 12) + "\"\n",
			"u.yaml:5: github.base_url: must not carry a credential in its fragment"},
	} {
		c, err := Parse("u.yaml", []byte(tc.yaml))
		if err == nil {
			err = c.Validate(false)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "0123456789abcdef") ||
			strings.Contains(err.Error(), "AIzaSy") || strings.Contains(err.Error(), "aB3aB3") {
			t.Errorf("%q: %v, want %q without the credential", tc.yaml, err, tc.want)
		}
	}
	ok := "targets:\n  - {name: a, provider: openai_compatible, model: m, api_key_env: " + setKeyVar +
		", base_url: \"https://gateway.ai.cloudflare.com/v1/0123456789abcdef0123456789abcdef/my-gateway/openai\"}\n"
	c, err := Parse("u.yaml", []byte(ok))
	if err == nil {
		err = c.Validate(true)
	}
	if err != nil {
		t.Errorf("gateway URL with an account id refused: %v", err)
	}
}

// A key is sent, and so redacted, without the white space around it
// (a secret file's trailing newline).
func TestKeyTrimmed(t *testing.T) {
	t.Setenv(setKeyVar, "  sk-QA-SECRET-123\n")
	k, err := (&Target{Name: "a", APIKeyEnv: setKeyVar}).Key()
	if err != nil || k != "sk-QA-SECRET-123" {
		t.Fatalf("Key() = %q, %v", k, err)
	}
}

// A credential pasted where its variable's name belongs is refused
// without being repeated; ordinary variable names pass.
func TestLooksLikeSecret(t *testing.T) {
	for s, want := range map[string]bool{
		"OPENAI_API_KEY":                   false,
		"GITHUB_TOKEN":                     false,
		"my_custom_key_env_2024":           false,
		"AzureOpenAIKeyForProduction":      false, // no digit
		"AzureOpenAIKeyEastUS2Prod":        false, // 25 characters: a name
		"ASIA_PACIFIC_OPENAI_KEY":          false,
		"ASIA_OPENAI_API_KEY":              false,
		"AKIA_KEY_FOR_BEDROCK":             false,
		"AIzaSyD_GEMINI_KEY_PROD":          false,
		"ghp_token_for_issues":             false,
		"github_pat_for_issues":            false,
		"ghp_" + strings.Repeat("aB3", 12): true, // classic token: 36 after the prefix
		"ghs_" + strings.Repeat("Zz9", 12): true,
		"github_pat_" + strings.Repeat("A1", 11) + "_" + strings.Repeat("b2c", 19) + "d3": true,
		"AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW":                                         true,
		"AKIAIOSFODNN7EXAMPLE":                                            true,
		"aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE":                                true, // Mistral-shaped, 32
		"AKIA":                                                            false,
		"c0ffee5a1b2c3d4e5f60718293a4b5c6":                                true, // Azure-shaped: 32 lowercase hex
		"f1e2d3c4b5a697887766554433221100aabbccdd":                        true, // classic 40-hex GitHub token
		"C0FFEE5A1B2C3D4E5F60718293A4B5C6":                                true,
		"ABCDEFABCDEFABCDEFABCDEFABCDEFABCDEF":                            false, // no digit
		"c0ffee5a1b2c3d4e5f6071829":                                       false, // 25: too short to tell
		"gsk_Q8r3LmN0pXyZ7a2Bc4De6Fg8Hj0Kl2Mn4Op6Qr8St0Uv2Wx4Yz6Ab8Cd0Ef": true,  // Groq
		"hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789":                         true,  // Hugging Face
		"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":                           true,  // Hugging Face, letters only
		"r8_Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Bc1Df3Gh5":                         true,  // Replicate
		"my_service_api_key_for_production_2024":                          false,
		"ci_OPENAIAPIKEYFORPRODUCTIONDEPLOYS2024":                         false, // no lower case in the tail
	} {
		if got := looksLikeSecret(s); got != want {
			t.Errorf("looksLikeSecret(%q) = %v, want %v", s, got, want)
		}
	}
}

// A nil target (an empty entry in a config built in code; a file's is
// refused by Parse) is neither enabled nor disabled, and Validate reports
// it rather than crashing.
func TestEmptyTargetInCode(t *testing.T) {
	c := Default()
	c.Targets = append(c.Targets, nil)
	if got := c.Enabled(); len(got) != 1 || got[0].Name != "sim-a" {
		t.Errorf("Enabled = %v", got)
	}
	if c.Target("nope") != nil || c.Target("sim-a") == nil {
		t.Error("Target lookup")
	}
	err := c.Validate(false)
	var l yamlx.List
	if !errors.As(err, &l) || len(l) != 1 || l[0].Error() != "(built-in config): targets[1]: empty entry: a target needs at least name, provider and model" {
		t.Errorf("Validate = %v", err)
	}
	c.Targets = []*Target{nil}
	if err := c.Validate(false); err == nil || strings.Contains(err.Error(), "every target is disabled") {
		t.Errorf("only an empty entry: %v", err)
	}
}

// A cron schedule's jitter must be shorter than its shortest gap between
// firings (a run waits up to jitter and runs never overlap), walked over
// weeks free of daylight-saving changes.
func TestCronJitter(t *testing.T) {
	for _, tt := range []struct {
		schedule, jitter string
		gap              string // "" when accepted
	}{
		{"0 * * * *", "59m", ""},
		{"0 * * * *", "1h", "1h0m0s"},
		{"@hourly", "3h", "1h0m0s"},
		{"0,5 * * * *", "10m", "5m0s"},
		{"0,5 * * * *", "4m", ""},
		{"* * * * *", "59s", ""}, // under a minute: every cron gap is longer
		{"* * * * *", "1m", "1m0s"},
		{"*/2 * * * *", "1m30s", ""},
		{"0 9 * * 1-5", "23h", ""},
		{"0 9 * * 1-5", "24h", "24h0m0s"},
		{"0 9 * * 1", "6d", ""},
		{"0 9 * * 1", "7d", "168h0m0s"},
		{"0 0 1,15 * *", "14d", "336h0m0s"},
		{"0 0 */10 * *", "2d", "24h0m0s"}, // the 31st, then the 1st
		{"CRON_TZ=Europe/Berlin 0 9 * * *", "1d", "24h0m0s"},
		// The fall-back double firing (01:30 twice, an hour apart) does
		// not make every jitter over an hour an error.
		{"CRON_TZ=America/New_York 30 1 * * *", "2h", ""},
	} {
		c, err := Parse("j.yaml", []byte("schedule: \""+tt.schedule+"\"\njitter: "+tt.jitter+"\ntargets: [{name: s, provider: sim, model: m}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate(false)
		switch {
		case tt.gap == "" && err != nil:
			t.Errorf("%s, jitter %s: %v", tt.schedule, tt.jitter, err)
		case tt.gap != "" && (err == nil || !strings.HasPrefix(err.Error(), "j.yaml:2: jitter: ") ||
			!strings.HasSuffix(err.Error(), ": must be shorter than the schedule's shortest gap between runs ("+tt.gap+")")):
			t.Errorf("%s, jitter %s: %v, want the shortest gap %s", tt.schedule, tt.jitter, err, tt.gap)
		}
	}
}

// Where the generic checks and a provider's own overlap, a field gets one
// message; a base URL with credentials and a bad scheme is reported once
// and never echoed.
func TestOneMessagePerField(t *testing.T) {
	for _, tt := range []struct{ target, want string }{
		{"{name: a, provider: anthropic, model: m, api_key_env: K, temperature: 3}", "o.yaml:2: targets[0].temperature: 3: must be between 0 and 2"},
		{"{name: a, provider: anthropic, model: m, api_key_env: K, temperature: 1.5}", "o.yaml:2: targets[0].temperature: 1.5: anthropic accepts 0 to 1"},
		{"{name: a, provider: openai, model: m, api_key_env: K, endpoint: guardrail}", `o.yaml:2: targets[0].endpoint: "guardrail": provider openai supports chat, moderation`},
		{"{name: a, provider: openai_compatible, model: m, base_url: \"ftp://u:s3cret@vllm/v1\"}", "o.yaml:2: targets[0].base_url: must not carry credentials"},
		{"{name: a, provider: openai_compatible, model: m, base_url: \"https://vllm/v1?x=1\"}", "o.yaml:2: targets[0].base_url: must not carry a query"},
		{"{name: a, provider: openai_compatible, model: m, base_url: \"https://vllm:65536/v1\"}", `o.yaml:2: targets[0].base_url: "https://vllm:65536/v1": port 65536 out of range`},
	} {
		c, err := Parse("o.yaml", []byte("targets:\n  - "+tt.target+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate(false)
		var l yamlx.List
		if !errors.As(err, &l) || len(l) != 1 || !strings.HasPrefix(l[0].Error(), tt.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: got\n%v\nwant one problem, prefix %q", tt.target, err, tt.want)
		}
	}
}

// A stand-alone sim file (`driftprobe sim`) is decoded outside Parse:
// ValidateSim reports its empty policy as such, and the policies after
// it under their own indices (the decoder drops the empty one), compared
// in order with the policy before it.
func TestValidateSimEmptyPolicy(t *testing.T) {
	src := "policies:\n  - ~\n  - from_run: 0\n    thresholds: {hate: ~}\n"
	var s sim.Config
	root, err := yamlx.Decode("s.yaml", []byte(src), &s)
	if err != nil {
		t.Fatal(err)
	}
	col := &yamlx.Collector{File: "s.yaml", Root: root}
	ValidateSim(col, "", &s)
	want := "s.yaml:2: policies[0]: empty entry: a policy needs from_run and thresholds\n" +
		"s.yaml:3: policies[1].from_run: 0: run ids start at 1\n" +
		"s.yaml:4: policies[1].thresholds.hate: empty: give a threshold from 0 to 1 (above 1 never blocks), or remove the line"
	if err := col.Err(); err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	// Across an empty entry, from_run is compared with the policy before
	// it; nothing is said of the empty one's from_run.
	src = "policies:\n  - from_run: 3\n    thresholds: {hate: 0.5}\n  -\n  - from_run: 2\n    thresholds: {violence: 1.5}\n"
	s = sim.Config{}
	if root, err = yamlx.Decode("s.yaml", []byte(src), &s); err != nil {
		t.Fatal(err)
	}
	col = &yamlx.Collector{File: "s.yaml", Root: root}
	ValidateSim(col, "", &s)
	want = "s.yaml:4: policies[1]: empty entry: a policy needs from_run and thresholds\n" +
		"s.yaml:5: policies[2].from_run: 2: policies must be in increasing from_run order"
	if err := col.Err(); err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// A field written null (`~`, `null`, nothing after the colon) is the same
// as the field left out, for every field: its default applies, and no
// message quotes the zero value it decodes to.
func TestNullIsOmitted(t *testing.T) {
	const file = "testdata/valid-nulls.yaml"
	data := mustRead(t, file)
	var kept []string
	nulls := 0
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.HasSuffix(strings.TrimSpace(line), "# null") {
			nulls++
			continue
		}
		kept = append(kept, line)
	}
	if nulls < 50 {
		t.Fatalf("only %d null lines in %s", nulls, file)
	}
	load := func(name string, data []byte) *Config {
		t.Helper()
		c, err := Parse(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.Validate(false); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.File, c.root = "", nil
		return c
	}
	withNulls := load(file, data)
	omitted := load("omitted.yaml", []byte(strings.Join(kept, "")))
	if !reflect.DeepEqual(withNulls, omitted) {
		t.Errorf("nulls differ from omitted fields:\nnulls:   %+v\nomitted: %+v", withNulls, omitted)
	}
	// Spot checks: the defaults did apply.
	if withNulls.ConfirmRuns != DefaultConfirmRuns || withNulls.Concurrency != DefaultConcurrency || withNulls.Timeout.D() != DefaultTimeout ||
		withNulls.Targets[0].MaxTokens != DefaultMaxTokens || withNulls.Targets[0].Seed != nil || withNulls.Attribution.Tolerance != 0 ||
		withNulls.Attribution.MinPoints != AttributionMinPoints || withNulls.Detection.ScreenSamples != 2 {
		t.Errorf("defaults not applied: %+v", withNulls)
	}
}

// A base URL's host must be one a request can go to: an IP literal (IPv6
// in brackets) or a DNS name of valid labels (underscores allowed, one
// trailing dot allowed), for every provider and github.base_url. A host
// shaped like a key is not echoed.
func TestBaseURLHost(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	name253 := strings.Repeat(label63+".", 3) + strings.Repeat("b", 61) // 4*63 + 1 = 253
	for _, u := range []string{
		"http://localhost", "http://localhost:8080/v1", "http://127.0.0.1", "http://[::1]:8000/v1", "http://vllm:8000/v1",
		"https://myres.openai.azure.com", "http://my_host.internal", "http://localhost.", "https://api.example.com./v1",
		"http://[fe80::1%25eth0]:80", "https://xn--bcher-kva.example", "https://" + label63 + ".example", "https://" + name253,
		"http://10.0.0.1:65535", "https://API.Example.COM",
	} {
		for _, body := range []string{
			"targets:\n  - {name: a, provider: openai_compatible, model: m, base_url: \"" + u + "\"}\n",
			"targets:\n  - {name: a, provider: sim, model: m}\ngithub: {repo: o/n, base_url: \"" + u + "\"}\n",
		} {
			c, err := Parse("h.yaml", []byte(body))
			if err == nil {
				err = c.Validate(false)
			}
			if err != nil {
				t.Errorf("%s refused: %v", u, err)
			}
		}
	}
	for _, tc := range []struct{ url, want string }{
		{"https://...", `host "...": empty label`},
		{"https://.", `host ".": not a host name`},
		{"https://a..b", `host "a..b": empty label`},
		{"https://.a", `host ".a": empty label`},
		{"https://a..", `host "a..": empty label`},
		{"https://-bad-", `host "-bad-": label "-bad-" starts or ends with a hyphen`},
		{"https://a.b-.c/v1", `host "a.b-.c": label "b-" starts or ends with a hyphen`},
		{"https://" + label63 + "a.example", "longer than 63 bytes"},
		{"https://" + name253 + "b", "longer than 253 bytes"},
		{"https://bücher.example", `host "bücher.example": 'ü': a host name is ASCII letters, digits, '-' and '_' (write an internationalised name in its xn-- form)`},
		{"https://a!b.example", `'!': a host name is letters, digits, '-' and '_'`},
		{"https://999.1.1.1/v1", `host "999.1.1.1": not an IPv4 address`},
		{"https://1.2.3.4.", `host "1.2.3.4.": not an IPv4 address`},
		{"https://10.0.0", `host "10.0.0": not an IPv4 address`},
		// Not echoed: it looks like a key pasted where the host belongs.
		{"https://AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv-/v1", "not a valid host: a label starts or ends with a hyphen"},
	} {
		for _, f := range []struct{ field, body string }{
			{"h.yaml:2: targets[0].base_url: ", "targets:\n  - {name: a, provider: openai_compatible, model: m, base_url: \"" + tc.url + "\"}\n"},
			{"h.yaml:3: github.base_url: ", "targets:\n  - {name: a, provider: sim, model: m}\ngithub: {repo: o/n, base_url: \"" + tc.url + "\"}\n"},
		} {
			c, err := Parse("h.yaml", []byte(f.body))
			if err == nil {
				err = c.Validate(false)
			}
			var l yamlx.List
			if !errors.As(err, &l) || len(l) != 1 || !strings.HasPrefix(l[0].Error(), f.field) || !strings.Contains(l[0].Error(), tc.want) {
				t.Errorf("%s: got %v, want one problem %q…%q", tc.url, err, f.field, tc.want)
			} else if strings.HasPrefix(tc.want, "not a valid host") && strings.Contains(err.Error(), "AIza") {
				t.Errorf("%s: echoed: %v", tc.url, err)
			}
		}
	}
}

// Keys supplied by merge keys (`<<`) follow YAML's merge semantics in
// defaults and validation: a key written in the mapping wins over a
// merged one, earlier mappings of a merge list over later ones, a merged
// alias counts where it is merged (and is reported at its anchor's line),
// and a merged null is left out.
func TestMergeKeys(t *testing.T) {
	load := func(src string) (*Config, error) {
		t.Helper()
		c, err := Parse("m.yaml", []byte(src))
		if err != nil {
			return nil, err
		}
		return c, c.Validate(false)
	}
	const target = "targets:\n  - name: a\n    provider: sim\n    model: m\n"
	for _, tc := range []struct {
		src       string
		maxTokens int
	}{
		{target + "    max_tokens: 5\n    <<: {max_tokens: 0}\n", 5},
		{target + "    <<: [{max_tokens: 7}, {max_tokens: 0}]\n", 7},
		{target + "    <<: {<<: {max_tokens: 0}, max_tokens: 9}\n", 9},
		{target + "    <<: {max_tokens: ~}\n", DefaultMaxTokens},
		{target + "    <<: {max_tokens: 8}\n", 8},
	} {
		c, err := load(tc.src)
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		if got := c.Targets[0].MaxTokens; got != tc.maxTokens {
			t.Errorf("%q: max_tokens = %d, want %d", tc.src, got, tc.maxTokens)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{target + "    <<: [{max_tokens: 0}, {max_tokens: 7}]\n", "m.yaml:5: targets[0].max_tokens: 0: must be at least 1"},
		{target + "    <<: {<<: {max_tokens: 0}}\n", "m.yaml:5: targets[0].max_tokens: 0: must be at least 1"},
		{target + "    breaker: {<<: {cooldown: 0s}}\n", "m.yaml:5: targets[0].breaker.cooldown: 0s: must be at least 1s (omit it for the default 30s)"},
		{"detection:\n  <<: {window_runs: 0}\n" + target, "m.yaml:2: detection.window_runs: 0: must be at least 1 (omit it for 3)"},
		{"<<: {schedule: \"\"}\n" + target, `m.yaml:1: schedule: "": must not be empty`},
		// The anchored mapping is merged into the second target too: both
		// are refused, at the line the 0 is written on.
		{"targets:\n  - &a\n    name: a\n    provider: sim\n    model: m\n    max_tokens: 0\n  - <<: *a\n    name: b\n",
			"m.yaml:6: targets[0].max_tokens: 0: must be at least 1 (omit it for the default 64)\n" +
				"m.yaml:6: targets[1].max_tokens: 0: must be at least 1 (omit it for the default 64)"},
	} {
		_, err := load(tc.src)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
	// Where locates a merged value at its line.
	c, err := load("database: x.db\n" + target + "    <<:\n      base_url: http://127.0.0.1:9/v1\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Where("targets[0].base_url"); got != "m.yaml:7: " {
		t.Errorf("Where = %q, want m.yaml:7: ", got)
	}
}

// An explicit "" is refused only where a default would stand for it:
// providers without a default key variable read an empty api_key_env as
// no key (no Authorization header), and a provider requiring a base_url
// says so once. Every empty field gets one message, not also the value's
// own check (a schedule, a label name).
func TestEmptyStrings(t *testing.T) {
	for _, p := range []string{"openai_compatible", "bedrock", "sim"} {
		body := "targets:\n  - {name: a, provider: " + p + ", model: m, api_key_env: \"\""
		switch p {
		case "openai_compatible":
			body += ", base_url: \"http://vllm:8000/v1\""
		case "bedrock":
			body += ", options: {region: us-east-1}"
		}
		c, err := Parse("e.yaml", []byte(body+"}\n"))
		if err == nil {
			err = c.Validate(false)
		}
		if err != nil {
			t.Errorf("%s: api_key_env \"\" refused: %v", p, err)
		} else if c.Targets[0].APIKeyEnv != "" {
			t.Errorf("%s: api_key_env = %q, want none", p, c.Targets[0].APIKeyEnv)
		}
	}
	src := "schedule: ''\ntargets:\n  - {name: a, provider: azure, model: m, base_url: '', api_key_env: K}\n  - {name: b, provider: sim, model: m, base_url: '', endpoint: ''}\n" +
		"attribution: {prometheus: 'http://p:9090', query: q, target_label: '', category_label: ''}\n"
	c, err := Parse("e.yaml", []byte(src))
	if err == nil {
		err = c.Validate(false)
	}
	// In file order: on line 4, base_url is written before endpoint.
	want := `e.yaml:1: schedule: "": must not be empty (omit the field for its default "@every 1h")
e.yaml:3: targets[0].base_url: required for azure: the resource endpoint, e.g. https://NAME.openai.azure.com
e.yaml:4: targets[1].base_url: "": must not be empty (omit the field for the embedded simulator)
e.yaml:4: targets[1].endpoint: "": must not be empty (omit the field for its default chat)
e.yaml:5: attribution.target_label: "": must not be empty (omit the field for its default target)
e.yaml:5: attribution.category_label: "": must not be empty (omit the field for its default category)`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// A refused attribution.prometheus URL holding a credential is not
// repeated in the error.
func TestPrometheusURLCredentialNotRepeated(t *testing.T) {
	_, err := Load("testdata/invalid-attribution-url-credential.yaml", false)
	if err == nil || strings.Contains(err.Error(), "PROMSECRET99") {
		t.Fatalf("Load: %v, want a refusal without the credential", err)
	}
}
