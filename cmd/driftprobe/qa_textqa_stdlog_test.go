package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The standard library logger's redaction (net/http logs the bytes an
// upstream sent past its Content-Length) knows every credential a target
// sends, not only an api_key_env key: a Bedrock target signing with SigV4
// sends the session token in X-Amz-Security-Token, and AWS's signature
// errors echo it (the canonical request). Here the surplus past the
// announced length echoes the token and the secret key.
func TestSigV4SecretsNeverReachStderr(t *testing.T) {
	const (
		token  = "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKEN0123456789abcdefQA"
		secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYqa"
	)
	ln := surplusServer(t, func(req *http.Request) (string, string, string, int) {
		tok := req.Header.Get("X-Amz-Security-Token")
		body := `{"message":"The request signature we calculated does not match. x-amz-security-token:` + tok + ` (secret ` + secret + `)"}`
		return "403 Forbidden", "Content-Type: application/json\r\nx-amzn-ErrorType: InvalidSignatureException\r\n", body, strings.Index(body, tok)
	})
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "corpus"), 0o755)
	os.WriteFile(filepath.Join(dir, "corpus", "corpus.yaml"), []byte(`name: qa
version: "1"
probes:
  - {id: p1, prompt: "What is the capital of France?", tags: [], expect: allow, role: benign_control}
`), 0o644)
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`database: %s
corpus: %s
targets:
  - {name: b, provider: bedrock, model: anthropic.claude-3-haiku-20240307-v1:0, options: {region: us-east-1}, base_url: "http://%s", max_attempts: 1}
`, filepath.Join(dir, "d.db"), filepath.Join(dir, "corpus"), ln.Addr())), 0o644)
	// net/http logs the surplus only if its read loop peeks at the idle
	// connection before the run closes it, a race a loaded machine can
	// lose: a few runs, every one checked, until one shows the surplus.
	for try := 1; ; try++ {
		stdout, stderr, code := runProc(t, []string{"AWS_ACCESS_KEY_ID=AKIAQAEXAMPLE0000001", "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_SESSION_TOKEN=" + token},
			"run", "--config", cfg, "--json", "--no-progress")
		for _, s := range []string{token, secret} {
			if strings.Contains(stdout+stderr, s) || strings.Contains(stdout+stderr, s[:20]) {
				t.Fatalf("a SigV4 credential reached the output unredacted:\n%s", stderr)
			}
		}
		if strings.Contains(stderr, "Unsolicited response") {
			return
		}
		if try == 5 {
			t.Fatalf("exit %d: in %d runs the transport logged no surplus; the test shows nothing\n%s", code, try, stderr)
		}
	}
}

// The GitHub token is one of the credentials the standard library's
// logger redacts: a GitHub Enterprise server or a proxy before it that
// sends bytes past its Content-Length echoing the Authorization header
// has them logged by net/http ("Unsolicited response ...").
func TestGitHubTokenNeverReachesStderr(t *testing.T) {
	const token = "ghp_QAtextqaSTDERRleak0123456789abcdefXY"
	ln := surplusServer(t, func(req *http.Request) (string, string, string, int) {
		auth := req.Header.Get("Authorization")
		body := `{"message":"Server Error","echo":"` + auth + `"}`
		return "503 Service Unavailable", "Content-Type: application/json\r\nX-GitHub-Request-Id: 0D3A:1BCC6E\r\n", body, strings.Index(body, auth)
	})
	dir, db, withGH, _ := outboxConfigs(t)
	for i := 0; i < 4; i++ {
		runIn(t, "run", "--config", withGH, "--db", db, "--no-progress")
	}
	gh := filepath.Join(dir, "gh2.yaml")
	os.WriteFile(gh, []byte("targets:\n  - name: sim-a\n    provider: sim\n    model: sim-large\n    sim: {policies: [{from_run: 3, thresholds: {violence: 0.01}}]}\n"+
		"github: {repo: o/r, base_url: \"http://"+ln.Addr().String()+"/\"}\n"), 0o644)
	// The failed deliveries' wait, recorded for the closed port, is cleared:
	// the row is due.
	if _, stderr, code := runIn(t, "outbox", "--clear-holds", "--config", gh, "--db", db); code != 0 {
		t.Fatalf("outbox --clear-holds: exit %d: %s", code, stderr)
	}
	stdout, stderr, _ := runProc(t, []string{"GITHUB_TOKEN=" + token}, "outbox", "--send", "--config", gh, "--db", db)
	if !strings.Contains(stderr, "Unsolicited response") {
		t.Fatalf("the transport logged no surplus; the test shows nothing\n%s%s", stdout, stderr)
	}
	if strings.Contains(stdout+stderr, token) || strings.Contains(stdout+stderr, token[:20]) {
		t.Errorf("the GitHub token reached the output unredacted:\n%s", stderr)
	}
}
