// Package gemini is the driftprobe adapter for Google's generateContent API,
// in two dialects chosen by the "api" option:
//
//   - "gemini" (default): the Gemini Developer API,
//     POST {base}/v1beta/models/{model}:generateContent, base default
//     https://generativelanguage.googleapis.com, key sent by Authorize in the
//     x-goog-api-key header (never in the query string).
//   - "vertex": Vertex AI, POST {base}/v1/projects/{project}/locations/
//     {location}/publishers/google/models/{model}:generateContent, base
//     default https://{location}-aiplatform.googleapis.com (or
//     https://aiplatform.googleapis.com for location "global"), with the key
//     variable holding an OAuth access token sent as "Authorization: Bearer".
//
// What it reads:
//   - promptFeedback.blockReason (SAFETY, OTHER, BLOCKLIST, PROHIBITED_CONTENT,
//     IMAGE_SAFETY, SPII, MODEL_ARMOR, or an unknown value) is an input-stage
//     block (blocked_input), reason = blockReason, blockReasonMessage kept as
//     the Message. Categories come from promptFeedback.safetyRatings with
//     blocked:true; for SAFETY with no rating flagged blocked, the ratings at
//     probability MEDIUM or HIGH are taken as the cause (Gemini's default
//     threshold blocks medium and above). A non-SAFETY reason with no flagged
//     rating adds one fired signal named "blockReason:<REASON>" (SPII→privacy,
//     anything else→other), so the block has a category to compare.
//   - With no candidates and no blockReason (or the unused
//     BLOCK_REASON_UNSPECIFIED / BLOCKED_REASON_UNSPECIFIED), promptFeedback
//     is still a block only if it says so: a blockReasonMessage or a prompt
//     rating with blocked:true (reason "block_reason_missing", or the
//     unspecified value; no fallback category). Otherwise — ratings only, an
//     empty promptFeedback — nothing was generated and nothing blocked: it
//     is transient "no_candidates", like an answer with no promptFeedback.
//   - candidates[0].finishReason SAFETY, PROHIBITED_CONTENT, BLOCKLIST, SPII,
//     IMAGE_SAFETY, IMAGE_PROHIBITED_CONTENT is an output-stage block
//     (blocked_output) read the same way from the candidate's safetyRatings
//     (fallback signal named "finishReason:<REASON>").
//   - RECITATION (and IMAGE_RECITATION) is not a policy verdict: the answer was
//     withheld because it resembled a copyrighted source, which says nothing
//     about the provider's safety policy. It is classified allowed with
//     Reason "RECITATION" so it never counts as a block nor as a flip in
//     composition, while the reason stays recorded.
//   - STOP, MAX_TOKENS, OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL and the other
//     documented non-policy reasons, with answer text (thought parts do not
//     count), are allowed with the reason recorded (a short plain-text
//     refusal in the text is a heuristic model_refusal); an unknown
//     finishReason with text is allowed and recorded in Result.Unknown.
//   - A candidate with no text (none, or only white space or thoughts) and a
//     non-policy finishReason is a failed generation, not a verdict:
//     transient "empty_candidate:<REASON>" with finishMessage kept (OTHER
//     "Model failed to generate content due to internal error.", the
//     occasional empty STOP, LANGUAGE, MALFORMED_FUNCTION_CALL, an unknown
//     reason), or "empty_candidate" with no finishReason either. The
//     exceptions are RECITATION (above) and MAX_TOKENS: a thinking model can
//     spend the whole budget before any text, and a provider that ran out of
//     tokens did not block, so MAX_TOKENS with no text is still allowed.
//   - safetyRatings are kept as Signals: prompt ratings under the raw name
//     "prompt.<CATEGORY>", candidate ratings under "<CATEGORY>", with Severity
//     = probability and Score = probabilityScore. Vertex also reports
//     severity and severityScore; those go in a second signal per rating named
//     "<raw>:severity" (same category and Fired), so both numbers are kept
//     under stable names. Categories: HATE_SPEECH→hate,
//     HARASSMENT→harassment, SEXUALLY_EXPLICIT→sexual, DANGEROUS_CONTENT→
//     illicit (Google's "dangerous content" is content facilitating harmful
//     acts: the closest normalized category), JAILBREAK→jailbreak,
//     CIVIC_INTEGRITY→other, anything unknown→other (recorded in Unknown).
//   - modelVersion is both the model id and the model fingerprint: it is the
//     only model identity Google returns, and it changes when the serving
//     model behind an alias changes. Request id: the x-goog-request-id
//     header when present, else the body's responseId. Tokens:
//     usageMetadata.promptTokenCount, and candidatesTokenCount +
//     thoughtsTokenCount (thinking tokens are billed as output). These
//     bookkeeping fields, finishMessage, blockReasonMessage, rating scores
//     and error.code are read leniently: a wrong type is noted in Unknown
//     ("modelVersion:bad_type", "usageMetadata.promptTokenCount:bad_type",
//     ...) and never makes a block malformed.
//   - A streamed answer (never requested, but a proxy may answer with
//     one), as a server-sent event stream (streamGenerateContent?alt=sse)
//     or as a JSON array of chunks (streamGenerateContent without alt=sse),
//     is merged into the answer it stands for: candidates[0] content parts
//     concatenated, every other field from the last chunk holding it (so
//     the last chunk's finishReason and ratings decide). A stream that ends
//     without a finishReason, prompt block or error is transient
//     "incomplete_stream"; a cut one is "truncated_response". An array
//     whose first element carries an "error" is a wrapped error (below),
//     read from that element.
//   - Errors {error:{code,message,status,details}} (also wrapped in a JSON
//     array, as Google sometimes sends): 429 RESOURCE_EXHAUSTED, 500 INTERNAL,
//     503 UNAVAILABLE, 504 and other 5xx are transient, with the wait from
//     Retry-After or a google.rpc.RetryInfo retryDelay, except a 429 on a
//     quota that will not clear within a run (a limit of 0, or a per-day
//     quota used up: see readDetails), a client error
//     "...:quota_exhausted" like OpenAI's insufficient_quota; 400, 401, 403, 404
//     are client errors unless the error says the key, project or account
//     was suspended (ErrorInfo reason CONSUMER_SUSPENDED, "Your project has
//     been denied access", or wire.IsAbuse), which is an account-stage
//     abuse_block.
//
// No safetySettings are sent: what is measured is the provider's default
// policy for the model, which is what changes under a silent policy update.
// Credentials never enter the rendered request, and anything shaped like a
// key is redacted from the provider messages kept (Google's suspension
// errors quote the key).
package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// Option keys and dialects.
const (
	OptAPI      = "api"
	OptProject  = "project"
	OptLocation = "location"

	APIGemini = "gemini"
	APIVertex = "vertex"

	// DefaultBaseURL is the Gemini Developer API root.
	DefaultBaseURL = "https://generativelanguage.googleapis.com"
)

