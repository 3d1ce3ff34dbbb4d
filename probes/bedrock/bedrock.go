// Package bedrock is the driftprobe adapter for Amazon Bedrock Runtime over
// plain HTTP, signed with AWS Signature Version 4 (smithy-go aws-http-auth).
//
// Two endpoints:
//
//   - "chat": the Converse API, POST /model/{modelId}/converse. System
//     messages go to the top-level system list; consecutive user (or
//     assistant) turns are one message with a text block each, since
//     Converse requires alternating roles, and a conversation that opens
//     with an assistant turn does not render (Converse refuses it). With the
//     options guardrail_id and guardrail_version the request carries a
//     guardrailConfig with trace "enabled", and the guardrail trace
//     (trace.guardrail.inputAssessment / outputAssessments) is read into
//     Signals.
//   - "guardrail": ApplyGuardrail, POST
//     /guardrail/{id}/version/{version}/apply with source INPUT and one text
//     content entry per user message. No model runs; the target's model is a
//     label only (it is not sent, and is recorded as the model id).
//
// Verdicts. Converse stopReason "guardrail_intervened" is a block: stage
// input when the trace's inputAssessment has a BLOCKED action (the model
// never ran), else output when an output assessment acted, else input when
// the input was only masked (ANONYMIZED), else, with no usable trace, input
// when usage reports outputTokens 0 and output otherwise (a wrongly typed
// outputTokens is not read as 0). "content_filtered" (the model's own
// filter) is blocked_output. Both blocks hold with or without an output
// message. end_turn, max_tokens, stop_sequence, tool_use and the
// malformed_* reasons are allowed (a short plain-text refusal is
// model_refusal with Heuristic set); model_context_window_exceeded is a
// client error; any other stop reason is allowed and recorded in Unknown as
// "stop_reason:X". An answer without a stopReason (absent, null or ""), or
// with a stop reason other than the two blocks and
// model_context_window_exceeded but no output.message.content (absent,
// null, or of the wrong type; an empty array is an empty answer), is no
// answer: transient "malformed_response". ApplyGuardrail action
// GUARDRAIL_INTERVENED is blocked_input, NONE is allowed; a missing action
// is malformed_response. A guardrail masking PII (action ANONYMIZED) is an
// intervention: it fires its signal.
//
// Bookkeeping. The verdict is read from stopReason, the guardrail trace's
// assessments, the Converse output content and the ApplyGuardrail action
// and assessments, decoded strictly. Bookkeeping fields — Converse usage
// (inputTokens, outputTokens, totalTokens), metrics.latencyMs,
// output.message.role, trace.promptRouter.invokedModelId,
// trace.guardrail.actionReason, and ApplyGuardrail actionReason and
// outputs[].text — are decoded leniently (wire.Count, wire.Text): a wrongly
// typed one is recorded in Unknown as "<field>:bad_type" (e.g.
// "usage.inputTokens:bad_type", "usage:bad_type" when usage is not an
// object) and the answer is read as usual; an odd model id or message is
// not used. A block whose output message is of the wrong type stays a
// block ("output:bad_type"). Assessment members the adapter does not read
// (detected, filterStrength, threshold, a topic's type) are not decoded, so
// an odd one there cannot drop the assessment's signals.
//
// Signals. Raw names are "contentPolicy.HATE", "topicPolicy.<topic name>",
// "wordPolicy.customWords", "wordPolicy.<managed list>",
// "sensitiveInformationPolicy.<PII type>",
// "sensitiveInformationPolicy.regex.<name>" and
// "contextualGroundingPolicy.<type>"; signals from Converse output
// assessments carry the prefix "output.". A signal fires when its action is
// BLOCKED or ANONYMIZED (a "detected" finding with action NONE does not).
// Content filters carry their confidence (NONE|LOW|MEDIUM|HIGH) as Severity;
// the other policies carry their action as Severity; grounding filters carry
// their score. Normalized: HATE→hate, INSULTS→harassment, SEXUAL→sexual,
// VIOLENCE→violence, MISCONDUCT→illicit, PROMPT_ATTACK→jailbreak, PII and
// regexes→privacy, topics, words and grounding→other.
//
// Errors. The type is the x-amzn-ErrorType header up to its first ':' (else
// the body's __type or code); the message is the body's message (or
// Message). Throttling, ServiceUnavailable, InternalServer, ModelNotReady
// and ModelTimeout exceptions are transient (Retry-After honoured); other
// 4xx are client errors unless the message reads as account enforcement
// (wire.IsAbuse), which is abuse_block at stage account, or is Bedrock's
// content filter (contentFilterStage): a ValidationException whose message
// opens with "This request has been blocked by our content filters" is
// blocked_input, reason "content_filter_input", and one opening with "The
// generated text has been blocked by our content filters" is
// blocked_output, reason "content_filter_output" (no category named, the
// message kept, never retried; account enforcement wins over both, and the
// wording under any other error type is not read as a filter); anything
// else follows wire.StatusClass. Amazon's models withhold flagged output
// in a successful answer (Nova's "RAI output deflection", no exception):
// a Converse answer whose whole text is "The generated text has been
// blocked by our content filters." is blocked_output at stage output,
// reason "content_filter_output_text", heuristic (read from the text).
//
// Credentials. By default requests are signed with SigV4 (service
// "bedrock", the target's region) from AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and the optional AWS_SESSION_TOKEN, read when the
// prober is built. When the target names api_key_env, that variable is
// taken as an Amazon Bedrock API key (probes.Target.APIKey) and sent as
// "Authorization: Bearer" instead.
//
// New never requires credentials: rendering and classifying use none, so
// a prober built without them (plan --no-keys, replay, on a machine
// without AWS credentials) renders byte-identical requests and reads
// answers exactly like one built with them. Only sending needs them:
// Authorize refuses to send unsigned, returning CredentialsError, the
// error naming the missing variable(s), and a caller that builds probers
// to send (app.BuildTargets) checks CredentialsError right after New so
// that a run fails before it starts. Info.CredentialEnv lists the two
// required variables, so a config check that needs keys reports them
// missing earlier still. Credentials never enter a
// Request (its path, body or headers) or a Result: Classify also scrubs
// them from echoed error messages (AWS signature errors echo the canonical
// request, which includes x-amz-security-token), and Redact does the same
// for raw bodies.
//
// Bedrock reports no model fingerprint: ModelFP stays empty. The model id
// is the configured model, or trace.promptRouter.invokedModelId when a
// prompt router answered. The request id is the x-amzn-RequestId header.
// Converse has no seed parameter; a target's seed is ignored.
package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/aws/smithy-go/aws-http-auth/credentials"
	"github.com/aws/smithy-go/aws-http-auth/sigv4"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// Environment variables the SigV4 credentials are read from.
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken    = "AWS_SESSION_TOKEN"
)

