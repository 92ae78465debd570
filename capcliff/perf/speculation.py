"""Speculative decoding: the acceptance model and what one speculative step costs.

One speculative step of a decoding sequence = K draft passes (a small model; none for n-gram
lookup) + one verification pass of the target over K + 1 query tokens (the last accepted token
and the K drafts) + rejection sampling. The verification reads the weights and the KV once but
computes K + 1 tokens' FLOPs; it accepts the drafts up to the first rejection, plus the target's
own next token, so a step yields

    E = 1 + sum_{i=1..K} prod_{j<=i} a_j          tokens per sequence (1 <= E <= K + 1)

for conditional per-position acceptance rates a_j (Leviathan et al. 2023, arXiv 2211.17192,
section 3.1, with position-dependent rates). Engines report the same quantity as the mean
acceptance length (SGLang's `accept length`, vLLM's `mean acceptance length`).

Named assumptions (printed with every speculative result, `SPEC_ASSUMPTIONS`):
- mean field: each simulated decode step stands for 1/E of a speculative step, so a sequence
  still advances one token per step (output lengths and KV growth per token stay exact) and a
  decode step takes the speculative step's time divided by E;
- one roofline per speculative step: the draft passes' and the verification's bytes are summed,
  and so are their FLOPs, before the max (a draft pass reads a small fraction of the weights);
- a draft pass pays its roofline and communication but no engine step overhead of its own
  (drafts replay CUDA graphs inside the engine step);
- steps that carry a prefill chunk are priced and advanced as without speculation (SGLang runs
  them apart from the decodes, speculating or not: memory/engines.py `SGLANG_MIXED_CHUNK`).
"""

from __future__ import annotations

from dataclasses import dataclass

from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.draft import MAX_SPECULATIVE_TOKENS, SpecMethod

# SGLang caps the running batch when speculation is on and --max-running-requests is not given:
# server_args.py `_handle_speculative_decoding` (0.4.x-0.5.x; arg_groups/speculative_hook.py
# later): "Max running requests is reset to 48 for speculative decoding. You can override this
# by explicitly setting --max-running-requests." vLLM and TensorRT-LLM keep their batch caps
# (TensorRT-LLM's `max_concurrency`, above which it stops speculating, defaults to None:
# "speculation will always be on").
SGLANG_SPECULATIVE_MAX_RUNNING_REQUESTS = 48

# SGLang runs EAGLE/NEXTN (MTP) speculation with its overlap scheduler off unless
# SGLANG_ENABLE_SPEC_V2 is set: server_args.py `_handle_speculative_decoding` (0.5.x: `if not
# envs.SGLANG_ENABLE_SPEC_V2.get(): self.disable_overlap_schedule = True`), and environ.py of
# those releases declares `SGLANG_ENABLE_SPEC_V2 = EnvBool(False)` (the docs: "Want overlap
# scheduler (experimental): Enable SpecV2 with SGLANG_ENABLE_SPEC_V2=True"; later releases
# default it to True, and sgl-project/sglang PR #27964, 2026-06-11, retired the V1 worker);
# NGRAM turns it off whatever the variable ("The overlap scheduler and mixed chunked prefill are
# disabled because of using ngram speculative decoding").
# Without overlap the scheduler's host work of each step (scheduling, input preparation,
# result processing) runs between GPU steps. Its size per speculative step, derived from
# sgl-project/sglang PR #11398 (2025-10-09, "Beta spec-overlap for EAGLE"): Llama-3.1-8B with
# an EAGLE draft, K = 5, one request (sglang.test.send_one), V1 (no overlap) 246.80 tok/s at
# acceptance length 2.99 = 12.115 ms per step, V2 (overlap) 273.43 tok/s at 3.01 = 11.008 ms:
# 1.107 ms exposed per step. 1.1 ms; how it grows with the batch was not measured there (not
# priced: a named limitation).
SGLANG_SPEC_V1_HOST_S = 1.1e-3

SPEC_ASSUMPTIONS = (
    "speculation (mean field): a decode step = one speculative step / E, E the expected tokens "
    "per step; draft and verification in one roofline; steps with a prefill not speculated"
)

