package bedrock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// Wire shapes of the responses (field names per the Bedrock Runtime API
// reference and aws-sdk-go-v2 service/bedrockruntime).

// detected is a finding's policy action. Only what the adapter reads is
// decoded: bookkeeping members of a finding (detected, filterStrength,
// threshold, a topic's type, the match) are left out, so that one of them
// of an unexpected type cannot make the whole assessment unreadable and
// drop its signals.
type detected struct {
	Action string `json:"action"`
}

type assessment struct {
	TopicPolicy *struct {
		Topics []struct {
			Name string `json:"name"`
			detected
		} `json:"topics"`
	} `json:"topicPolicy"`
	ContentPolicy *struct {
		Filters []struct {
			Type       string `json:"type"`
			Confidence string `json:"confidence"`
			detected
		} `json:"filters"`
	} `json:"contentPolicy"`
	WordPolicy *struct {
		CustomWords []struct {
			detected
		} `json:"customWords"`
		ManagedWordLists []struct {
			Type string `json:"type"`
			detected
		} `json:"managedWordLists"`
	} `json:"wordPolicy"`
	SensitiveInformationPolicy *struct {
		PiiEntities []struct {
			Type string `json:"type"`
			detected
		} `json:"piiEntities"`
		Regexes []struct {
			Name string `json:"name"`
			detected
		} `json:"regexes"`
	} `json:"sensitiveInformationPolicy"`
	ContextualGroundingPolicy *struct {
		Filters []struct {
			Type  string     `json:"type"`
			Score wire.Score `json:"score"` // bookkeeping: odd is noted, never fatal
			detected
		} `json:"filters"`
	} `json:"contextualGroundingPolicy"`
}

// knownAssessmentKeys are the GuardrailAssessment members this adapter
// knows; any other key is recorded in Result.Unknown (a new policy type is
// a change worth seeing).
var knownAssessmentKeys = map[string]bool{
	"topicPolicy": true, "contentPolicy": true, "wordPolicy": true,
	"sensitiveInformationPolicy": true, "contextualGroundingPolicy": true,
	"automatedReasoningPolicy": true, "invocationMetrics": true, "appliedGuardrailDetails": true,
}

type contentBlock struct {
	Text *string `json:"text"`
}

// converseResponse is a Converse answer. The verdict is read from
// stopReason, the guardrail trace and (for a non-block stop reason) the
// output message, which are decoded strictly. Bookkeeping parts — usage,
// metrics, the prompt router — are kept raw and decoded leniently
// (decodeLenient): a wrongly typed one is noted in Unknown, never fatal.
type converseResponse struct {
	Output     json.RawMessage `json:"output"`
	StopReason string          `json:"stopReason"` // null reads as ""
	Usage      json.RawMessage `json:"usage"`
	Metrics    json.RawMessage `json:"metrics"`
	Trace      *struct {
		Guardrail *struct {
			InputAssessment   map[string]json.RawMessage   `json:"inputAssessment"`
			OutputAssessments map[string][]json.RawMessage `json:"outputAssessments"`
			ActionReason      wire.Text                    `json:"actionReason"` // message text only
		} `json:"guardrail"`
		PromptRouter json.RawMessage `json:"promptRouter"`
	} `json:"trace"`
}

type converseOutput struct {
	Message *struct {
		Role    wire.Text      `json:"role"`
		Content []contentBlock `json:"content"`
	} `json:"message"`
}

type converseUsage struct {
	InputTokens  wire.Count `json:"inputTokens"`
	OutputTokens wire.Count `json:"outputTokens"`
	TotalTokens  wire.Count `json:"totalTokens"`
}

type converseMetrics struct {
	LatencyMs wire.Count `json:"latencyMs"`
}

type promptRouter struct {
	InvokedModelID wire.Text `json:"invokedModelId"`
}