// SigningName is the SigV4 service name of Bedrock Runtime.
const SigningName = "bedrock"

// Endpoints.
const (
	EndpointChat      = "chat"
	EndpointGuardrail = "guardrail"
)

// Option keys of a target's options block.
const (
	OptRegion           = "region"
	OptGuardrailID      = "guardrail_id"
	OptGuardrailVersion = "guardrail_version"
)

func init() {
	probes.Register(probes.Info{
		Name:      "bedrock",
		Endpoints: []string{EndpointChat, EndpointGuardrail},
		NeedsKey:  false,
		Signals: []string{
			"Converse stopReason=guardrail_intervened + trace.guardrail.inputAssessment (input) / outputAssessments (output)",
			"Converse stopReason=content_filtered (output, the model's own filter)",
			"ApplyGuardrail action=GUARDRAIL_INTERVENED|NONE + actionReason (input)",
			"assessments: contentPolicy.filters{type,confidence,action}, topicPolicy.topics, wordPolicy, sensitiveInformationPolicy.piiEntities/regexes, contextualGroundingPolicy.filters{score}",
			"plain-text refusal (heuristic)",
			"x-amzn-ErrorType: Throttling/ServiceUnavailable/InternalServer/ModelNotReady/ModelTimeout (transient, Retry-After)",
			"account-enforcement wording in an error message (abuse)",
			"ValidationException \"This request has been blocked by our content filters…\" (input, content_filter_input) / \"The generated text has been blocked by our content filters.\" (output, content_filter_output)",
			"Converse answer whose whole text is \"The generated text has been blocked by our content filters.\" (output, content_filter_output_text, heuristic)",
		},
		Input: true, Output: true, Scores: true,
		RequestID: "x-amzn-RequestId header",
		ModelFP:   "none (Converse does not report one)",
		Options:   []string{OptRegion, OptGuardrailID, OptGuardrailVersion},
		// SigV4 credentials; AWS_SESSION_TOKEN is optional, so not listed.
		CredentialEnv: []string{EnvAccessKeyID, EnvSecretAccessKey},
		CredentialAlt: "an Amazon Bedrock API key",
		Check:         Check,
		Warn:          Warn,
	}, New)
}