# Published acceptance figures used as defaults, as conditional per-position rates a_j.
# MTP (DeepSeek-R1, chat-formatted prompts): a_j = 0.75 x 0.86^(j-1), so E = 1.75 at K = 1,
# 2.23 at K = 2 and 2.50 at K = 3. The level is the acceptance measured where the benchmarks
# run: InferenceX (SemiAnalysisAI/InferenceX PR #649, 2026-02-05, DeepSeek-R1-0528 on SGLang)
# measured "ARs (~2.50)" with random-token prompts sent through the chat template, as every
# InferenceX MTP recipe sends them, and the same "overall AR ~2.50" on MT-Bench (without the
# template random prompts gave ~3.55, so that run drafted at least 3 tokens: K = 3 taken).
# SGLang issue #8092 (2025-07-16) logs "accept length is 1.75" for R1 MTP with one draft token,
# which the same curve gives at K = 1. The MTP module was trained with the base model and not
# updated by the chat post-training (ROCm/ATOM issue #609), so the DeepSeek-V3 report's 85-90 %
# first-token acceptance (arXiv 2412.19437, section 5.4.3) holds for raw text, not for chat
# traffic. The decay over positions is the one that takes that report's 0.85 to the mean
# acceptance length 3.2 that nebius/MTP-DeepSeek-V3-0324's card reports at K = 7 (one MTP
# layer reused for later positions accepts less at each).
MTP_FIRST_ACCEPTANCE = 0.75
MTP_ACCEPTANCE_DECAY = 0.86
# EAGLE-3: acceptance stays near-flat over positions ("training-time test", arXiv 2503.01840,
# the n-alpha table for LLaMA-3.1-8B on MT-bench: about 0.7-0.8 at every position); 0.75 taken.
EAGLE3_ACCEPTANCE = 0.75
DEFAULT_SOURCES = {
    SpecMethod.MTP: "DeepSeek-R1 MTP on chat-formatted prompts: 0.75 x 0.86^(j-1), E = 2.50 at "
    "K = 3 (InferenceX PR #649: ~2.50 on MT-Bench and on random prompts with the chat template)",
    SpecMethod.EAGLE: "EAGLE-3 paper (arXiv 2503.01840): ~0.75 per position",
}


@dataclass(frozen=True)
class Speculation:
    """A speculative-decoding setting: method, draft tokens per step K, draft model id."""

    method: SpecMethod
    num_speculative_tokens: int
    draft: str | None = None  # EAGLE: the draft checkpoint (printed in the engine flags)


# The engines' own names of the methods, in any case (vLLM's speculative_config methods and
# SGLang's --speculative-algorithm choices, vllm/config/speculative.py, sglang server_args.py):
# EAGLE3 is the EAGLE-3 head `eagle` models; NEXTN and deepseek_mtp run the model's MTP layers.
_METHOD_ALIASES = {"eagle3": "eagle", "nextn": "mtp", "deepseek_mtp": "mtp"}


def parse_speculative(text: str) -> Speculation:
    """`mtp:K`, `eagle:K[:DRAFT]` or `ngram:K` (K in 1..MAX_SPECULATIVE_TOKENS); the method in
    any case or by an engine's name for it (eagle3, nextn, deepseek_mtp)."""
    written, _, rest = text.strip().partition(":")
    method = _METHOD_ALIASES.get(written.strip().lower(), written.strip().lower())
    k_text, sep, draft = rest.partition(":")
    known = ", ".join(m.value for m in SpecMethod)
    if method not in {m.value for m in SpecMethod}:
        raise InputError(
            f"speculative: unknown method {written!r:.40} in {text!r:.60}; known: {known}"
        )
    # a K of thousands of digits stopped at Python's int() limit (4,300 digits), whose message
    # asked for sys.set_int_max_str_digits()
    digits = len(str(MAX_SPECULATIVE_TOKENS))
    if (
        not k_text.isdecimal()
        or len(k_text.lstrip("0")) > digits
        or not 1 <= int(k_text) <= MAX_SPECULATIVE_TOKENS
    ):
        raise InputError(
            f"speculative: K must be an integer from 1 to {MAX_SPECULATIVE_TOKENS} "
            f"({method}:K), got {text!r:.60}"
        )
    if sep and not draft.strip():  # eagle:3: names a draft and leaves it out
        raise InputError(
            f"speculative: the draft model after {method}:{k_text}: is empty; name it "
            f"(eagle:K:DRAFT) or drop the colon, got {text!r}"
        )
    if draft and method != SpecMethod.EAGLE.value:
        raise InputError(
            f"speculative: only eagle takes a draft model (eagle:K:DRAFT), got {text!r}"
        )
    return Speculation(SpecMethod(method), int(k_text), draft or None)