// applyResponse is an ApplyGuardrail answer. The verdict is read from
// action and the assessments; actionReason and the outputs are message
// text only and are decoded leniently.
type applyResponse struct {
	Action       string            `json:"action"`
	ActionReason wire.Text         `json:"actionReason"`
	Outputs      json.RawMessage   `json:"outputs"`
	Assessments  []json.RawMessage `json:"assessments"`
}

type applyOutput struct {
	Text wire.Text `json:"text"`
}

// decodeLenient decodes a bookkeeping part raw into v, whose members must
// themselves be lenient (wire.Count, wire.Text). It reports whether the
// part is present (not absent, not null) and whether it was odd: present
// but not decodable into v (an object expected, a string or number sent).
func decodeLenient(raw json.RawMessage, v any) (present, odd bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return false, false
	}
	if json.Unmarshal(raw, v) != nil {
		return true, true
	}
	return true, false
}

type errorBody struct {
	Message string `json:"message"` // also matches "Message" (encoding/json folds case)
	Type    string `json:"__type"`
	Code    string `json:"code"`
	// OriginalStatusCode is the model's own status that a
	// ModelErrorException (HTTP 424) passes on.
	OriginalStatusCode json.Number `json:"originalStatusCode"`
}

// modelFailed reports whether a ModelErrorException passes on a failure of
// the model's server (5xx) or its throttling (429): the same request may
// succeed later. Any other original status, or none, is a problem with the
// request (a prompt too long for the model, a parameter it rejects).
func (e errorBody) modelFailed() bool {
	n, err := e.OriginalStatusCode.Int64()
	return err == nil && (n == http.StatusTooManyRequests || n >= 500 && n < 600)
}

var contentCategory = map[string]string{
	"HATE":          probes.CatHate,
	"INSULTS":       probes.CatHarassment,
	"SEXUAL":        probes.CatSexual,
	"VIOLENCE":      probes.CatViolence,
	"MISCONDUCT":    probes.CatIllicit,
	"PROMPT_ATTACK": probes.CatJailbreak,
}

var knownLevel = map[string]bool{"NONE": true, "LOW": true, "MEDIUM": true, "HIGH": true}

var transientErrors = map[string]bool{
	"ThrottlingException":         true,
	"ServiceUnavailableException": true,
	"InternalServerException":     true,
	"ModelNotReadyException":      true,
	"ModelTimeoutException":       true,
}

var clientErrors = map[string]bool{
	"ValidationException":           true,
	"AccessDeniedException":         true,
	"ResourceNotFoundException":     true,
	"ModelErrorException":           true, // unless modelFailed
	"ServiceQuotaExceededException": true,
	"ConflictException":             true,
}

// knownStop maps stop reasons (aws-sdk-go-v2 types.StopReason) that answer
// normally to true.
var knownStop = map[string]bool{
	"end_turn": true, "max_tokens": true, "stop_sequence": true, "tool_use": true,
	"malformed_model_output": true, "malformed_tool_use": true,
}

// assessmentReader accumulates signals from guardrail assessments.
type assessmentReader struct {
	r       *probes.Result
	prefix  string
	fired   []string // normalized categories of fired signals
	blocked bool     // some policy's action was BLOCKED
	acted   bool     // some policy's action was BLOCKED, ANONYMIZED or unknown
}

// action reads a policy action: whether the signal fires and its label.
func (a *assessmentReader) action(d detected) bool {
	switch d.Action {
	case "BLOCKED":
		a.blocked, a.acted = true, true
		return true
	case "ANONYMIZED":
		a.acted = true
		return true
	case "NONE", "":
		return false
	default:
		a.r.Unknown = append(a.r.Unknown, "guardrail_action:"+d.Action)
		a.acted = true
		return true
	}
}

func (a *assessmentReader) add(s probes.Signal) {
	s.Raw = a.prefix + s.Raw
	for _, have := range a.r.Signals {
		if have == s {
			return
		}
	}
	if s.Fired {
		a.fired = append(a.fired, s.Category)
	}
	a.r.Signals = append(a.r.Signals, s)
}