// Warn reports a base_url ending in an endpoint (/model/MODEL/converse,
// /model/MODEL/invoke, /guardrail/ID/version/V/apply, …): base_url is the
// runtime endpoint, to which the adapter appends its own path, so every
// probe would be a 404.
func Warn(t probes.Target) []probes.FieldError {
	return probes.PastedEndpoint(t.BaseURL, endpointPath(t), "bedrock", "https://bedrock-runtime.REGION.amazonaws.com",
		"/model/*/converse", "/model/*/converse-stream", "/model/*/invoke", "/model/*/invoke-with-response-stream", "/model/*", "/model",
		"/guardrail/*/version/*/apply", "/guardrail/*/version/*", "/guardrail/*")
}

// endpointPath is the path the adapter appends to base_url for t: the
// ApplyGuardrail path for endpoint guardrail, else Converse's.
func endpointPath(t probes.Target) string {
	if t.Endpoint == EndpointGuardrail {
		return "/guardrail/" + EscapeLabel(t.Options[OptGuardrailID]) + "/version/" + EscapeLabel(t.Options[OptGuardrailVersion]) + "/apply"
	}
	return "/model/" + EscapeLabel(t.Model) + "/converse"
}

// Prober renders and reads Bedrock Converse and ApplyGuardrail requests and
// signs them with SigV4. It is safe for concurrent use.
type Prober struct {
	target probes.Target
	base   string
	region string
	grID   string
	grVer  string

	creds   credentials.Credentials
	apiKey  string // Bedrock API key (bearer) when api_key_env is set
	credErr error  // what is missing to sign (nil when the prober can send)
	signer  *sigv4.Signer

	// now is the signing clock (and the clock for HTTP-date Retry-After);
	// tests pin it.
	now func() time.Time
}

var (
	_ probes.Prober     = (*Prober)(nil)
	_ probes.Authorizer = (*Prober)(nil)
	_ probes.Generator  = (*Prober)(nil)
)

var (
	regionRe  = regexp.MustCompile(`^[a-z]{2,5}(-[a-z]+)+-[0-9]+$`)
	grIDRe    = regexp.MustCompile(`^(([a-z0-9]+)|(arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail/[a-z0-9]+))$`)
	grVerRe   = regexp.MustCompile(`^(([1-9][0-9]{0,7})|(DRAFT))$`)
	errNoUser = errors.New("bedrock: probe has no user message")
)

