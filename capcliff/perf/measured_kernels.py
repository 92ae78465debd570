"""Measured-kernel step times: NVIDIA aiconfigurator's per-op tables as a step-time source.

`aiconfigurator-core` (Apache-2.0, optional: `pip install '.[kernels]'`) ships measured GEMM,
attention (MLA included), MoE and NCCL tables per GPU and engine release, and prices one engine
iteration from them (`aiconfigurator_core.sdk.engine.EngineHandle`). capcliff never calls it
per step: for one deployment (model, GPU, engine, layout) it asks once for a grid of step times
and interpolates (`KernelSurrogate`), so the simulator stays O(events).

- Decode steps: `decode_step_latency(b, isl=c, osl=0)` prices b sequences at context c + 1
  (sdk/rust_engine_step.py: `s = isl + osl // 2 + 1`). For each grid batch b the step is fitted
  as a + s x c (least squares on relative error over the context grid): the simulator's decode
  line is affine in the summed context (`DecodeLine`), and aiconfigurator's decode step is
  close to affine in it (attention reads the KV; the weights do not depend on it). a and s are
  interpolated linearly in b between grid batches.
- Steps with a prefill: `predict_prefill_latency(bs, isl, prefix)` over a grid of prefill tokens
  n and mean attended keys per prefill token (one chunk after `prefix` tokens, or several short
  prompts when that mean is below a whole prompt's), interpolated bilinearly; the decoding
  sequences of the step add their attention as in aiconfigurator's own mixed step (its
  non-attention ops run once over all tokens: sdk/rust_engine_step.py,
  estimate_mixed_step_latency_with_rust).
- Layouts: TP, EP (moe_tp = MoE ranks / ep), PP (a pass of m = min(PP, sequences)
  micro-batches costs aiconfigurator's whole-model time of one micro-batch, as `StepTimeModel`
  prices a pass), attention DP (aiconfigurator's batch is per attention-DP rank:
  sdk/backends/base_backend.py `global_bs = bs * attention_dp_size`; the lockstep step is the
  busiest rank's, with the MoE layers inside it, so no shared term is added).

Named assumptions (ASSUMPTIONS): the KV dtype is capcliff's, attention runs in bf16
(`fmha_quant_mode`), the weights as the checkpoint ships unless overridden to bf16, fp8 or nvfp4;
no per-step host overhead is added (aiconfigurator's step is its kernels'); the tables are those
of aiconfigurator's current release of the engine, whatever `--engine-version` says.

Only this module imports aiconfigurator, and only when a surrogate is built.
"""

from __future__ import annotations

import bisect
import importlib.util
import logging
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.perf.step_time import StepTimeModel
from capcliff.units import KVDType, WeightDType

INSTALL_HINT = "pip install '.[kernels]'"
ASSUMPTIONS = (
    "attention in bf16, no per-step host overhead, aiconfigurator's current tables for the engine"
)
# capcliff hardware id -> aiconfigurator system (aiconfigurator_core/systems/*.yaml).
AIC_SYSTEMS = {
    "h100-sxm": "h100_sxm",
    "h200-sxm": "h200_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200": "gb200",
}
AIC_BACKENDS = {EngineName.VLLM: "vllm", EngineName.SGLANG: "sglang", EngineName.TRTLLM: "trtllm"}
# Checkpoints Meta renamed (the same config.json): capcliff's card -> aiconfigurator's file.
MODEL_ALIASES = {
    "meta-llama/Llama-3.1-8B": "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B": "meta-llama/Meta-Llama-3.1-70B",
    "meta-llama/Llama-3.1-405B": "meta-llama/Meta-Llama-3.1-405B",
}
# Weight overrides aiconfigurator prices (GEMM mode, MoE mode); others are refused.
AIC_WEIGHTS = {
    WeightDType.BF16: ("bfloat16", "bfloat16"),
    WeightDType.FP16: ("bfloat16", "bfloat16"),
    WeightDType.FP8: ("fp8", "fp8"),
    WeightDType.NVFP4: ("nvfp4", "nvfp4"),
}
AIC_KV = {KVDType.BF16: "bfloat16", KVDType.FP16: "bfloat16", KVDType.FP8: "fp8"}

