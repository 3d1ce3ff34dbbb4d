package app_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/runner"
)

const (
	awsKeyID  = "AWS_ACCESS_KEY_ID"
	awsSecret = "AWS_SECRET_ACCESS_KEY"
	awsToken  = "AWS_SESSION_TOKEN"
	// ocKey is the api_key_env of the Bedrock API-key variant below.
	ocKey = "DRIFTPROBE_TEST_OC_KEY"
)

// unsetEnv removes each variable for the test (restored after it).
func unsetEnv(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		t.Setenv(n, "") // registers the restore
		os.Unsetenv(n)
	}
}

// writeConfig writes body to a config file in a temporary directory.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	bedrockSigV4 = "database: x.db\ntargets:\n  - name: t1\n    provider: bedrock\n    model: anthropic.claude-3-haiku-20240307-v1:0\n    options: {region: us-east-1}\n"
	bedrockKey   = "database: x.db\ntargets:\n  - name: t1\n    provider: bedrock\n    model: anthropic.claude-3-haiku-20240307-v1:0\n    api_key_env: " + ocKey + "\n    options: {region: us-east-1}\n"
	converseEnd  = `{"output":{"message":{"role":"assistant","content":[{"text":"Paris."}]}},"stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":2,"totalTokens":7},"metrics":{"latencyMs":100}}`
)

var renderProbe = probes.Probe{ID: "p1", Messages: []probes.Message{{Role: "user", Content: "What is the capital of France?"}}}

// build loads the config without needing keys, then builds its targets.
func build(t *testing.T, cfg string, fn func(*config.Config) ([]*runner.Target, func(), error)) ([]*runner.Target, error) {
	t.Helper()
	c, err := app.LoadConfig(writeConfig(t, cfg), "", false)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	targets, closeT, err := fn(c)
	if err == nil {
		t.Cleanup(closeT)
	}
	return targets, err
}

// TestBuildRenderTargetsBedrockWithoutCredentials: replay and plan
// --no-keys build Bedrock targets on a machine with no AWS credentials (and
// no api_key_env variable); they render the bytes a credentialed build
// renders and classify. BuildTargets, which sends, still fails early with a
// usage error naming the right variable(s).
func TestBuildRenderTargetsBedrockWithoutCredentials(t *testing.T) {
	// What a machine with credentials renders.
	t.Setenv(awsKeyID, "AKIDEXAMPLE")
	t.Setenv(awsSecret, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	withCreds, err := build(t, bedrockSigV4, app.BuildTargets)
	if err != nil {
		t.Fatalf("BuildTargets with credentials: %v", err)
	}
	want, err := withCreds[0].Prober.Render(renderProbe)
	if err != nil {
		t.Fatal(err)
	}
	wantRes := withCreds[0].Prober.Classify(want, &probes.Response{Status: 200, Body: []byte(converseEnd)})

	unsetEnv(t, awsKeyID, awsSecret, awsToken, ocKey)
	for _, cfg := range []struct{ name, body string }{{"sigv4", bedrockSigV4}, {"api_key_env", bedrockKey}} {
		t.Run(cfg.name, func(t *testing.T) {
			targets, err := build(t, cfg.body, app.BuildRenderTargets)
			if err != nil {
				t.Fatalf("BuildRenderTargets without credentials: %v", err)
			}
			pr := targets[0].Prober
			got, err := pr.Render(renderProbe)
			if err != nil {
				t.Fatal(err)
			}
			if got.SHA256() != want.SHA256() || string(got.Body) != string(want.Body) || got.URL != want.URL {
				t.Errorf("render without credentials differs: %s %s\n%s\nwant %s %s\n%s", got.URL, got.SHA256(), got.Body, want.URL, want.SHA256(), want.Body)
			}
			res := runner.Classify(pr, got, &probes.Response{Status: 200, Body: []byte(converseEnd)})
			if !reflect.DeepEqual(res, wantRes) || res.Class != probes.Allowed {
				t.Errorf("classify without credentials: %+v, want %+v", res, wantRes)
			}
			// Built for rendering, it must not send.
			if a, ok := pr.(probes.Authorizer); ok {
				hr, _ := http.NewRequest(got.Method, got.URL, strings.NewReader(string(got.Body)))
				if err := a.Authorize(context.Background(), hr); err == nil || hr.Header.Get("Authorization") != "" {
					t.Errorf("a prober built without credentials authorized a request (err %v, headers %v)", err, hr.Header)
				}
			}
		})
	}

	// Sending needs them: a usage error (exit 2) naming what is missing.
	for _, c := range []struct {
		name, body    string
		want, notWant []string
	}{
		{"sigv4", bedrockSigV4, []string{"t1", awsKeyID, awsSecret}, nil},
		{"api_key_env", bedrockKey, []string{"t1", ocKey}, []string{awsKeyID, awsSecret}},
	} {
		t.Run("send_"+c.name, func(t *testing.T) {
			_, err := build(t, c.body, app.BuildTargets)
			if err == nil || !app.IsUsage(err) {
				t.Fatalf("BuildTargets without credentials: %v, want a usage error", err)
			}
			t.Logf("BuildTargets: %v", err)
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
			for _, s := range c.notWant {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q names %s, which this target does not use", err, s)
				}
			}
		})
	}

	// The API-key variant sends with its key alone, no AWS variables.
	t.Setenv(ocKey, "ABSKbedrockapikeyEXAMPLE")
	if _, err := build(t, bedrockKey, app.BuildTargets); err != nil {
		t.Errorf("BuildTargets with %s set: %v", ocKey, err)
	}
}