func init() {
	probes.Register(probes.Info{
		Name:      "gemini",
		Endpoints: []string{"chat"},
		KeyEnv:    "GEMINI_API_KEY",
		NeedsKey:  true,
		Signals: []string{
			"promptFeedback.blockReason + blockReasonMessage + promptFeedback.safetyRatings (input)",
			"candidates[0].finishReason SAFETY/PROHIBITED_CONTENT/BLOCKLIST/SPII/IMAGE_SAFETY + safetyRatings[].blocked (output)",
			"safetyRatings[] probability/probabilityScore, Vertex severity/severityScore (scores)",
			"finishReason RECITATION recorded as reason, not a block",
			"plain-text refusal in candidates[0].content.parts[].text (heuristic)",
			"403 PERMISSION_DENIED with ErrorInfo CONSUMER_SUSPENDED or a suspension message (abuse)",
			"429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE with Retry-After / RetryInfo.retryDelay",
			"429 on a quota of 0 (ErrorInfo quota_limit_value, QuotaFailure quotaValue) or a per-day QuotaFailure: client_error quota_exhausted, not retried",
		},
		Input: true, Output: true, Scores: true,
		RequestID: "x-goog-request-id header (fallback: body responseId)",
		ModelFP:   "modelVersion",
		Options:   []string{OptAPI, OptProject, OptLocation},
		Check:     Check,
		Warn:      Warn,
	}, New)
}