def speculative_max_num_seqs(engine: EngineName) -> int | None:
    """The engine's default cap on running sequences with speculation on, where it has its own
    (SGLang: 48); None where the engine's usual default stands."""
    return SGLANG_SPECULATIVE_MAX_RUNNING_REQUESTS if engine is EngineName.SGLANG else None


def speculative_host_s(engine: EngineName, *, overlap: bool | None) -> float:
    """Seconds of host time each step exposes with speculation on: SGLang's speculative worker
    without the overlap scheduler (`overlap` False, or None: the 0.5.x default, where EAGLE/MTP
    need SGLANG_ENABLE_SPEC_V2 and NGRAM always turns it off: "The overlap scheduler and mixed
    chunked prefill are disabled because of using ngram speculative decoding") pays
    SGLANG_SPEC_V1_HOST_S; 0 otherwise (the engine profile's own host time stands)."""
    if engine is not EngineName.SGLANG or overlap:
        return 0.0
    return SGLANG_SPEC_V1_HOST_S


def parse_acceptance(text: str) -> tuple[float, ...]:
    """Comma-separated conditional acceptance rates, each in [0, 1]."""
    try:
        rates = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"spec_acceptance: not a list of numbers: {text!r}") from None
    if not rates or any(not 0.0 <= r <= 1.0 for r in rates):
        raise InputError(f"spec_acceptance: each rate must be in [0, 1], got {text!r}")
    return rates


def expected_tokens_per_step(rates: tuple[float, ...]) -> float:
    """E = 1 + sum_{i} prod_{j<=i} a_j: tokens one speculative step yields per sequence."""
    expected, survive = 1.0, 1.0
    for rate in rates:
        survive *= rate
        expected += survive
    return expected


def default_rates(method: SpecMethod, k: int) -> tuple[float, ...]:
    """The published default conditional rates for `k` positions (`DEFAULT_SOURCES`)."""
    if method is SpecMethod.MTP:
        return tuple(MTP_FIRST_ACCEPTANCE * MTP_ACCEPTANCE_DECAY**j for j in range(k))
    if method is SpecMethod.EAGLE:
        return (EAGLE3_ACCEPTANCE,) * k
    raise InputError(
        "spec_accept_length: ngram has no published default acceptance (it depends on how much "
        "the output repeats its context); give --spec-accept-length or --spec-acceptance"
    )


@dataclass(frozen=True)
class Acceptance:
    """Expected tokens per speculative step and where the figure comes from."""

    tokens_per_step: float
    source: str


def acceptance(
    spec: Speculation, *, rates: tuple[float, ...] | None = None, length: float | None = None
) -> Acceptance:
    """E from given per-position `rates` (exactly K of them), a mean acceptance `length` (in
    [1, K + 1]), or the method's published default."""
    k = spec.num_speculative_tokens
    if rates is not None and length is not None:
        raise InputError("spec_acceptance: give either rates or --spec-accept-length, not both")
    if length is not None:
        if not 1.0 <= length <= k + 1:
            raise InputError(
                f"spec_accept_length: must be in [1, {k + 1}] for K = {k}, got {length}"
            )
        return Acceptance(length, "given mean acceptance length")
    if rates is not None:
        if len(rates) != k:
            raise InputError(
                f"spec_acceptance: needs {k} rates (one per draft position), got {len(rates)}"
            )
        return Acceptance(expected_tokens_per_step(rates), "given per-position acceptance rates")
    return Acceptance(
        expected_tokens_per_step(default_rates(spec.method, k)), DEFAULT_SOURCES[spec.method]
    )


def speculative_text(speculation: Speculation) -> str:
    """`speculation` as `--speculative` writes it: `method:K[:DRAFT]` (eagle3:3 as eagle:3)."""
    draft = f":{speculation.draft}" if speculation.draft else ""
    return f"{speculation.method.value}:{speculation.num_speculative_tokens}{draft}"
