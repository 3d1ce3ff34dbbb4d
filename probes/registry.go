package probes

import (
	"errors"
	"fmt"
	"net/url"
	pathpkg "path"
	"sort"
	"strings"
	"sync"
)

// Target is the provider-independent description of a configured target that
// a Factory receives. APIKey holds the resolved secret (from the environment
// variable named in the config); probers must never log or store it.
type Target struct {
	Name        string
	Provider    string
	Model       string
	Endpoint    string // "chat" (default), "moderation", "guardrail"
	BaseURL     string
	APIKey      string
	MaxTokens   int
	Temperature float64
	Seed        *int64
	Options     map[string]string // provider-specific settings (api_version, region, guardrail_id, ...)
	Sim         any               // the sim block of the config, for the sim provider
}

// Factory builds a Prober for a target.
type Factory func(t Target) (Prober, error)

// Info describes a provider for `driftprobe providers`.
type Info struct {
	Name      string   `json:"name"`
	Endpoints []string `json:"endpoints"`
	KeyEnv    string   `json:"key_env,omitempty"` // conventional key variable
	NeedsKey  bool     `json:"needs_key"`         // a key is required
	Signals   []string `json:"signals"`           // the wire signals read
	Input     bool     `json:"input_stage"`       // reports input-stage blocks
	Output    bool     `json:"output_stage"`      // reports output-stage blocks
	Scores    bool     `json:"scores"`            // reports per-category scores
	RequestID string   `json:"request_id"`        // where the request id comes from
	ModelFP   string   `json:"model_fingerprint"` // where the model fingerprint comes from
	Options   []string `json:"options,omitempty"` // accepted keys of a target's options block

	// CredentialEnv lists the environment variables the provider reads
	// credentials from by itself when a target names no api_key_env
	// (Bedrock: the SigV4 access key id and secret key). Only required
	// variables are listed, never optional ones (a session token): when
	// keys are needed, config validation reports each one unset or blank
	// as a problem of the target, so a run fails before it starts rather
	// than when the prober is built.
	CredentialEnv []string `json:"credential_env,omitempty"`
	// CredentialAlt names, for that problem's message, what a target may
	// name in api_key_env instead of setting CredentialEnv (e.g. "an
	// Amazon Bedrock API key"). Optional.
	CredentialAlt string `json:"-"`

	// Check validates provider-specific target settings without building
	// anything. Optional.
	Check func(t Target) []FieldError `json:"-"`
	// Warn returns what is valid in a target's settings but probably a
	// mistake (a base_url ending in the version segment the adapter
	// appends itself: DoubledVersion; in a full endpoint: PastedEndpoint;
	// an openai base_url without /v1: MissingVersion). Config validation
	// reports each one as a warning (config check, run and serve), never
	// as a problem. Optional.
	Warn func(t Target) []FieldError `json:"-"`
}

// FieldError is a problem with one field of a target's configuration,
// relative to the target (e.g. "options.api_version").
type FieldError struct {
	Field string
	Msg   string
}

var (
	regMu     sync.RWMutex
	factories = map[string]Factory{}
	infos     = map[string]Info{}
)

// ErrUnknownProvider is returned by New for an unregistered provider name.
var ErrUnknownProvider = errors.New("unknown provider")

// Register makes a provider available by name. It panics on a duplicate
// name; call it from a provider package's init.
func Register(info Info, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := factories[info.Name]; dup {
		panic("probes: duplicate provider " + info.Name)
	}
	factories[info.Name] = f
	infos[info.Name] = info
}

// New builds the Prober for t.
func New(t Target) (Prober, error) {
	regMu.RLock()
	f, ok := factories[t.Provider]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProvider, t.Provider)
	}
	return f(t)
}

// Lookup returns the Info of a registered provider.
func Lookup(name string) (Info, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	i, ok := infos[name]
	return i, ok
}