// segmentRE bounds project and location values: they become path segments.
var segmentRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Check validates the Gemini-specific settings of t: the api dialect, and
// for vertex a project and a location.
func Check(t probes.Target) []probes.FieldError {
	var errs []probes.FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, probes.FieldError{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	if t.Endpoint != "" && t.Endpoint != "chat" {
		add("endpoint", "%q: gemini supports chat", t.Endpoint)
	}
	api := t.Options[OptAPI]
	switch api {
	case "", APIGemini:
		for _, k := range []string{OptProject, OptLocation} {
			if _, set := t.Options[k]; set {
				add("options."+k, "only used with api: vertex")
			}
		}
	case APIVertex:
		for _, k := range []string{OptProject, OptLocation} {
			v, set := t.Options[k]
			switch {
			case !set || v == "":
				add("options."+k, "required with api: vertex")
			case !segmentRE.MatchString(v):
				add("options."+k, "%q: letters, digits, '.', '_' and '-' only", v)
			}
		}
	default:
		add("options."+OptAPI, "%q: want gemini or vertex", api)
	}
	if t.Temperature < 0 || t.Temperature > 2 {
		add("temperature", "%v: gemini accepts 0 to 2", t.Temperature)
	}
	return errs
}

// Warn reports a base_url ending in a version segment (/v1beta, /v1,
// /v1alpha; for vertex /v1, /v1beta1): the adapter appends the version
// itself (/v1beta/models/… or /v1/projects/…), so the path would hold two;
// or ending in an endpoint (…/models/MODEL:generateContent, a method
// such as :streamGenerateContent, …/models/MODEL, /models, for vertex
// also …/projects/P/locations/L), to which the adapter would append its
// whole path.
func Warn(t probes.Target) []probes.FieldError {
	model := url.PathEscape(strings.TrimPrefix(t.Model, "models/"))
	if t.Options[OptAPI] == APIVertex {
		root := "https://LOCATION-aiplatform.googleapis.com"
		if w := probes.PastedEndpoint(t.BaseURL, endpointPath(t), "gemini (api: vertex)", root,
			"/v1*/projects/*/locations/*/publishers/*/models/*", "/v1*/projects/*/locations/*/publishers/*/models",
			"/v1*/projects/*/locations/*", "/v1*/projects/*", "/models/*", "/*:*"); w != nil {
			return w
		}
		return probes.DoubledVersion(t.BaseURL, "/v1/projects/…/models/"+model+":generateContent", "gemini (api: vertex)", root, "v1", "v1beta1")
	}
	if w := probes.PastedEndpoint(t.BaseURL, endpointPath(t), "gemini", DefaultBaseURL,
		"/v1*/models/*", "/v1*/models", "/models/*", "/*:*"); w != nil {
		return w
	}
	return probes.DoubledVersion(t.BaseURL, "/v1beta/models/"+model+":generateContent", "gemini", DefaultBaseURL, "v1beta", "v1", "v1alpha")
}

// endpointPath is the path the adapter appends to base_url for t.
func endpointPath(t probes.Target) string {
	model := url.PathEscape(strings.TrimPrefix(t.Model, "models/"))
	if t.Options[OptAPI] == APIVertex {
		return "/v1/projects/" + url.PathEscape(t.Options[OptProject]) + "/locations/" + url.PathEscape(t.Options[OptLocation]) +
			"/publishers/google/models/" + model + ":generateContent"
	}
	return "/v1beta/models/" + model + ":generateContent"
}

// Prober renders and reads generateContent requests for one target.
type Prober struct {
	target probes.Target
	vertex bool
	base   string
	path   string
	now    func() time.Time
}

var (
	_ probes.Prober     = (*Prober)(nil)
	_ probes.Authorizer = (*Prober)(nil)
)

// New builds a Gemini or Vertex prober for t.
func New(t probes.Target) (probes.Prober, error) {
	if errs := Check(t); len(errs) > 0 {
		return nil, fmt.Errorf("gemini: %s: %s", errs[0].Field, errs[0].Msg)
	}
	p := &Prober{target: t, vertex: t.Options[OptAPI] == APIVertex, base: strings.TrimSuffix(t.BaseURL, "/"), path: endpointPath(t), now: time.Now}
	if p.vertex {
		loc := t.Options[OptLocation]
		if p.base == "" {
			p.base = "https://" + loc + "-aiplatform.googleapis.com"
			if loc == "global" {
				p.base = "https://aiplatform.googleapis.com"
			}
		}
	} else if p.base == "" {
		p.base = DefaultBaseURL
	}
	return p, nil
}

// GenerateRequest is the canonical generateContent body: structs only, in
// wire order. temperature is always present so 0 is explicit.
type GenerateRequest struct {
	Contents          []Content        `json:"contents"`
	SystemInstruction *Content         `json:"systemInstruction,omitempty"`
	GenerationConfig  GenerationConfig `json:"generationConfig"`
}

// Content is one turn (role "user" or "model"; none for the system
// instruction).
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one text part.
type Part struct {
	Text string `json:"text"`
}

// GenerationConfig holds the fixed sampling parameters.
type GenerationConfig struct {
	Temperature     float64 `json:"temperature"`
	MaxOutputTokens int     `json:"maxOutputTokens,omitempty"`
	Seed            *int64  `json:"seed,omitempty"`
}

// Body builds the canonical body for pr: user turns keep role "user",
// assistant turns become "model", and system messages (wherever they
// appear) become the parts of systemInstruction, one part each, in order.
func (p *Prober) Body(pr probes.Probe) (GenerateRequest, error) {
	b := GenerateRequest{GenerationConfig: GenerationConfig{
		Temperature: p.target.Temperature, MaxOutputTokens: p.target.MaxTokens, Seed: p.target.Seed,
	}}
	for _, m := range pr.Messages {
		switch m.Role {
		case "system":
			if b.SystemInstruction == nil {
				b.SystemInstruction = &Content{}
			}
			b.SystemInstruction.Parts = append(b.SystemInstruction.Parts, Part{Text: m.Content})
		case "user":
			b.Contents = append(b.Contents, Content{Role: "user", Parts: []Part{{Text: m.Content}}})
		case "assistant", "model":
			b.Contents = append(b.Contents, Content{Role: "model", Parts: []Part{{Text: m.Content}}})
		default:
			return b, fmt.Errorf("gemini: probe %s: unsupported role %q", pr.ID, m.Role)
		}
	}
	if len(b.Contents) == 0 {
		return b, fmt.Errorf("gemini: probe %s: no user or assistant message", pr.ID)
	}
	return b, nil
}

// Render returns the canonical request for pr.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	body, err := p.Body(pr)
	if err != nil {
		return nil, err
	}
	b, err := wire.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("gemini: render body: %w", err)
	}
	return &probes.Request{Method: http.MethodPost, URL: p.base + p.path, Path: p.path, Header: wire.JSONHeader(), Body: b}, nil
}

// Authorize adds the credential: x-goog-api-key for the Gemini API, a bearer
// token for Vertex.
func (p *Prober) Authorize(_ context.Context, r *http.Request) error {
	if p.target.APIKey == "" {
		return nil
	}
	if p.vertex {
		r.Header.Set("Authorization", "Bearer "+p.target.APIKey)
	} else {
		r.Header.Set("X-Goog-Api-Key", p.target.APIKey)
	}
	return nil
}

// Classify reads one attempt.
func (p *Prober) Classify(_ *probes.Request, resp *probes.Response) probes.Result {
	return classify(resp, p.now(), p.target.APIKey)
}

// rating is one safetyRatings entry. The scores are read leniently (see
// readScore): a wrongly typed score must not drop the rating, whose
// blocked flag names the category of a block.
type rating struct {
	Category         string     `json:"category"`
	Probability      string     `json:"probability"`
	ProbabilityScore wire.Score `json:"probabilityScore"`
	Severity         string     `json:"severity"`
	SeverityScore    wire.Score `json:"severityScore"`
	Blocked          bool       `json:"blocked"`
}

// candidate is candidates[0]. finishReason and content are read strictly
// (the verdict comes from them); finishMessage is descriptive text, read
// leniently.
type candidate struct {
	Content *struct {
		Parts []struct {
			Text    string `json:"text"`
			Thought bool   `json:"thought"`
		} `json:"parts"`
	} `json:"content"`
	FinishReason  string            `json:"finishReason"`
	FinishMessage wire.Text         `json:"finishMessage"`
	SafetyRatings []json.RawMessage `json:"safetyRatings"`
}

