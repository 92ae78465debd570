"""Parallel layouts DP x TP x PP (x EP for MoE): naming, enumeration and validity.

A layout splits `dp * tp * pp` GPUs into `dp` replicas, each a pipeline of `pp` stages of `tp`
tensor-parallel ranks. For MoE models `ep` is the size of an expert-parallel group: routed experts
are
split over `ep` ranks of a stage (full width each) instead of being sharded by TP. An EP group spans
`ep / tp` attention replicas, so `ep` is a multiple of `tp` dividing `dp * tp` (SGLang: `ep = tp`;
vLLM `--enable-expert-parallel`: `ep = dp * tp`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError

_NAME_RE = re.compile(r"^(dp|tp|pp|ep)(\d+)$")


@dataclass(frozen=True, order=True)
class Layout:
    """A parallel layout; `gpus = dp * tp * pp` (EP reuses the same GPUs)."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1

    @property
    def gpus(self) -> int:
        """GPUs the layout occupies."""
        return self.dp * self.tp * self.pp

    @property
    def gpus_per_replica(self) -> int:
        """GPUs of one model replica (one TP x PP group)."""
        return self.tp * self.pp

    @property
    def name(self) -> str:
        """Canonical name, e.g. `dp4-tp2`; factors equal to 1 are left out (`tp1` for one GPU)."""
        parts = [f"{k}{v}" for k, v in (("dp", self.dp), ("tp", self.tp), ("pp", self.pp)) if v > 1]
        if self.ep > 1:
            parts.append(f"ep{self.ep}")
        return "-".join(parts) or "tp1"


def parse_layout(text: str) -> Layout:
    """Read a layout name such as `dp4-tp2`, `tp8`, `pp4-tp2` or `dp8-ep8` (omitted factors are
    1)."""
    factors: dict[str, int] = {}
    for part in text.strip().lower().split("-"):
        match = _NAME_RE.match(part)
        if match is None or match.group(1) in factors or int(match.group(2)) < 1:
            raise InputError(
                f"layout: cannot read {text!r}; write factors like dp4-tp2, tp8 or pp4-tp2-ep8"
            )
        factors[match.group(1)] = int(match.group(2))
    return Layout(**factors)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_layouts(gpus: int, *, arch: Architecture) -> list[Layout]:
    """Every DP x TP x PP factorisation of `gpus` (with each EP option for MoE models),
    unfiltered."""
    layouts: list[Layout] = []
    for tp in _divisors(gpus):
        for pp in _divisors(gpus // tp):
            dp = gpus // (tp * pp)
            layouts.append(Layout(dp=dp, tp=tp, pp=pp))
            if arch.moe is not None:
                eps = sorted({e for e in (tp, dp * tp) if e > 1})
                layouts.extend(Layout(dp=dp, tp=tp, pp=pp, ep=ep) for ep in eps)
    return sorted(layouts, key=lambda lay: (lay.pp, lay.tp, lay.ep))


def invalid_reason(layout: Layout, *, arch: Architecture, hardware: HardwareSpec) -> str | None:
    """Why an engine would refuse `layout` for this model on this hardware, or None if it is
    valid."""
    tp, heads, kv = layout.tp, arch.num_attention_heads, arch.num_kv_heads
    if heads % tp:
        return f"{heads} attention heads are not divisible by TP={tp}"
    if arch.mla is None and kv % tp and tp % kv:
        return f"{kv} KV heads and TP={tp} do not divide one another"
    if layout.pp > arch.num_layers:
        return f"PP={layout.pp} exceeds {arch.num_layers} layers"
    if tp > hardware.scaleup_domain_gpus:
        return (
            f"TP={tp} spans more than the {hardware.scaleup_domain_gpus}-GPU "
            f"{hardware.scaleup_fabric} domain"
        )
    if arch.moe is None:
        if arch.intermediate_size % tp:
            return f"intermediate_size {arch.intermediate_size} is not divisible by TP={tp}"
        return None if layout.ep == 1 else "EP applies only to MoE models"
    return _moe_invalid_reason(layout, arch=arch)


def _moe_invalid_reason(layout: Layout, *, arch: Architecture) -> str | None:
    assert arch.moe is not None
    ep, tp = layout.ep, layout.tp
    if ep == 1 and arch.moe.expert_intermediate_size % tp:
        return (
            f"expert width {arch.moe.expert_intermediate_size} is not divisible by TP={tp} (try EP)"
        )
    if ep > 1 and (ep % tp or (layout.dp * tp) % ep):
        return f"EP={ep} must be a multiple of TP={tp} dividing DP x TP={layout.dp * tp}"
    if arch.moe.num_experts % ep:
        return f"{arch.moe.num_experts} experts are not divisible by EP={ep}"
    return None
