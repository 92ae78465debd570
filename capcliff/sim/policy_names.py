"""The admission policies' names and the settings a deployment resolves before simulating, kept
apart from `policies` (which needs numpy) so that `capcliff memory` never imports it."""

from __future__ import annotations

# capcliff's kv-aware admission keeps this fraction of the KV cache as headroom by default.
DEFAULT_KV_MARGIN = 0.05

POLICY_NAMES = (
    "vllm", "vllm-first-chunk", "vllm-v0", "sglang", "trtllm-no-evict", "trtllm-max-util",
    "kv-aware",
)  # fmt: skip
# The first vLLM release whose scheduler admits on the whole sequence by default
# (`scheduler_reserve_full_isl = True`, PR #37307, merged 2026-03-17): a named assumption, the
# first minor release after the merge.
VLLM_FULL_SEQUENCE_RELEASE = (0, 18, 0)