// Check validates a target's Bedrock settings: options.region (required, an
// AWS region name), options.guardrail_id and options.guardrail_version
// (both required for the guardrail endpoint, both or neither for chat; the
// version must be a number or DRAFT) and the temperature (Converse accepts
// 0..1).
//
// Credentials are deliberately not checked here: Check runs on every
// config load, including commands that send nothing (events, evidence) on
// machines without AWS credentials. The registered Info lists the required
// variables in CredentialEnv instead, and config validation reports them
// unset, at the target's provider line, when keys are needed (config
// check, run), like a missing api_key_env variable; CredentialsError (and
// Authorize) name them for a prober built without that validation.
func Check(t probes.Target) []probes.FieldError {
	var errs []probes.FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, probes.FieldError{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	region := t.Options[OptRegion]
	switch {
	case region == "":
		add("options."+OptRegion, "required for provider bedrock (e.g. us-east-1)")
	case !regionRe.MatchString(region):
		add("options."+OptRegion, "%q: not an AWS region name (e.g. us-east-1)", region)
	}
	id, ver := t.Options[OptGuardrailID], t.Options[OptGuardrailVersion]
	if t.Endpoint == EndpointGuardrail {
		if id == "" {
			add("options."+OptGuardrailID, "required for endpoint guardrail")
		}
		if ver == "" {
			add("options."+OptGuardrailVersion, "required for endpoint guardrail (a version number, or DRAFT)")
		}
	} else {
		if id != "" && ver == "" {
			add("options."+OptGuardrailVersion, "required when guardrail_id is set (pin a version number, or DRAFT)")
		}
		if ver != "" && id == "" {
			add("options."+OptGuardrailID, "required when guardrail_version is set")
		}
	}
	if id != "" && !grIDRe.MatchString(id) {
		add("options."+OptGuardrailID, "%q: not a guardrail id or guardrail ARN", id)
	}
	if ver != "" && !grVerRe.MatchString(ver) {
		add("options."+OptGuardrailVersion, "%q: must be a version number or DRAFT", ver)
	}
	if t.Temperature < 0 || t.Temperature > 1 {
		add("temperature", "%v: Bedrock Converse accepts 0..1", t.Temperature)
	}
	return errs
}

// New builds a Bedrock prober for t. It reads SigV4 credentials from the
// environment unless t carries a Bedrock API key (api_key_env). Missing
// credentials are not an error here: the prober renders and classifies
// without them, and CredentialsError reports them (see the package
// documentation).
func New(t probes.Target) (probes.Prober, error) {
	if errs := Check(t); len(errs) > 0 {
		return nil, fmt.Errorf("bedrock: %s: %s", errs[0].Field, errs[0].Msg)
	}
	p := &Prober{
		target: t,
		region: t.Options[OptRegion],
		grID:   t.Options[OptGuardrailID],
		grVer:  t.Options[OptGuardrailVersion],
		apiKey: t.APIKey,
		signer: sigv4.New(),
		now:    time.Now,
	}
	p.base = strings.TrimSuffix(t.BaseURL, "/")
	if p.base == "" {
		p.base = "https://bedrock-runtime." + p.region + ".amazonaws.com"
	}
	if p.apiKey == "" {
		p.creds = credentials.Credentials{
			AccessKeyID:     os.Getenv(EnvAccessKeyID),
			SecretAccessKey: os.Getenv(EnvSecretAccessKey),
			SessionToken:    os.Getenv(EnvSessionToken),
		}
		var missing []string
		if p.creds.AccessKeyID == "" {
			missing = append(missing, EnvAccessKeyID)
		}
		if p.creds.SecretAccessKey == "" {
			missing = append(missing, EnvSecretAccessKey)
		}
		if len(missing) > 0 {
			p.credErr = fmt.Errorf("bedrock: environment variable %s not set (SigV4 credentials; or set api_key_env to a Bedrock API key variable)", strings.Join(missing, " and "))
		}
	}
	return p, nil
}

// CredentialsError reports whether the prober can sign what it sends: nil
// when it holds a Bedrock API key or both SigV4 variables, else an error
// naming each missing variable (never a value). Authorize returns the same
// error. Callers that build a prober to send check it right after New;
// callers that only render or classify need not.
func (p *Prober) CredentialsError() error { return p.credErr }

// EscapeLabel percent-encodes s as one URI path segment the way AWS SDKs
// encode path labels: every byte except A-Z a-z 0-9 - . _ ~ is escaped, so
// "anthropic.claude-3-haiku-20240307-v1:0" becomes
// "anthropic.claude-3-haiku-20240307-v1%3A0" and an ARN's '/' becomes %2F.
func EscapeLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Canonical request bodies. Field order is the wire order; no maps.

type textBlock struct {
	Text string `json:"text"`
}

type message struct {
	Role    string      `json:"role"`
	Content []textBlock `json:"content"`
}

type inferenceConfig struct {
	MaxTokens   int     `json:"maxTokens,omitempty"`
	Temperature float64 `json:"temperature"`
}

type guardrailConfig struct {
	GuardrailIdentifier string `json:"guardrailIdentifier"`
	GuardrailVersion    string `json:"guardrailVersion"`
	Trace               string `json:"trace"`
}

// ConverseRequest is the canonical Converse body.
type ConverseRequest struct {
	Messages        []message        `json:"messages"`
	System          []textBlock      `json:"system,omitempty"`
	InferenceConfig inferenceConfig  `json:"inferenceConfig"`
	GuardrailConfig *guardrailConfig `json:"guardrailConfig,omitempty"`
}

type guardrailText struct {
	Text textBlock `json:"text"`
}

// ApplyGuardrailRequest is the canonical ApplyGuardrail body.
type ApplyGuardrailRequest struct {
	Source  string          `json:"source"`
	Content []guardrailText `json:"content"`
}

// Render returns the canonical Converse or ApplyGuardrail request for pr.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	var (
		path string
		body any
	)
	if p.target.Endpoint == EndpointGuardrail {
		ag := ApplyGuardrailRequest{Source: "INPUT"}
		for _, m := range pr.Messages {
			switch m.Role {
			case "user":
				ag.Content = append(ag.Content, guardrailText{Text: textBlock{Text: m.Content}})
			case "system", "assistant":
				// ApplyGuardrail with source INPUT guards what the user sent.
			default:
				return nil, fmt.Errorf("bedrock: unsupported role %q", m.Role)
			}
		}
		if len(ag.Content) == 0 {
			return nil, errNoUser
		}
		path = endpointPath(p.target)
		body = ag
	} else {
		cr := ConverseRequest{InferenceConfig: inferenceConfig{MaxTokens: p.target.MaxTokens, Temperature: p.target.Temperature}}
		for _, m := range pr.Messages {
			switch m.Role {
			case "system":
				cr.System = append(cr.System, textBlock{Text: m.Content})
			case "user", "assistant":
				// Converse refuses a conversation whose roles do not
				// alternate ("A conversation must alternate between user
				// and assistant roles"): consecutive turns of one role
				// (two user messages, or two around a system message,
				// which goes to the top-level system) are one message
				// with a text block each, in order, as the Anthropic
				// Messages API combines them itself.
				if n := len(cr.Messages); n > 0 && cr.Messages[n-1].Role == m.Role {
					cr.Messages[n-1].Content = append(cr.Messages[n-1].Content, textBlock{Text: m.Content})
					continue
				}
				cr.Messages = append(cr.Messages, message{Role: m.Role, Content: []textBlock{{Text: m.Content}}})
			default:
				return nil, fmt.Errorf("bedrock: unsupported role %q", m.Role)
			}
		}
		if len(cr.Messages) == 0 {
			return nil, errNoUser
		}
		if cr.Messages[0].Role != "user" {
			// Converse refuses it too ("A conversation must start with a
			// user message"): a 400 on every run, never a verdict. Said
			// at render time instead (plan, run: render_error).
			return nil, fmt.Errorf("bedrock: probe %s: Converse needs the conversation to open with a user message (system messages aside), not %s", pr.ID, cr.Messages[0].Role)
		}
		if p.grID != "" {
			cr.GuardrailConfig = &guardrailConfig{GuardrailIdentifier: p.grID, GuardrailVersion: p.grVer, Trace: "enabled"}
		}
		path = endpointPath(p.target)
		body = cr
	}
	b, err := wire.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("bedrock: render body: %w", err)
	}
	return &probes.Request{
		Method: http.MethodPost,
		URL:    p.base + path,
		Path:   path,
		Header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}},
		Body:   b,
	}, nil
}