type promptFeedback struct {
	BlockReason        string            `json:"blockReason"`
	BlockReasonMessage wire.Text         `json:"blockReasonMessage"`
	SafetyRatings      []json.RawMessage `json:"safetyRatings"`
}

// apiError is Google's error envelope. code echoes the HTTP status (read
// leniently); status, message and details are what the class is read from.
type apiError struct {
	Code    wire.Count        `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status"`
	Details []json.RawMessage `json:"details"`
}

type usageMetadata struct {
	PromptTokenCount     wire.Count `json:"promptTokenCount"`
	CandidatesTokenCount wire.Count `json:"candidatesTokenCount"`
	ThoughtsTokenCount   wire.Count `json:"thoughtsTokenCount"`
}

// generateResponse is one generateContent answer. The bookkeeping fields
// (usageMetadata, modelVersion, responseId) are read leniently: one of the
// wrong type is noted in Unknown ("<field>:bad_type") and never turns a
// block into a malformed answer.
type generateResponse struct {
	Candidates     []json.RawMessage `json:"candidates"`
	PromptFeedback *promptFeedback   `json:"promptFeedback"`
	UsageMetadata  json.RawMessage   `json:"usageMetadata"`
	ModelVersion   wire.Text         `json:"modelVersion"`
	ResponseID     wire.Text         `json:"responseId"`
	Error          *apiError         `json:"error"`
}

// usage reads usageMetadata leniently: its counts, and the bad_type
// entries for Unknown (the whole field when it is not an object).
func (gr *generateResponse) usage() (u usageMetadata, odd []string) {
	if len(gr.UsageMetadata) == 0 || string(gr.UsageMetadata) == "null" {
		return u, nil
	}
	if json.Unmarshal(gr.UsageMetadata, &u) != nil {
		return usageMetadata{}, []string{"usageMetadata:bad_type"}
	}
	return u, wire.OddFields(
		"usageMetadata.promptTokenCount", u.PromptTokenCount.Odd,
		"usageMetadata.candidatesTokenCount", u.CandidatesTokenCount.Odd,
		"usageMetadata.thoughtsTokenCount", u.ThoughtsTokenCount.Odd)
}