// Providers returns every registered provider, sorted by name.
func Providers() []Info {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Info, 0, len(infos))
	for _, i := range infos {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// basePath returns the path of base without trailing slashes; ok is false
// when base is empty or does not parse (the base_url checks refuse it).
func basePath(base string) (p string, ok bool) {
	u, err := url.Parse(base)
	if err != nil || base == "" {
		return "", false
	}
	return strings.TrimRight(u.Path, "/"), true
}

// DoubledVersion returns a warning (field base_url) when the path of base
// ends in one of versions, a version segment the adapter puts before the
// path it appends (path, starting with "/"): the request would go to
// /…/v1/v1/messages and every probe would be a 404. provider names the
// adapter and root is the API root to suggest (base_url without the
// version). A base that does not parse, or does not end so, gives none.
func DoubledVersion(base, path, provider, root string, versions ...string) []FieldError {
	p, ok := basePath(base)
	if !ok {
		return nil
	}
	last := p[strings.LastIndex(p, "/")+1:]
	for _, v := range versions {
		if last != "" && strings.EqualFold(last, v) {
			return []FieldError{{Field: "base_url", Msg: fmt.Sprintf(
				"ends in /%s, but the %s adapter appends the API version itself: requests would go to %s%s (every probe a 404 client_error); drop the trailing /%s (base_url is the API root, e.g. %s)",
				last, provider, p, path, last, root)}}
		}
	}
	return nil
}

// PastedEndpoint returns a warning (field base_url) when the path of base
// ends in an API endpoint rather than at the API root: a full endpoint URL
// pasted as base_url, to which the adapter would append its own path
// (path, starting with "/"), so every probe would be a 404. endpoints are
// the endings recognised, each starting with "/", most specific first;
// each segment of one is matched with path.Match, case-insensitively, so
// "/v1*/models/*" matches /v1beta/models/gemini-2.0-flash:generateContent.
// The first that matches is the one the warning tells to drop; provider
// names the adapter and root is the API root to suggest. A base that does
// not parse, or does not end so, gives none.
func PastedEndpoint(base, path, provider, root string, endpoints ...string) []FieldError {
	p, ok := basePath(base)
	if !ok {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, e := range endpoints {
		pat := strings.Split(strings.TrimPrefix(e, "/"), "/")
		if p == "" || len(pat) > len(segs) {
			continue
		}
		tail := segs[len(segs)-len(pat):]
		matched := true
		for i, ps := range pat {
			if ok, err := pathpkg.Match(strings.ToLower(ps), strings.ToLower(tail[i])); err != nil || !ok {
				matched = false
				break
			}
		}
		if matched {
			end := "/" + strings.Join(tail, "/")
			return []FieldError{{Field: "base_url", Msg: fmt.Sprintf(
				"ends in %s, an endpoint, but base_url is the API root the %s adapter appends %s to: requests would go to %s%s (every probe a 404 client_error); drop the trailing %s (e.g. %s)",
				end, provider, path, p, path, end, root)}}
		}
	}
	return nil
}

// MissingVersion returns a warning (field base_url) when the path of base
// does not end in version, the segment an adapter that appends only the
// endpoint (path) needs its base_url to end in: the request would go to
// /chat/completions instead of /v1/chat/completions and every probe would
// be a 404 (unless a gateway serves the API at that root, as some do:
// hence a warning). provider names the adapter and root is the API root
// to suggest. A base that is empty or does not parse gives none.
func MissingVersion(base, path, provider, root, version string) []FieldError {
	p, ok := basePath(base)
	if !ok {
		return nil
	}
	if strings.EqualFold(p[strings.LastIndex(p, "/")+1:], version) {
		return nil
	}
	return []FieldError{{Field: "base_url", Msg: fmt.Sprintf(
		"does not end in /%s, but the %s adapter appends only %s to base_url: requests would go to %s%s (every probe a 404 client_error); end it in /%s (base_url is the API root with the version, e.g. %s), unless a gateway serves the API at this root",
		version, provider, path, p, path, version, root)}}
}