# The grids (tokens). Batches: every power of two and the midpoints between them, to 4096.
DECODE_BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
                  1024, 1536, 2048, 3072, 4096)  # fmt: skip
DECODE_CONTEXTS = (128, 1024, 4096, 16384, 65536)
PREFILL_TOKENS = (1, 16, 64, 128, 256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
                  24576, 32768)  # fmt: skip
# From 16 keys per token: below it the tokens would be prompts of a few tokens each, which
# aiconfigurator prices as that many requests (1,024 one-token prompts take 1.4 x one 1,024-token
# prompt for Llama-3.1-70B TP4 on H100); a step's prefill attends to fewer keys only when its
# prompts are that short, and is then priced as at 16.
PREFILL_ATTENDED = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
                    131072)  # fmt: skip
MS = 1e-3  # aiconfigurator reports milliseconds


def extra_installed() -> bool:
    """Whether aiconfigurator-core is importable (without importing it)."""
    return importlib.util.find_spec("aiconfigurator_core") is not None


def _model_configs() -> set[str]:
    """aiconfigurator's bundled model configs, as HF repo ids."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        return set()
    from pathlib import Path

    folder = Path(next(iter(spec.submodule_search_locations))) / "model_configs"
    suffix = "_config.json"
    return {
        p.name.removesuffix(suffix).replace("--", "/", 1)
        for p in folder.glob(f"*{suffix}")
        if not p.name.endswith("_hf_quant_config.json")
    }


@dataclass(frozen=True)
class KernelTarget:
    """What aiconfigurator prices: its model, system, backend and quantization modes (None:
    as its model config ships)."""

    model_path: str
    system: str
    backend: str
    kv_quant: str
    gemm_quant: str | None = None
    moe_quant: str | None = None
    max_context: int = 131072  # the model's context, tokens (the grids stop below it)


def kernel_target(
    *,
    hf_repo: str,
    hardware_id: str,
    engine: EngineName,
    kv_dtype: KVDType,
    weights: WeightDType | None,
    max_context: int | None,
) -> KernelTarget:
    """The aiconfigurator target of a deployment (`weights`: an override of the checkpoint's
    format, None as shipped), or InputError naming what is supported."""
    if not extra_installed():
        raise InputError(f"--step-source kernels needs aiconfigurator-core: {INSTALL_HINT}")
    system = AIC_SYSTEMS.get(hardware_id)
    if system is None:
        raise InputError(
            f"--step-source kernels: no measured tables for GPU {hardware_id!r}; "
            f"supported: {', '.join(AIC_SYSTEMS)}"
        )
    backend = AIC_BACKENDS.get(engine)
    if backend is None:
        supported = ", ".join(e.value for e in AIC_BACKENDS)
        raise InputError(f"--step-source kernels: engine {engine.value!r}; supported: {supported}")
    known = _model_configs()
    path = MODEL_ALIASES.get(hf_repo, hf_repo)
    if path not in known:
        from capcliff.catalog.catalogs import model_catalog

        cards = sorted(
            card.id
            for card in model_catalog().values()
            if MODEL_ALIASES.get(card.hf_repo, card.hf_repo) in known
        )
        raise InputError(
            f"--step-source kernels: aiconfigurator has no config for {hf_repo or 'this model'!r};"
            f" supported: {', '.join(cards)} (or a checkpoint aiconfigurator ships)"
        )
    gemm = moe = None
    if weights is not None:
        modes = AIC_WEIGHTS.get(weights)
        if modes is None:
            raise InputError(
                f"--step-source kernels: weights {weights.value} are not priced; "
                f"supported: {', '.join(w.value for w in AIC_WEIGHTS)} or as shipped"
            )
        gemm, moe = modes
    return KernelTarget(
        model_path=path, system=system, backend=backend, kv_quant=AIC_KV[kv_dtype],
        gemm_quant=gemm, moe_quant=moe, max_context=max_context or KernelTarget.max_context,
    )  # fmt: skip


@dataclass(frozen=True)
class LayoutKey:
    """A layout as aiconfigurator compiles it."""

    tp: int
    pp: int
    attention_dp: int
    moe_tp: int
    moe_ep: int

    @classmethod
    def of(cls, layout: Layout) -> LayoutKey:
        """aiconfigurator's parallel sizes of `layout`'s replica (attention DP: its lockstep
        group)."""
        return cls(
            tp=layout.tp, pp=layout.pp, attention_dp=layout.lockstep_replicas,
            moe_tp=layout.moe_tp, moe_ep=layout.ep,
        )  # fmt: skip


def _interp(xs: tuple[float, ...], ys: tuple[float, ...], x: float) -> float:
    """Piecewise-linear y(x) through the points, extended linearly past the ends."""
    i = min(max(bisect.bisect_right(xs, x) - 1, 0), len(xs) - 2)
    x0, x1 = xs[i], xs[i + 1]
    return ys[i] + (x - x0) * (ys[i + 1] - ys[i]) / (x1 - x0)


@dataclass(frozen=True)
class KernelSurrogate:
    """aiconfigurator's step times on a grid, interpolated. Seconds; contexts and batches in
    tokens and sequences. Non-decreasing in every argument by construction (`_monotone`):
    aiconfigurator's tables differ by about 1 % between neighbouring batches, and a step over
    more work never takes less time."""

    batches: tuple[float, ...]
    decode_base_s: tuple[float, ...]  # decode step of b sequences at zero context
    decode_per_context_s: tuple[float, ...]  # per token of each sequence's context
    prefill_tokens: tuple[float, ...]
    prefill_attended: tuple[float, ...]
    prefill_s: tuple[tuple[float, ...], ...]  # [tokens][attended]
    label: str

    def decode_terms(self, seqs: float) -> tuple[float, float]:
        """(a, s): a decode step of `seqs` sequences at mean context c takes a + s c seconds."""
        base = max(_interp(self.batches, self.decode_base_s, seqs), self.decode_base_s[0])
        per_ctx = _interp(self.batches, self.decode_per_context_s, seqs)
        return base, max(per_ctx, self.decode_per_context_s[0])

    def decode_s(self, seqs: float, mean_context: float) -> float:
        """Seconds of a decode step of `seqs` sequences at mean context `mean_context`."""
        base, per_ctx = self.decode_terms(seqs)
        return base + per_ctx * mean_context

    def prefill_at(self, tokens: float, attended: float) -> float:
        """Seconds of a step prefilling `tokens` tokens that attend to `attended` keys each on
        average (bilinear on the grid)."""
        xs, ys = self.prefill_tokens, self.prefill_attended
        attended = max(attended, ys[0])
        i = min(max(bisect.bisect_right(xs, tokens) - 1, 0), len(xs) - 2)
        low = _interp(ys, self.prefill_s[i], attended)
        high = _interp(ys, self.prefill_s[i + 1], attended)
        at = low + (tokens - xs[i]) * (high - low) / (xs[i + 1] - xs[i])
        return max(at, self.prefill_s[0][0])

    def mixed_s(self, tokens: float, seqs: float, context_tokens: float, pairs: float) -> float:
        """Seconds of a step with a prefill (`StepTimeModel.step_time_s`'s arguments). The load
        does not say how many sequences prefill: one is assumed (n = tokens - seqs + 1 prefill
        tokens, d = seqs - 1 decoding; more prompts put a few tokens on the wrong side). Each
        prefill token attends to (pairs - context + n) / n keys (a chunk of n after p tokens
        adds n p + n (n + 1) / 2 pairs and p + n context tokens; decoders add as many pairs as
        context tokens). The prefill pass runs over all tokens; the decoders add their
        attention, s(d) x their context."""
        decoders = max(seqs - 1.0, 0.0)
        n = tokens - decoders
        attended = max((pairs - context_tokens + n) / n, 1.0)
        prefix = max(attended - (n + 1) / 2, 0.0)
        decode_context = max(context_tokens - n - prefix, 0.0)
        step = self.prefill_at(tokens, attended)
        if decoders >= 1:
            step += self.decode_terms(decoders)[1] * decode_context / decoders
        return step


def _monotone(values: list[float]) -> list[float]:
    """Running maximum."""
    out, top = [], float("-inf")
    for v in values:
        top = max(top, v)
        out.append(top)
    return out


def _affine_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """(a, s) minimising sum((a + s x - y)^2 / y^2): relative least squares, closed form."""
    w = [1.0 / (y * y) for y in ys]
    sw = sum(w)
    sx = sum(wi * x for wi, x in zip(w, xs, strict=True))
    sy = sum(wi * y for wi, y in zip(w, ys, strict=True))
    sxx = sum(wi * x * x for wi, x in zip(w, xs, strict=True))
    sxy = sum(wi * x * y for wi, x, y in zip(w, xs, ys, strict=True))
    slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    return (sy - slope * sx) / sw, slope


def _prefill_ms(handle: Any, tokens: int, attended: int) -> float:
    """aiconfigurator's prefill of `tokens` tokens attending to `attended` keys each: one chunk
    after a prefix, or prompts of 2 x attended - 1 tokens (scaled to exactly `tokens`)."""
    if attended >= (tokens + 1) / 2:
        prefix = round(attended - (tokens + 1) / 2)
        return float(handle.predict_prefill_latency(1, tokens + prefix, prefix))
    length = max(1, round(2 * attended - 1))
    batch = max(1, round(tokens / length))
    return float(handle.predict_prefill_latency(batch, length)) * tokens / (batch * length)


def _compile(target: KernelTarget, key: LayoutKey) -> Any:
    """aiconfigurator's compiled engine for one replica (imports aiconfigurator)."""
    from aiconfigurator_core.sdk.engine import EngineHandle

    return EngineHandle.compile(
        target.model_path, target.system, target.backend,
        tp_size=key.tp, pp_size=key.pp, attention_dp_size=key.attention_dp,
        moe_tp_size=key.moe_tp, moe_ep_size=key.moe_ep,
        gemm_quant_mode=target.gemm_quant, moe_quant_mode=target.moe_quant,
        kvcache_quant_mode=target.kv_quant, fmha_quant_mode="bfloat16",
    )  # fmt: skip


@lru_cache(maxsize=64)
def source_label(target: KernelTarget) -> str:
    """Which tables price the steps: aiconfigurator's release, the engine's table release and
    the system."""
    from importlib.metadata import version

    from aiconfigurator_core.sdk import perf_database

    tables = perf_database.resolve_query_version(target.system, target.backend, "current")
    return (
        f"measured kernels: aiconfigurator-core {version('aiconfigurator-core')}, "
        f"{target.backend} {tables} tables on {target.system} ({ASSUMPTIONS})"
    )


@contextmanager
def _quiet() -> Iterator[None]:
    """aiconfigurator's log warnings (uneven PP stages, fallback tables) held back: the core
    prints nothing, and the label says which tables priced the steps."""
    log = logging.getLogger("aiconfigurator_core")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(level)


@lru_cache(maxsize=64)
def kernel_surrogate(target: KernelTarget, key: LayoutKey) -> KernelSurrogate:
    """The grid of one replica's step times (about 500 aiconfigurator calls, a second or so
    with its tables' first load; cached per process), or InputError when aiconfigurator cannot
    price it."""
    with _quiet():
        return _surrogate(target, key)


def _surrogate(target: KernelTarget, key: LayoutKey) -> KernelSurrogate:
    try:
        handle = _compile(target, key)
        contexts = [c for c in DECODE_CONTEXTS if c < target.max_context] or [target.max_context]
        base, per_ctx = [], []
        for b in DECODE_BATCHES:
            times = [float(handle.decode_step_latency(b, c, 0)) * MS for c in contexts]
            a, s = (times[0], 0.0) if len(contexts) == 1 else _affine_fit(contexts, times)
            base.append(a)
            per_ctx.append(max(s, 0.0))
        rows = [
            _monotone([_prefill_ms(handle, n, a) * MS for a in PREFILL_ATTENDED])
            for n in PREFILL_TOKENS
        ]
        label = source_label(target)
    except Exception as exc:  # any failure inside the third-party engine becomes one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"--step-source kernels: aiconfigurator cannot price {target.model_path} on "
            f"{target.system} with {target.backend}: {first}"
        ) from None
    columns = [_monotone(list(col)) for col in zip(*rows, strict=True)]
    prefill = tuple(tuple(r) for r in zip(*columns, strict=True))
    return KernelSurrogate(
        batches=tuple(float(b) for b in DECODE_BATCHES),
        decode_base_s=tuple(_monotone(base)), decode_per_context_s=tuple(_monotone(per_ctx)),
        prefill_tokens=tuple(float(n) for n in PREFILL_TOKENS),
        prefill_attended=tuple(float(a) for a in PREFILL_ATTENDED),
        prefill_s=prefill, label=label,
    )  # fmt: skip


