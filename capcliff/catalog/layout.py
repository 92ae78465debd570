"""Parallel layouts DP x TP x PP (x EP for MoE, with or without attention DP): naming,
enumeration, validity, and which combinations each serving engine accepts.

A layout splits `dp * tp * pp` GPUs into `dp` attention replicas, each a pipeline of `pp` stages
of `tp` tensor-parallel ranks. What the MoE layers of a stage span depends on attention DP:

- independent replicas (the default): each replica's MoE layers span its own `tp` ranks;
- attention DP (`dpa4-tp2`, or implied by `ep > tp` as in `dp8-ep8`): the `dp` replicas step in
  lockstep and every MoE layer spans all `dp * tp` ranks of the stage; attention stays per replica.

Within the ranks a MoE layer spans, routed experts are split into `ep` groups of whole experts and
each expert's width over `moe_tp = moe_ranks / ep` ranks (TensorRT-LLM's
`moe_tp_size * moe_ep_size == tp_size`, tensorrt_llm/mapping.py; SGLang's
`moe_tp_size = tp_size // ep_size`, sglang/srt/distributed/parallel_state.py; vLLM's
`FusedMoEParallelConfig.make`, vllm/model_executor/layers/fused_moe/config.py, flattens TP across
DP so that MoE layers span `tp * dp` ranks: sharded by width without `--enable-expert-parallel`,
`ep = tp * dp` with it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError

# The most GPUs one deployment may span (a set sanity bound: the largest GPU clusters built so
# far hold ~100k GPUs; a serving deployment is a small part of one, and enumerating the layouts of
# many more would not finish).
MAX_GPUS = 65_536
# ASCII digits, at most 9 (a factor of 5,000 digits passed the match and crashed int())
_NAME_RE = re.compile(r"^(dpa|dp|tp|pp|ep)([0-9]{1,9})$")


@dataclass(frozen=True, order=True)
class Layout:
    """A parallel layout; `gpus = dp * tp * pp` (EP reuses the same GPUs).

    `attention_dp`: the `dp` replicas run attention apart but MoE layers together, in lockstep.
    It is implied by `ep > tp` and meaningless for `dp = 1` (normalised on construction).
    """

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    attention_dp: bool = False

    def __post_init__(self) -> None:
        implied = self.ep > self.tp or self.attention_dp
        object.__setattr__(self, "attention_dp", implied and self.dp > 1)

    @property
    def gpus(self) -> int:
        """GPUs the layout occupies."""
        return self.dp * self.tp * self.pp

    @property
    def gpus_per_replica(self) -> int:
        """GPUs of one attention replica (one TP x PP group)."""
        return self.tp * self.pp

    @property
    def lockstep_replicas(self) -> int:
        """Attention replicas that step together: `dp` under attention DP, else 1."""
        return self.dp if self.attention_dp else 1

    def in_lockstep(self) -> Layout:
        """The same GPUs with the `dp` replicas in lockstep (attention DP: MoE layers over all
        `dp * tp` ranks of a stage); itself where `dp` is 1 or it already is."""
        if self.dp < 2 or self.attention_dp:
            return self
        return Layout(dp=self.dp, tp=self.tp, pp=self.pp, ep=self.ep, attention_dp=True)

    @property
    def moe_ranks(self) -> int:
        """Ranks one MoE layer of a stage spans: `dp * tp` under attention DP, else `tp`."""
        return self.lockstep_replicas * self.tp

    @property
    def moe_tp(self) -> int:
        """Ranks each routed expert's width is split over: moe_ranks / ep (at least 1)."""
        return max(1, self.moe_ranks // self.ep)

    @property
    def name(self) -> str:
        """Canonical name, e.g. `dp4-tp2`, `dpa8`, `tp8-ep4`; factors equal to 1 are left out
        (`tp1` for one GPU). `dpa` marks attention DP where `ep > tp` does not already imply it."""
        dp_word = "dpa" if self.attention_dp and self.ep <= self.tp else "dp"
        factors = ((dp_word, self.dp), ("tp", self.tp), ("pp", self.pp))
        parts = [f"{k}{v}" for k, v in factors if v > 1]
        if self.ep > 1:
            parts.append(f"ep{self.ep}")
        return "-".join(parts) or "tp1"


def parse_layout(text: str) -> Layout:
    """Read a layout name such as `dp4-tp2`, `tp8`, `pp4-tp2`, `dp8-ep8`, `tp8-ep4` or `dpa8`
    (omitted factors are 1; `dpa` is `dp` with attention DP)."""
    factors: dict[str, int] = {}
    attention_dp = False
    for part in text.strip().lower().split("-"):
        match = _NAME_RE.match(part)
        word = None if match is None else match.group(1)
        if word == "dpa":
            word, attention_dp = "dp", True
        if match is None or word in factors or int(match.group(2)) < 1:
            raise InputError(
                f"layout: cannot read {text!r:.60}; write factors like dp4-tp2, tp8, pp4-tp2-ep8, "
                "tp8-ep4 or dpa8 (attention DP)"
            )
        assert word is not None
        factors[word] = int(match.group(2))
    layout = Layout(**factors, attention_dp=attention_dp)
    if layout.gpus > MAX_GPUS:  # sweep --layout dp1000000 simulated a million replicas
        raise InputError(
            f"layout: {layout.name} spans {layout.gpus:,} GPUs, past the {MAX_GPUS:,} one "
            "deployment may span; give fewer"
        )
    return layout


def parse_layout_list(text: str) -> tuple[Layout, ...]:
    """Read a comma list of layout names (`dp2-tp2,tp4`), each once in the order given; an
    empty item (`tp2,,dp2`, `tp2,`) is refused, as in --gpu and --concurrency lists."""
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise InputError(f"layout: cannot read {text!r:.60}; write e.g. tp2 or dp2-tp2,tp4")
    if not all(parts):
        raise InputError(
            f"layout: {text!r:.60} has an empty item; give layout names between the commas "
            "(e.g. dp2-tp2,tp4)"
        )
    return tuple(dict.fromkeys(parse_layout(part) for part in parts))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _moe_options(dp: int, tp: int, pp: int) -> list[Layout]:
    """The EP / attention-DP variants of one DP x TP x PP split of a MoE model: EP over any
    divisor of a replica's TP ranks, and (dp > 1) attention DP with the MoE layers sharded over
    all dp x tp ranks, or EP over all of them (the layouts engines document)."""
    options = [Layout(dp=dp, tp=tp, pp=pp, ep=ep) for ep in _divisors(tp) if ep > 1]
    if dp > 1:
        options.append(Layout(dp=dp, tp=tp, pp=pp, attention_dp=True))
        options.append(Layout(dp=dp, tp=tp, pp=pp, ep=dp * tp))
    return options


def enumerate_layouts(gpus: int, *, arch: Architecture) -> list[Layout]:
    """Every DP x TP x PP factorisation of `gpus` (with the EP / attention-DP options of MoE
    models), unfiltered."""
    layouts: list[Layout] = []
    for tp in _divisors(gpus):
        for pp in _divisors(gpus // tp):
            dp = gpus // (tp * pp)
            layouts.append(Layout(dp=dp, tp=tp, pp=pp))
            if arch.moe is not None:
                layouts.extend(_moe_options(dp, tp, pp))
    unique = dict.fromkeys(layouts)
    return sorted(unique, key=lambda lay: (lay.pp, lay.tp, lay.ep, lay.attention_dp))


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
        if layout.attention_dp:
            return "attention DP applies only to MoE models"
        return None if layout.ep == 1 else "EP applies only to MoE models"
    return _moe_invalid_reason(layout, arch=arch)


def _moe_invalid_reason(layout: Layout, *, arch: Architecture) -> str | None:
    assert arch.moe is not None
    ep, span = layout.ep, layout.moe_ranks
    if span % ep:
        where = "DP x TP" if layout.attention_dp else "TP"
        return f"EP={ep} does not divide the {span} ranks ({where}) a MoE layer spans"
    if arch.moe.num_experts % ep:
        return f"{arch.moe.num_experts} experts are not divisible by EP={ep}"
    if arch.moe.expert_intermediate_size % layout.moe_tp:
        return (
            f"expert width {arch.moe.expert_intermediate_size} is not divisible by the "
            f"{layout.moe_tp} ranks sharing each expert (try a larger EP)"
        )
    return None


def engine_refusal(layout: Layout, engine: str) -> str | None:
    """Why `engine` (vllm, vllm-v0, sglang, trtllm) would not start `layout`, or None.

    - vLLM: expert parallelism spans every rank a MoE layer spans (`ep_size = tp_size * dp_size`
      in `FusedMoEParallelConfig.make`), so EP between 1 and that is refused (`tp8-ep4`);
    - vLLM V0: data-parallel attention is a V1-engine feature (vllm/v1/engine/core.py runs the
      DP ranks' dummy batches); V0 has none;
    - SGLang: `--enable-dp-attention` with `--dp` dividing `--tp` and `--ep-size` dividing `--tp`
      (server_args.py `_handle_data_parallelism`; `moe_tp_size = tp_size // ep_size`): every
      valid layout;
    - TensorRT-LLM: `enable_attention_dp` gives every rank its own attention (attention TP 1),
      and `moe_tp_size * moe_ep_size == tp_size` (tensorrt_llm/mapping.py).
    """
    if engine in ("vllm", "vllm-v0") and 1 < layout.ep < layout.moe_ranks:
        return (
            f"vLLM's expert parallelism spans all {layout.moe_ranks} ranks of a MoE layer "
            f"(EP = TP x DP); EP={layout.ep} needs SGLang or TensorRT-LLM"
        )
    if engine == "vllm-v0" and layout.attention_dp:
        return "vLLM V0 has no data-parallel attention (use the V1 engine, --engine vllm)"
    if engine == "trtllm" and layout.attention_dp and layout.tp > 1:
        return "TensorRT-LLM's attention DP runs attention with TP=1 on every rank"
    return None