func (a *assessmentReader) read(raw json.RawMessage) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		a.r.Unknown = append(a.r.Unknown, "assessment:unparseable")
		return
	}
	for _, k := range sortedKeys(keys) {
		if !knownAssessmentKeys[k] {
			a.r.Unknown = append(a.r.Unknown, "assessment_key:"+k)
		}
	}
	var as assessment
	if json.Unmarshal(raw, &as) != nil {
		a.r.Unknown = append(a.r.Unknown, "assessment:unparseable")
		return
	}
	if cp := as.ContentPolicy; cp != nil {
		for _, f := range cp.Filters {
			cat, ok := contentCategory[f.Type]
			if !ok {
				cat = probes.CatOther
				a.r.Unknown = append(a.r.Unknown, "filter_type:"+f.Type)
			}
			if f.Confidence != "" && !knownLevel[f.Confidence] {
				a.r.Unknown = append(a.r.Unknown, "confidence:"+f.Confidence)
			}
			a.add(probes.Signal{Category: cat, Raw: "contentPolicy." + f.Type, Severity: f.Confidence, Fired: a.action(f.detected)})
		}
	}
	if tp := as.TopicPolicy; tp != nil {
		for _, t := range tp.Topics {
			a.add(probes.Signal{Category: probes.CatOther, Raw: "topicPolicy." + t.Name, Severity: t.Action, Fired: a.action(t.detected)})
		}
	}
	if wp := as.WordPolicy; wp != nil {
		for _, w := range wp.CustomWords {
			a.add(probes.Signal{Category: probes.CatOther, Raw: "wordPolicy.customWords", Severity: w.Action, Fired: a.action(w.detected)})
		}
		for _, w := range wp.ManagedWordLists {
			a.add(probes.Signal{Category: probes.CatOther, Raw: "wordPolicy." + w.Type, Severity: w.Action, Fired: a.action(w.detected)})
		}
	}
	if sp := as.SensitiveInformationPolicy; sp != nil {
		for _, e := range sp.PiiEntities {
			a.add(probes.Signal{Category: probes.CatPrivacy, Raw: "sensitiveInformationPolicy." + e.Type, Severity: e.Action, Fired: a.action(e.detected)})
		}
		for _, e := range sp.Regexes {
			a.add(probes.Signal{Category: probes.CatPrivacy, Raw: "sensitiveInformationPolicy.regex." + e.Name, Severity: e.Action, Fired: a.action(e.detected)})
		}
	}
	if gp := as.ContextualGroundingPolicy; gp != nil {
		for _, f := range gp.Filters {
			s := probes.Signal{Category: probes.CatOther, Raw: "contextualGroundingPolicy." + f.Type, Severity: f.Action, Fired: a.action(f.detected)}
			s.Score, s.HasScore = f.Score.V, f.Score.Has
			if f.Score.Odd {
				a.r.Unknown = append(a.r.Unknown, "contextualGroundingPolicy.filters.score:bad_type")
			}
			a.add(s)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requestID returns the x-amzn-RequestId header.
func requestID(h http.Header) string {
	if h == nil {
		return ""
	}
	for _, k := range []string{"x-amzn-RequestId", "x-amz-request-id"} {
		if v := h.Get(k); v != "" {
			return wire.Truncate(v, 200)
		}
	}
	return ""
}

// errorType reads the AWS error type: the x-amzn-ErrorType header up to
// its first ':', else the body's __type or code (after any '#').
func errorType(h http.Header, e errorBody) string {
	t := ""
	if h != nil {
		t = h.Get("x-amzn-ErrorType")
	}
	if t == "" {
		t = e.Type
	}
	if t == "" {
		t = e.Code
	}
	if i := strings.IndexByte(t, ':'); i >= 0 {
		t = t[:i]
	}
	if i := strings.LastIndexByte(t, '#'); i >= 0 {
		t = t[i+1:]
	}
	return strings.TrimSpace(t)
}

// Classify reads one attempt's response.
func (p *Prober) Classify(_ *probes.Request, resp *probes.Response) probes.Result {
	r := p.classify(resp)
	// A block whose categories the provider did not name keeps none (an
	// empty, non-nil Categories), rather than Finish's fallback of every
	// signal that fired anywhere in the trace.
	noCats := r.Categories != nil && len(r.Categories) == 0
	r = wire.Finish(wire.Redact(r, p.secrets()...))
	if noCats {
		r.Categories = nil
	}
	return r
}

func (p *Prober) classify(resp *probes.Response) probes.Result {
	if resp.Err != nil {
		return wire.Transport(resp)
	}
	// A UTF-8 byte order mark before the body is skipped (the stored body
	// keeps it).
	resp = wire.SkipBOM(resp)
	r := probes.Result{RequestID: requestID(resp.Header)}
	if resp.Status >= 200 && resp.Status < 300 {
		if p.target.Endpoint == EndpointGuardrail {
			return p.classifyApply(resp, r)
		}
		return p.classifyConverse(resp, r)
	}
	var e errorBody
	_ = json.Unmarshal(resp.Body, &e)
	typ := errorType(resp.Header, e)
	r.Message = e.Message
	r.Reason = strings.TrimSuffix(strconv.Itoa(resp.Status)+":"+typ, ":")
	filter := contentFilterStage(typ, e.Message)
	switch {
	case transientErrors[typ], typ == "ModelErrorException" && e.modelFailed():
		r.Class = probes.Transient
		r.RetryAfter = wire.RetryAfter(resp.Header, p.now())
	case resp.Status >= 400 && resp.Status < 500 && wire.IsAbuse(typ, "", e.Message):
		r.Class, r.Stage = probes.AbuseBlock, probes.StageAccount
	case filter != probes.StageNone:
		// Bedrock's own content filter refused the prompt or withheld the
		// generated text: a verdict (never retried), with no category
		// named. Account enforcement above wins over it.
		r.Stage = filter
		r.Class, r.Reason = probes.BlockedInput, "content_filter_input"
		if filter == probes.StageOutput {
			r.Class, r.Reason = probes.BlockedOutput, "content_filter_output"
		}
		r.Categories = []string{}
	case clientErrors[typ]:
		r.Class = probes.ClientError
	default:
		r.Class = wire.StatusClass(resp.Status)
		if r.Class == probes.Transient {
			r.RetryAfter = wire.RetryAfter(resp.Header, p.now())
		}
		if typ != "" && resp.Status >= 400 {
			r.Unknown = append(r.Unknown, "error_type:"+typ)
		}
	}
	return r
}

// Bedrock's content-filter wordings, lower case. Amazon's models (Titan,
// Nova) answer a prompt their filter flags with a 400 ValidationException
// "This request has been blocked by our content filters. …" (Nova's user
// guide, "Error handling": "RAI input deflection"; the rest of the message
// varies: "Please adjust your text prompt to submit a new request.", or
// "Our filters automatically flagged this prompt because it may conflict
// our AUP or AWS Responsible AI Policy. …"). Flagged output is withheld in
// a successful answer carrying "The generated text has been blocked by our
// content filters." ("RAI output deflection": no exception; through
// Converse, as the answer's whole text: isFilterNotice); the same wording
// in a ValidationException is read as an output block too.
const (
	filterInputPrefix  = "this request has been blocked by our content filters"
	filterOutputPrefix = "the generated text has been blocked by our content filters"
)

// contentFilterStage reports the stage at which Bedrock's content filter
// blocked a request, read from a ValidationException's message: input when
// the message opens with the request wording, output when it opens with the
// generated-text wording, StageNone otherwise — and always for any other
// error type (the wording alone, in a body of another type, proves
// nothing). The message is compared without case and surrounding space.
func contentFilterStage(typ, message string) probes.Stage {
	if typ != "ValidationException" {
		return probes.StageNone
	}
	m := strings.ToLower(strings.TrimSpace(message))
	switch {
	case strings.HasPrefix(m, filterInputPrefix):
		return probes.StageInput
	case strings.HasPrefix(m, filterOutputPrefix):
		return probes.StageOutput
	}
	return probes.StageNone
}

// isFilterNotice reports whether an answer's whole text is the output
// filter's notice, "The generated text has been blocked by our content
// filters." (compared without case, surrounding space or the final
// period). A longer answer that merely contains it is not one: the model
// may be quoting it.
func isFilterNotice(text string) bool {
	t := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(text)), ".")
	return t == filterOutputPrefix
}