@dataclass(frozen=True)
class MeasuredStepModel(StepTimeModel):
    """A `StepTimeModel` whose step times come from a `KernelSurrogate`; HBM bytes (and so the
    utilization figures' numerators) stay the roofline's. `variable_scale` and `step_overhead_s`
    apply to the surrogate's times as to the roofline's (1 and 0: aiconfigurator's figure)."""

    surrogate: KernelSurrogate | None = None

    def _kernels(self) -> KernelSurrogate:
        assert self.surrogate is not None
        return self.surrogate

    def step_time_s(
        self, tokens: float, seqs: float, context_tokens: float, attention_pairs: float
    ) -> float:
        """Seconds of one step (see StepTimeModel.step_time_s), from the surrogate."""
        if tokens <= 0:
            return 0.0
        if tokens == seqs:
            return self.decode_line(int(seqs), context_tokens).step_s(0)
        m = self._microbatches(seqs)
        kernels = self._kernels().mixed_s(tokens / m, seqs / m, context_tokens / m,
                                          attention_pairs / m)  # fmt: skip
        return max(self.variable_scale * kernels + self.step_overhead_s, self.extend_floor_s)

    def _decode_coefficients(self, seqs: int) -> tuple[float, ...]:
        """The decode line's terms from the surrogate: a + s x mean context, all on the memory
        side (the line is one affine function); bytes as the roofline reads them."""
        m = self._microbatches(seqs)
        base, per_ctx = self._kernels().decode_terms(seqs / m)
        k = self.variable_scale
        per_summed = k * per_ctx / seqs  # the line's context is the sequences' summed context
        roof = super()._decode_coefficients(seqs)
        return (k * base, per_summed, per_summed * seqs, 0.0, 0.0, 0.0, self.step_overhead_s,
                roof[7], roof[8], 0.0)  # fmt: skip

    def shared_step_s(self, busiest_tokens: float, seqs: float) -> float:
        """0: under attention DP the surrogate's step already holds the MoE layers."""
        return 0.0


def kernel_step_model(
    roofline: StepTimeModel, layout: Layout, target: KernelTarget
) -> MeasuredStepModel:
    """`roofline`'s replica priced by aiconfigurator's tables (no speculative decoding: refused
    before). Its `profile` names the source."""
    surrogate = kernel_surrogate(target, LayoutKey.of(layout))
    values = {f.name: getattr(roofline, f.name) for f in fields(StepTimeModel)}
    values.update(
        step_overhead_s=0.0, variable_scale=1.0, eager_floor_s=0.0, spec=None,
        profile=surrogate.label,
    )  # fmt: skip
    return MeasuredStepModel(**values, surrogate=surrogate)