// Known wire vocabulary. Anything else is recorded in Result.Unknown.
var (
	knownTop       = wire.Set("candidates", "promptFeedback", "usageMetadata", "modelVersion", "responseId", "createTime")
	knownCandidate = wire.Set("content", "finishReason", "finishMessage", "safetyRatings", "citationMetadata", "avgLogprobs",
		"logprobsResult", "index", "tokenCount", "groundingMetadata", "groundingAttributions", "urlContextMetadata")
	knownFeedback = wire.Set("blockReason", "blockReasonMessage", "safetyRatings")
	knownRating   = wire.Set("category", "probability", "probabilityScore", "severity", "severityScore", "blocked")
	knownProb     = wire.Set("HARM_PROBABILITY_UNSPECIFIED", "NEGLIGIBLE", "LOW", "MEDIUM", "HIGH")
	knownSeverity = wire.Set("HARM_SEVERITY_UNSPECIFIED", "HARM_SEVERITY_NEGLIGIBLE", "HARM_SEVERITY_LOW", "HARM_SEVERITY_MEDIUM", "HARM_SEVERITY_HIGH")
	// blockReasons are promptFeedback.blockReason values (Gemini API and
	// Vertex spellings of "unspecified" both listed).
	// Vertex adds JAILBREAK ("the user prompt was blocked due to
	// jailbreak") and MODEL_ARMOR (a project's Model Armor floor settings).
	knownBlock = wire.Set("SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "IMAGE_SAFETY", "SPII", "MODEL_ARMOR", "JAILBREAK",
		"BLOCK_REASON_UNSPECIFIED", "BLOCKED_REASON_UNSPECIFIED")
	// policyFinish are finish reasons that withhold the answer for policy
	// (Vertex's MODEL_ARMOR: "the model response was blocked by Model
	// Armor").
	policyFinish = wire.Set("SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "MODEL_ARMOR")
	// otherFinish are documented finish reasons that are not policy verdicts.
	otherFinish = wire.Set("STOP", "MAX_TOKENS", "RECITATION", "IMAGE_RECITATION", "OTHER", "IMAGE_OTHER", "LANGUAGE",
		"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "NO_IMAGE", "MALFORMED_RESPONSE",
		"MISSING_THOUGHT_SIGNATURE", "FINISH_REASON_UNSPECIFIED")
	// emptyAnswer are the non-policy finish reasons that are still an
	// answer with no text: the output budget spent (a thinking model may
	// spend it all on thoughts) or text withheld as a recitation. Any other
	// non-policy reason with no text is a failed generation (transient).
	emptyAnswer = wire.Set("MAX_TOKENS", "RECITATION", "IMAGE_RECITATION")
	knownStatus = wire.Set("INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE", "UNAUTHENTICATED", "PERMISSION_DENIED",
		"NOT_FOUND", "ABORTED", "ALREADY_EXISTS", "RESOURCE_EXHAUSTED", "CANCELLED", "DATA_LOSS", "UNKNOWN", "INTERNAL",
		"UNIMPLEMENTED", "UNAVAILABLE", "DEADLINE_EXCEEDED")
)

// NormalizeCategory maps a HarmCategory to the normalized vocabulary. ok is
// false for a category it does not know (mapped to other).
//
// HARM_CATEGORY_DANGEROUS_CONTENT ("promotes, facilitates or encourages
// harmful acts") maps to illicit: it is the closest normalized category,
// though it also covers some weapons and self-harm content the API does not
// separate. The image variants map like their text counterparts.
func NormalizeCategory(raw string) (string, bool) {
	switch strings.TrimPrefix(strings.TrimPrefix(raw, "HARM_CATEGORY_"), "IMAGE_") {
	case "HATE_SPEECH", "HATE":
		return probes.CatHate, true
	case "HARASSMENT":
		return probes.CatHarassment, true
	case "SEXUALLY_EXPLICIT":
		return probes.CatSexual, true
	case "DANGEROUS_CONTENT":
		return probes.CatIllicit, true
	case "JAILBREAK":
		return probes.CatJailbreak, true
	case "CIVIC_INTEGRITY", "UNSPECIFIED":
		return probes.CatOther, true
	}
	return probes.CatOther, false
}

// reasonCategory is the category of a fallback signal for a block reason
// that names no rating.
func reasonCategory(reason string) string {
	switch reason {
	case "SPII":
		return probes.CatPrivacy
	case "JAILBREAK":
		return probes.CatJailbreak
	}
	return probes.CatOther
}

func classify(resp *probes.Response, now time.Time, key string) probes.Result {
	if resp.Err != nil {
		return wire.Transport(resp)
	}
	// A UTF-8 byte order mark before the body is skipped (the stored body
	// keeps it).
	resp = wire.SkipBOM(resp)
	var r probes.Result
	r.RequestID = wire.Truncate(resp.Header.Get("X-Goog-Request-Id"), 200)
	var gr generateResponse
	obj, stream, perr := decode(resp.Body, &gr)
	if perr == nil {
		if r.RequestID == "" {
			r.RequestID = wire.Truncate(gr.ResponseID.S, 200)
		}
		r.Unknown = append(r.Unknown, wire.OddFields("responseId", gr.ResponseID.Odd, "modelVersion", gr.ModelVersion.Odd)...)
		if gr.Error != nil {
			r.Unknown = append(r.Unknown, wire.OddFields("error.code", gr.Error.Code.Odd)...)
		}
	}
	ok2xx := resp.Status >= 200 && resp.Status < 300
	switch {
	case ok2xx && perr != nil:
		r.Class, r.Reason = probes.Transient, "malformed_response"
		if resp.Truncated {
			r.Reason = "truncated_response"
		}
	case ok2xx && gr.Error != nil:
		status := gr.Error.Code.N
		if status < 400 {
			status = 500
		}
		r = classifyError(r, resp, gr.Error, status, now)
		r.Reason = "200:" + r.Reason
	case ok2xx && stream && resp.Truncated:
		r.Class, r.Reason = probes.Transient, "truncated_response"
	case ok2xx && stream && !streamDone(&gr):
		r.Class, r.Reason = probes.Transient, "incomplete_stream"
	case ok2xx:
		r = classifyOK(r, obj, &gr)
	default:
		var e *apiError
		if perr == nil {
			e = gr.Error
		}
		r = classifyError(r, resp, e, resp.Status, now)
	}
	r.Message = redact(r.Message, key)
	r.Reason = redact(r.Reason, key)
	r = wire.Redact(r, key)
	// Sanitized before de-duplication: two values may sanitize alike.
	r.Unknown = probes.SortedUnique(wire.CleanUnknown(r.Unknown))
	return wire.Finish(r)
}

// decode reads body into v, accepting the JSON-array wrapping Google uses
// for some errors ([{"error":{...}}]): the first element is read when it
// carries an error. Any other array is a stream of chunks
// (streamGenerateContent without alt=sse: a JSON array of
// GenerateContentResponse objects, the finishReason and the blocking
// ratings on the last), and a server-sent event stream
// (streamGenerateContent?alt=sse) holds the same chunks: driftprobe asks
// for neither, but a proxy may answer with one. Either is merged into the
// one object the unary call returns (see mergeChunks) and stream is true.
// It returns the raw object read, for unknown-key detection.
func decode(body []byte, v *generateResponse) (obj json.RawMessage, stream bool, err error) {
	t := bytes.TrimSpace(body)
	if isSSE(t) {
		if t, err = mergeSSE(t); err != nil {
			return nil, true, err
		}
		return t, true, json.Unmarshal(t, v)
	}
	if len(t) > 0 && t[0] == '[' {
		var arr []json.RawMessage
		if err := json.Unmarshal(t, &arr); err != nil {
			return nil, false, err
		}
		if len(arr) == 0 {
			return nil, false, fmt.Errorf("empty array")
		}
		if !wrapsError(arr[0]) {
			chunks := make([][]byte, len(arr))
			for i, c := range arr {
				chunks[i] = c
			}
			if t, err = mergeChunks(chunks); err != nil {
				return nil, true, err
			}
			return t, true, json.Unmarshal(t, v)
		}
		t = arr[0]
	}
	if len(t) == 0 || t[0] != '{' {
		return nil, false, fmt.Errorf("not a JSON object")
	}
	if err := json.Unmarshal(t, v); err != nil {
		return nil, false, err
	}
	return t, false, nil
}

// wrapsError reports whether the first element of a JSON-array answer is
// Google's wrapped error: an object with a non-null "error" member
// ([{"error":{"code":429,...}}]). Such an array is read as its first
// element, as it always was; any other array is a stream of chunks.
func wrapsError(first json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(first, &m) != nil {
		return false
	}
	e := bytes.TrimSpace(m["error"])
	return len(e) > 0 && string(e) != "null"
}

// isSSE reports whether a (trimmed) body is a server-sent event stream.
func isSSE(t []byte) bool {
	for _, p := range []string{"data:", "event:", "id:", "retry:", ":"} {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	return false
}

// sseData returns the data of each event of an SSE stream, in order
// (data lines of one event joined with "\n"; other fields and comments
// ignored).
func sseData(body []byte) [][]byte {
	var out [][]byte
	var cur []byte
	has := false
	flush := func() {
		if has {
			out = append(out, cur)
		}
		cur, has = nil, false
	}
	// Lines end in LF, CRLF or a lone CR (the SSE grammar allows all three).
	body = bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(line) == 0 {
			flush()
			continue
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v = bytes.TrimPrefix(v, []byte(" "))
		if has {
			cur = append(cur, '\n')
		}
		cur, has = append(cur, v...), true
	}
	flush()
	return out
}

// mergeSSE merges the chunks of a streamGenerateContent SSE stream, one
// per event, into one generateContent object (mergeChunks). Every event
// must hold a JSON object.
func mergeSSE(body []byte) (json.RawMessage, error) {
	events := sseData(body)
	if len(events) == 0 {
		return nil, fmt.Errorf("empty event stream")
	}
	return mergeChunks(events)
}

// mergeChunks merges the chunks of a streamGenerateContent answer (the
// events of an SSE stream, or the elements of a JSON array) into one
// generateContent object: top-level fields and the fields of candidates[0]
// are taken from the last chunk that has them (the final chunk carries
// finishReason, safetyRatings and usageMetadata; a prompt block is a single
// promptFeedback chunk), and the content parts of candidates[0] of every
// chunk are concatenated. Every chunk must be a JSON object.
func mergeChunks(events [][]byte) (json.RawMessage, error) {
	top := map[string]json.RawMessage{}
	cand := map[string]json.RawMessage{}
	var parts []json.RawMessage
	sawCandidate := false
	for _, ev := range events {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(ev, &m); err != nil || m == nil {
			return nil, fmt.Errorf("event is not a JSON object")
		}
		for k, v := range m {
			if k != "candidates" {
				top[k] = v
			}
		}
		var cs []json.RawMessage
		if err := json.Unmarshal(m["candidates"], &cs); m["candidates"] != nil && err != nil {
			return nil, err
		}
		if len(cs) == 0 {
			continue
		}
		var c map[string]json.RawMessage
		if err := json.Unmarshal(cs[0], &c); err != nil || c == nil {
			return nil, fmt.Errorf("candidate is not a JSON object")
		}
		sawCandidate = true
		for k, v := range c {
			if k != "content" {
				cand[k] = v
				continue
			}
			var ct struct {
				Parts []json.RawMessage `json:"parts"`
			}
			if err := json.Unmarshal(v, &ct); err != nil {
				return nil, err
			}
			parts = append(parts, ct.Parts...)
		}
	}
	if sawCandidate {
		if len(parts) > 0 {
			b, err := json.Marshal(map[string]any{"role": "model", "parts": parts})
			if err != nil {
				return nil, err
			}
			cand["content"] = b
		}
		b, err := json.Marshal([]any{cand})
		if err != nil {
			return nil, err
		}
		top["candidates"] = b
	}
	return json.Marshal(top)
}

// streamDone reports whether a merged stream is complete: it ends with a
// finishReason, a prompt block or an error. A stream that stops before
// (a dropped connection at an event boundary) is not an answer.
func streamDone(gr *generateResponse) bool {
	if gr.Error != nil || (gr.PromptFeedback != nil && (gr.PromptFeedback.BlockReason != "" || gr.PromptFeedback.BlockReasonMessage.S != "")) {
		return true // a prompt block (the unary rule decides which)
	}
	if len(gr.Candidates) == 0 {
		return false
	}
	var c struct {
		FinishReason string `json:"finishReason"`
	}
	return json.Unmarshal(gr.Candidates[0], &c) == nil && c.FinishReason != ""
}

func classifyError(r probes.Result, resp *probes.Response, e *apiError, status int, now time.Time) probes.Result {
	if e == nil {
		e = &apiError{}
	}
	r.Message = e.Message
	reason, retryDelay, exhausted := readDetails(e.Details)
	r.Reason = strconv.Itoa(status)
	if e.Status != "" {
		r.Reason += ":" + e.Status
		if !knownStatus[e.Status] {
			r.Unknown = append(r.Unknown, "error_status:"+e.Status)
		}
	}
	if reason != "" {
		r.Reason += ":" + reason
	}
	switch {
	case status >= 400 && status < 500 && status != 429 && isAbuse(e.Status, reason, e.Message):
		r.Class, r.Stage = probes.AbuseBlock, probes.StageAccount
	case status == 429 && exhausted:
		// A quota of zero, or a daily one used up, does not clear within
		// a run: waiting and retrying only spends the run's time (and
		// opens the breaker on an account problem). Like OpenAI's
		// insufficient_quota, it is the operator's to fix.
		r.Class = probes.ClientError
		r.Reason += ":quota_exhausted"
	default:
		r.Class = wire.StatusClass(status)
	}
	if r.Class == probes.Transient {
		r.RetryAfter = max(wire.RetryAfter(resp.Header, now), retryDelay)
	}
	return r
}

// isAbuse reports account-level enforcement: Google's ErrorInfo reason
// CONSUMER_SUSPENDED (a suspended key or project), the "project has been
// denied access" message, or the shared phrases of wire.IsAbuse.
func isAbuse(status, reason, message string) bool {
	if reason == "CONSUMER_SUSPENDED" {
		return true
	}
	m := strings.ToLower(message)
	if strings.Contains(m, "project has been denied access") || (strings.Contains(m, "consumer") && strings.Contains(m, "has been suspended")) {
		return true
	}
	return wire.IsAbuse(status, reason, message)
}

// readDetails reads google.rpc detail entries: the ErrorInfo reason, a
// RetryInfo retryDelay ("37s", "0.5s"), and whether a quota named is one
// that will not clear within a run: an ErrorInfo quota_limit_value or a
// QuotaFailure violation's quotaValue of "0" (no quota at all), or a
// QuotaFailure violation on a per-day quota (quotaId ...PerDay...).
func readDetails(details []json.RawMessage) (reason string, delay time.Duration, exhausted bool) {
	for _, raw := range details {
		var d struct {
			Type       string `json:"@type"`
			Reason     string `json:"reason"`
			RetryDelay string `json:"retryDelay"`
			Metadata   struct {
				QuotaLimitValue string `json:"quota_limit_value"`
			} `json:"metadata"`
			Violations []struct {
				QuotaID    string `json:"quotaId"`
				QuotaValue string `json:"quotaValue"`
			} `json:"violations"`
		}
		if json.Unmarshal(raw, &d) != nil {
			continue
		}
		switch {
		case strings.HasSuffix(d.Type, "google.rpc.ErrorInfo"):
			if reason == "" {
				reason = d.Reason
			}
			if strings.TrimSpace(d.Metadata.QuotaLimitValue) == "0" {
				exhausted = true
			}
		case strings.HasSuffix(d.Type, "google.rpc.QuotaFailure"):
			for _, v := range d.Violations {
				if strings.TrimSpace(v.QuotaValue) == "0" || strings.Contains(v.QuotaID, "PerDay") {
					exhausted = true
				}
			}
		case strings.HasSuffix(d.Type, "google.rpc.RetryInfo"):
			if s, ok := strings.CutSuffix(strings.TrimSpace(d.RetryDelay), "s"); ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 {
					delay = wire.Duration(f, time.Second)
				}
			}
		}
	}
	return reason, delay, exhausted
}

func classifyOK(r probes.Result, obj json.RawMessage, gr *generateResponse) probes.Result {
	r.ModelID = wire.Truncate(gr.ModelVersion.S, 200)
	r.ModelFP = r.ModelID
	u, odd := gr.usage()
	r.TokensIn, r.TokensOut = u.PromptTokenCount.N, u.CandidatesTokenCount.N+u.ThoughtsTokenCount.N
	r.Unknown = append(r.Unknown, odd...)
	r.Unknown = append(r.Unknown, wire.UnknownKeys(obj, knownTop, "field:")...)

	// Prompt-side ratings are kept on every answer, under "prompt.".
	var promptSignals []probes.Signal
	if pf := gr.PromptFeedback; pf != nil {
		promptSignals = readRatings(pf.SafetyRatings, "prompt.", &r)
		r.Unknown = append(r.Unknown, wire.OddFields("promptFeedback.blockReasonMessage", pf.BlockReasonMessage.Odd)...)
		var raw struct {
			PromptFeedback json.RawMessage `json:"promptFeedback"`
		}
		if json.Unmarshal(obj, &raw) == nil {
			r.Unknown = append(r.Unknown, wire.UnknownKeys(raw.PromptFeedback, knownFeedback, "promptFeedback.")...)
		}
	}

	// Input-side block: a real promptFeedback.blockReason (not the
	// "unspecified" placeholder). With no reason and no candidates, only a
	// blockReasonMessage or a prompt rating flagged blocked:true still says
	// the prompt was blocked; otherwise nothing was generated and nothing
	// blocked, which is no_candidates below.
	if pf := gr.PromptFeedback; pf != nil && (realBlockReason(pf.BlockReason) ||
		len(gr.Candidates) == 0 && (pf.BlockReasonMessage.S != "" || anyFired(promptSignals))) {
		r.Class, r.Stage, r.Reason = probes.BlockedInput, probes.StageInput, pf.BlockReason
		r.Message = pf.BlockReasonMessage.S
		reason := pf.BlockReason
		switch {
		case !realBlockReason(reason):
			// Unspecified: the block names no reason, hence no fallback
			// category either.
			reason = ""
			if pf.BlockReason == "" {
				r.Reason = "block_reason_missing"
				r.Unknown = append(r.Unknown, "block_reason:<none>")
			}
		case !knownBlock[reason]:
			r.Unknown = append(r.Unknown, "block_reason:"+reason)
		}
		r.Signals = attribute(promptSignals, reason, "blockReason:")
		return r
	}
	r.Signals = append(r.Signals, promptSignals...)
	if len(gr.Candidates) == 0 {
		r.Class, r.Reason = probes.Transient, "no_candidates"
		return r
	}

	r.Unknown = append(r.Unknown, wire.UnknownKeys(gr.Candidates[0], knownCandidate, "candidate.")...)
	var c candidate
	if err := json.Unmarshal(gr.Candidates[0], &c); err != nil {
		r.Class, r.Reason = probes.Transient, "malformed_response"
		return r
	}
	r.Unknown = append(r.Unknown, wire.OddFields("candidate.finishMessage", c.FinishMessage.Odd)...)
	outSignals := readRatings(c.SafetyRatings, "", &r)
	var text strings.Builder
	if c.Content != nil {
		for _, part := range c.Content.Parts {
			if !part.Thought {
				text.WriteString(part.Text)
			}
		}
	}
	fr := c.FinishReason
	if policyFinish[fr] {
		r.Class, r.Stage, r.Reason = probes.BlockedOutput, probes.StageOutput, fr
		r.Message = c.FinishMessage.S
		r.Signals = append(r.Signals, attribute(outSignals, fr, "finishReason:")...)
		return r
	}
	r.Signals = append(r.Signals, outSignals...)
	if fr != "" && !otherFinish[fr] {
		r.Unknown = append(r.Unknown, "finish_reason:"+fr)
	}
	empty := strings.TrimSpace(text.String()) == ""
	switch {
	case empty && fr == "":
		r.Class, r.Reason = probes.Transient, "empty_candidate"
		return r
	case empty && !emptyAnswer[fr]:
		// Nothing generated and nothing blocked (OTHER "Model failed to
		// generate content due to internal error.", an empty STOP, ...):
		// not a verdict.
		r.Class, r.Reason = probes.Transient, "empty_candidate:"+fr
		r.Message = c.FinishMessage.S
		return r
	case fr == "":
		r.Unknown = append(r.Unknown, "finish_reason:<none>")
	}
	if wire.IsRefusal(text.String()) {
		r.Class, r.Stage, r.Reason, r.Heuristic = probes.ModelRefusal, probes.StageOutput, "refusal_text", true
		r.Message = text.String()
		return r
	}
	// RECITATION and MAX_TOKENS land here even with no text, on purpose:
	// allowed, with the reason recorded (see the package comment).
	r.Class, r.Reason = probes.Allowed, fr
	r.Message = c.FinishMessage.S
	return r
}

// realBlockReason reports whether a promptFeedback.blockReason names a
// block: set, and not the unused "unspecified" placeholder.
func realBlockReason(reason string) bool {
	return reason != "" && !strings.HasSuffix(reason, "_UNSPECIFIED")
}

func anyFired(sigs []probes.Signal) bool {
	for _, s := range sigs {
		if s.Fired {
			return true
		}
	}
	return false
}

// attribute decides which signals caused a block with the given reason.
// Ratings flagged blocked:true always count. For SAFETY with none flagged,
// ratings at probability MEDIUM or HIGH are taken as the cause (Gemini's
// default threshold blocks medium and above). For any other reason with
// none flagged, a single fired signal named prefix+reason is added so the
// block carries a category (SPII→privacy, else other).
func attribute(sigs []probes.Signal, reason, prefix string) []probes.Signal {
	for _, s := range sigs {
		if s.Fired {
			return sigs
		}
	}
	if reason == "SAFETY" {
		for i, s := range sigs {
			if s.Severity == "HIGH" || s.Severity == "MEDIUM" {
				sigs[i].Fired = true
				// The paired Vertex severity signal shares the verdict.
				for j := range sigs {
					if sigs[j].Raw == s.Raw+":severity" {
						sigs[j].Fired = true
					}
				}
			}
		}
		return sigs
	}
	if reason == "" {
		return sigs
	}
	return append(sigs, probes.Signal{Category: reasonCategory(reason), Raw: prefix + reason, Fired: true})
}

// readRatings turns safetyRatings into signals (see the package comment).
func readRatings(raws []json.RawMessage, prefix string, r *probes.Result) []probes.Signal {
	var out []probes.Signal
	for _, raw := range raws {
		var rt rating
		if err := json.Unmarshal(raw, &rt); err != nil {
			r.Unknown = append(r.Unknown, "rating:unparseable")
			continue
		}
		r.Unknown = append(r.Unknown, wire.UnknownKeys(raw, knownRating, "rating.")...)
		cat, known := NormalizeCategory(rt.Category)
		if !known {
			r.Unknown = append(r.Unknown, "category:"+rt.Category)
		}
		if rt.Probability != "" && !knownProb[rt.Probability] {
			r.Unknown = append(r.Unknown, "probability:"+rt.Probability)
		}
		s := probes.Signal{Category: cat, Raw: prefix + rt.Category, Severity: rt.Probability, Fired: rt.Blocked}
		s.Score, s.HasScore = rt.ProbabilityScore.V, rt.ProbabilityScore.Has
		r.Unknown = append(r.Unknown, wire.OddFields("rating.probabilityScore", rt.ProbabilityScore.Odd)...)
		out = append(out, s)
		sv := probes.Signal{Category: cat, Raw: s.Raw + ":severity", Severity: rt.Severity, Fired: rt.Blocked}
		sv.Score, sv.HasScore = rt.SeverityScore.V, rt.SeverityScore.Has
		r.Unknown = append(r.Unknown, wire.OddFields("rating.severityScore", rt.SeverityScore.Odd)...)
		if rt.Severity != "" || sv.HasScore {
			if rt.Severity != "" && !knownSeverity[rt.Severity] {
				r.Unknown = append(r.Unknown, "severity:"+rt.Severity)
			}
			out = append(out, sv)
		}
	}
	return out
}

// keyRE matches Google API keys and the "api_key:..." consumer names that
// Google's suspension errors quote.
var keyRE = regexp.MustCompile(`AIza[0-9A-Za-z_\-]{20,}|api_key:[^'"\s]+`)

// redact removes the configured key (or token) and anything shaped like a
// Google API key from provider text kept in a result.
func redact(s, key string) string {
	if key != "" && len(key) >= 4 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	return keyRE.ReplaceAllString(s, "[redacted]")
}
