"""Memory per GPU: parameters, weights (per-module dtypes), KV bytes per token, engine budgets.

Owns: parameter counts, weight bytes per GPU for a layout, KV bytes per token, the KV pool an
engine leaves (vLLM, SGLang, TensorRT-LLM) term by term with each term's provenance, fit verdicts
and fixes, and the `memory` command's result type.
May import: `capcliff.catalog` and the top-level `units`, `errors`, `files`.
"""
