// Package probes defines driftprobe's core vocabulary: the verdict taxonomy,
// normalized policy categories, the canonical request a provider renders for a
// probe, and the Prober interface every provider package implements.
//
// The package is a leaf: it imports no provider. Providers live in
// sub-packages (probes/sim, probes/openai, ...) and register themselves with
// Register in an init function.
//
// The taxonomy follows one rule: whether an outcome may be retried is a
// property of its Class (Class.Retryable), never of a status code list in the
// retry layer. A filter block is a deterministic function of the request bytes
// and the provider's policy version, so re-sending identical bytes cannot
// change it; only transient classes are retried, and only transient classes
// count against a circuit breaker.
package probes