// Authorize signs r with SigV4 (or adds the Bedrock API key as a bearer
// token). The payload hash is computed from r's body, which is restored.
// r's URL must keep the escaped path Render produced (http.NewRequest on
// Request.URL does): SigV4 signs URL.EscapedPath, escaped once more as AWS
// requires for every service but S3. A prober built without credentials
// returns CredentialsError and leaves r unsigned: nothing is sent.
func (p *Prober) Authorize(_ context.Context, r *http.Request) error {
	if p.apiKey != "" {
		r.Header.Set("Authorization", "Bearer "+p.apiKey)
		return nil
	}
	if p.credErr != nil {
		return p.credErr
	}
	body, err := readBody(r)
	if err != nil {
		return fmt.Errorf("bedrock: read body for signing: %w", err)
	}
	sum := sha256.Sum256(body)
	err = p.signer.SignRequest(&sigv4.SignRequestInput{
		Request:     r,
		PayloadHash: sum[:],
		Credentials: p.creds,
		Service:     SigningName,
		Region:      p.region,
		Time:        p.now(),
	})
	if err != nil {
		return errors.New("bedrock: sign request: " + p.scrub(err.Error()))
	}
	return nil
}

// readBody returns r's body bytes and leaves r readable again.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.GetBody != nil {
		rc, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, nil
}

// secrets returns the credential values that must never be stored.
func (p *Prober) secrets() []string {
	var out []string
	for _, s := range []string{p.creds.SecretAccessKey, p.creds.SessionToken, p.apiKey} {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	return out
}

// Secrets returns the credential values the prober holds (the SigV4
// secret access key and session token, or the Bedrock API key): those
// redacted from anything stored or logged, the standard library's log of
// what an upstream sent past its Content-Length included.
func (p *Prober) Secrets() []string { return p.secrets() }

func (p *Prober) scrub(s string) string {
	for _, sec := range p.secrets() {
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return s
}

// Redact returns b with any credential value replaced by [REDACTED]. AWS
// signature errors echo the canonical request, including the
// x-amz-security-token header; callers storing raw response bodies should
// pass them through Redact. JSON-escaped spellings count too (AWS secret
// keys contain "/", which JSON may escape as "\/").
func (p *Prober) Redact(b []byte) []byte {
	return wire.RedactBytes(b, p.secrets()...)
}

// Generates reports whether the requests have a model generate output:
// not for endpoint guardrail (ApplyGuardrail checks the input; no model
// runs, and the request carries no maxTokens).
func (p *Prober) Generates() bool { return p.target.Endpoint != EndpointGuardrail }