func malformed(resp *probes.Response, r probes.Result) probes.Result {
	r.Class, r.Reason = probes.Transient, "malformed_response"
	if resp.Truncated {
		r.Reason = "truncated_response"
	}
	return r
}

func (p *Prober) classifyApply(resp *probes.Response, r probes.Result) probes.Result {
	var ar applyResponse
	if err := json.Unmarshal(resp.Body, &ar); err != nil || ar.Action == "" {
		return malformed(resp, r)
	}
	r.ModelID = p.target.Model
	var outputs []applyOutput
	_, outputsOdd := decodeLenient(ar.Outputs, &outputs)
	if outputsOdd {
		outputs = nil
	}
	textOdd := false
	for _, o := range outputs {
		textOdd = textOdd || o.Text.Odd
	}
	r.Unknown = append(r.Unknown, wire.OddFields(
		"actionReason", ar.ActionReason.Odd,
		"outputs", outputsOdd,
		"outputs.text", textOdd,
	)...)
	in := &assessmentReader{r: &r}
	for _, a := range ar.Assessments {
		in.read(a)
	}
	r.Reason = ar.Action
	if !ar.ActionReason.Odd {
		r.Message = ar.ActionReason.S
	}
	if r.Message == "" && len(outputs) > 0 && !outputs[0].Text.Odd {
		r.Message = outputs[0].Text.S
	}
	switch ar.Action {
	case "GUARDRAIL_INTERVENED":
		r.Class, r.Stage = probes.BlockedInput, probes.StageInput
		r.Categories = in.fired
	case "NONE":
		r.Class = probes.Allowed
	default:
		r.Unknown = append(r.Unknown, "action:"+ar.Action)
		if in.acted {
			r.Class, r.Stage = probes.BlockedInput, probes.StageInput
			r.Categories = in.fired
		} else {
			r.Class = probes.Allowed
		}
	}
	return r
}

