package azure

import (
	"bytes"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// v1Target is a target of Azure OpenAI's v1 API: a base_url ending in
// /openai/v1 and no api_version.
func v1Target(base string) probes.Target {
	tg := target(base)
	tg.Options = nil
	return tg
}

// A base_url ending in /openai/v1 selects the v1 API: POST
// {base}/chat/completions with the deployment as the body's model and no
// api-version; the request bytes are pinned.
func TestV1Golden(t *testing.T) {
	p, err := New(v1Target("https://example-resource.openai.azure.com/openai/v1/"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	probestest.Golden(t, "azure_v1_chat", req)
}

func TestV1PathAndAuth(t *testing.T) {
	const want = "/openai/v1/chat/completions"
	for _, base := range []string{"https://r.openai.azure.com/openai/v1", "https://r.openai.azure.com/openai/v1/"} {
		p, err := New(v1Target(base))
		if err != nil {
			t.Fatal(err)
		}
		req, err := p.Render(probestest.Probe)
		if err != nil {
			t.Fatal(err)
		}
		if req.Path != want || req.URL != "https://r.openai.azure.com"+want {
			t.Errorf("base %s: path %q url %q", base, req.Path, req.URL)
		}
		if !bytes.HasPrefix(req.Body, []byte(`{"model":"gpt-4o-prod",`)) {
			t.Errorf("body does not name the deployment as its model: %s", req.Body)
		}
	}
	// Served: the same content-filter dialect is read, the key in api-key.
	const violence = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}`
	srv := probestest.NewReplay(t, probestest.Case{Body: answered("content_filter", "", violence, safeFilters)})
	p, err := New(v1Target(srv.URL + "/openai/v1"))
	if err != nil {
		t.Fatal(err)
	}
	req, got := probestest.Do(t, p, probestest.Probe)
	last := srv.Last()
	if last.Path != want || req.Path != want {
		t.Errorf("server got %q, request path %q", last.Path, req.Path)
	}
	if last.Header.Get("api-key") != secret || last.Header.Get("Authorization") != "" {
		t.Errorf("auth headers: %v", last.Header)
	}
	if got.Class != probes.BlockedOutput {
		t.Errorf("class %s, want %s", got.Class, probes.BlockedOutput)
	}
}

// options.api_version with the v1 API is refused (it would be ignored);
// the deployments API keeps taking it.
func TestV1APIVersionRefused(t *testing.T) {
	tg := target("https://r.openai.azure.com/openai/v1")
	errs := Check(tg)
	if len(errs) != 1 || errs[0].Field != "options.api_version" || !strings.Contains(errs[0].Msg, "takes no api-version") {
		t.Fatalf("errors %v", errs)
	}
	if _, err := New(tg); err == nil {
		t.Error("New accepted api_version with the v1 API")
	}
	if errs := Check(target("https://r.openai.azure.com/openai")); len(errs) != 0 {
		t.Errorf("deployments API: %v", errs)
	}
}

// The path a base_url ends in is read in any case: /OpenAI/V1 selects the
// v1 API (no api-version, the base kept as written), and a resource
// endpoint ending in /OpenAI is not doubled. Before, both rendered a path
// that answers 404 to every probe.
func TestBaseURLPathAnyCase(t *testing.T) {
	p, err := New(v1Target("https://r.openai.azure.com/OpenAI/V1/"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := p.Render(probestest.Probe)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://r.openai.azure.com/OpenAI/V1/chat/completions"; req.URL != want {
		t.Errorf("v1 in capitals: url %q, want %q", req.URL, want)
	}
	p, err = New(target("https://r.openai.azure.com/OpenAI"))
	if err != nil {
		t.Fatal(err)
	}
	if req, err = p.Render(probestest.Probe); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(req.URL, "https://r.openai.azure.com/openai/deployments/") {
		t.Errorf("resource endpoint ending in /OpenAI: url %q, want the deployments path once", req.URL)
	}
}

// A pasted legacy completions endpoint (…/openai/deployments/D/completions)
// is fixed in one step: the warning says to drop the whole deployments
// path, not only /completions, which left …/openai/deployments/D and a
// second warning.
func TestWarnPastedDeploymentCompletionsInOneStep(t *testing.T) {
	w := Warn(target("https://r.openai.azure.com/openai/deployments/D/completions"))
	if len(w) != 1 || !strings.Contains(w[0].Msg, "drop the trailing /openai/deployments/D/completions ") {
		t.Fatalf("warnings %v, want one saying to drop /openai/deployments/D/completions", w)
	}
	fixed := strings.TrimSuffix("https://r.openai.azure.com/openai/deployments/D/completions", "/openai/deployments/D/completions")
	if w := Warn(target(fixed)); len(w) != 0 {
		t.Fatalf("after the fix it names: %v", w)
	}
}