// blockStop are the Converse stop reasons that are blocks whatever the
// output carries (a guardrail may replace or omit the message).
var blockStop = map[string]bool{"guardrail_intervened": true, "content_filtered": true}

func (p *Prober) classifyConverse(resp *probes.Response, r probes.Result) probes.Result {
	var cr converseResponse
	if err := json.Unmarshal(resp.Body, &cr); err != nil || cr.StopReason == "" {
		// No stop reason (absent, null or ""): not an answer.
		return malformed(resp, r)
	}
	var out converseOutput
	_, outOdd := decodeLenient(cr.Output, &out)
	hasContent := !outOdd && out.Message != nil && out.Message.Content != nil
	if !hasContent && !blockStop[cr.StopReason] && cr.StopReason != "model_context_window_exceeded" {
		// A normal stop with no output.message.content (absent, null or
		// of the wrong type) carries no answer to read a verdict from.
		return malformed(resp, r)
	}
	r.ModelID = p.target.Model
	var usage converseUsage
	usagePresent, usageOdd := decodeLenient(cr.Usage, &usage)
	if usageOdd {
		usage = converseUsage{}
	}
	r.TokensIn, r.TokensOut = usage.InputTokens.N, usage.OutputTokens.N
	var metrics converseMetrics
	_, metricsOdd := decodeLenient(cr.Metrics, &metrics)
	if metricsOdd {
		metrics = converseMetrics{}
	}
	var router promptRouter
	routerOdd := false
	if cr.Trace != nil {
		_, routerOdd = decodeLenient(cr.Trace.PromptRouter, &router)
		if routerOdd {
			router = promptRouter{}
		}
	}
	actionReasonOdd := cr.Trace != nil && cr.Trace.Guardrail != nil && cr.Trace.Guardrail.ActionReason.Odd
	roleOdd := hasContent && out.Message.Role.Odd
	r.Unknown = append(r.Unknown, wire.OddFields(
		// The output is only odd here for a block, whose verdict is not
		// read from it.
		"output", outOdd,
		"output.message.role", roleOdd,
		"usage", usageOdd,
		"usage.inputTokens", usage.InputTokens.Odd,
		"usage.outputTokens", usage.OutputTokens.Odd,
		"usage.totalTokens", usage.TotalTokens.Odd,
		"metrics", metricsOdd,
		"metrics.latencyMs", metrics.LatencyMs.Odd,
		"trace.promptRouter", routerOdd,
		"trace.promptRouter.invokedModelId", router.InvokedModelID.Odd,
		"trace.guardrail.actionReason", actionReasonOdd,
	)...)
	in := &assessmentReader{r: &r}
	outA := &assessmentReader{r: &r, prefix: "output."}
	actionReason := ""
	if t := cr.Trace; t != nil {
		if id := router.InvokedModelID; id.S != "" && !id.Odd {
			r.ModelID = id.S
		}
		if g := t.Guardrail; g != nil {
			if !g.ActionReason.Odd {
				actionReason = g.ActionReason.S
			}
			for _, k := range sortedKeys(g.InputAssessment) {
				in.read(g.InputAssessment[k])
			}
			for _, k := range sortedKeys(g.OutputAssessments) {
				for _, a := range g.OutputAssessments[k] {
					outA.read(a)
				}
			}
		}
	}
	var text strings.Builder
	if hasContent {
		for _, c := range out.Message.Content {
			if c.Text != nil {
				text.WriteString(*c.Text)
			}
		}
	}
	r.Reason = cr.StopReason
	switch cr.StopReason {
	case "guardrail_intervened":
		r.Message = actionReason
		if r.Message == "" {
			r.Message = text.String()
		}
		switch {
		case in.blocked:
			r.Stage, r.Categories = probes.StageInput, in.fired
		case outA.acted:
			r.Stage, r.Categories = probes.StageOutput, outA.fired
		case in.acted:
			r.Stage, r.Categories = probes.StageInput, in.fired
		case usagePresent && !usageOdd && !usage.OutputTokens.Odd && usage.OutputTokens.N == 0:
			// No usable trace: no output tokens means the model never ran.
			// A wrongly typed outputTokens is not read as 0.
			r.Stage = probes.StageInput
		default:
			r.Stage = probes.StageOutput
		}
		if r.Stage == probes.StageInput {
			r.Class = probes.BlockedInput
		} else {
			r.Class = probes.BlockedOutput
		}
		if len(r.Categories) == 0 {
			r.Categories = []string{}
		}
		return r
	case "content_filtered":
		r.Class, r.Stage = probes.BlockedOutput, probes.StageOutput
		r.Categories = outA.fired
		if len(r.Categories) == 0 {
			r.Categories = []string{}
		}
		return r
	case "model_context_window_exceeded":
		r.Class = probes.ClientError
		return r
	}
	if !knownStop[cr.StopReason] {
		r.Unknown = append(r.Unknown, "stop_reason:"+cr.StopReason)
	}
	if isFilterNotice(text.String()) {
		// Amazon's models withhold flagged output in a successful answer
		// whose whole text is the filter's notice (Nova's "RAI output
		// deflection"): a block at the output stage, read from the text.
		r.Class, r.Stage, r.Heuristic = probes.BlockedOutput, probes.StageOutput, true
		r.Reason = "content_filter_output_text"
		r.Message = text.String()
		r.Categories = []string{}
		return r
	}
	if wire.IsRefusal(text.String()) {
		r.Class, r.Stage, r.Heuristic = probes.ModelRefusal, probes.StageOutput, true
		r.Reason = "refusal_text"
		r.Message = text.String()
		r.Categories = []string{}
		return r
	}
	r.Class = probes.Allowed
	return r
}
