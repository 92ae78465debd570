"""Settings of a serving simulation: the engine's knobs and the KV cache a replica has."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.perf.step_time import host_link_bytes_per_s
from capcliff.sim.policy_names import DEFAULT_KV_MARGIN, POLICY_NAMES
from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.units import GIB

if TYPE_CHECKING:  # only a type here: keeps the simulator free of the memory calculators
    from capcliff.memory.layout_memory import LayoutMemory

# Policies whose engines' prefix caches are modelled (vLLM V1 APC, SGLang radix cache); both
# engines have them on by default (vLLM V1 `enable_prefix_caching`, SGLang without
# `--disable-radix-cache`).
PREFIX_CACHING_POLICIES = ("vllm", "vllm-first-chunk", "sglang")
# vLLM V1's policies: its prefix cache is on by default (vllm/engine/arg_utils.py
# `_set_default_args_v1`) and keeps a preempted request's blocks (`resolved_prefix_caching`).
V1_POLICIES = ("vllm", "vllm-first-chunk")
# vLLM V0's default CPU swap space per GPU (`--swap-space 4`, GiB).
DEFAULT_SWAP_SPACE_BYTES = 4 * GIB
# Set: an arrival within ARRIVAL_TIE_S after a step's end is there when that step ends, so it is
# taken by the next step, as an engine's loop takes a request it has received when its scheduler
# polls. An exact tie (a constant step time and arrivals on its grid) otherwise falls either way
# on the rounding of a sum of step times, which a run's fast paths add in another order than
# step by step (a whole step apart). 1 ns: far below any step or client turnaround (1 us).
ARRIVAL_TIE_S = 1e-9
# SGLang's scheduler_recv_skipper.py (`SchedulerRecvSkipper`, `--scheduler-recv-interval N`):
# `handle(last_forward_mode)` adds the weight of the batch run last to a counter and receives
# new requests only when it reaches N (then resets it to 0): DECODE, TARGET_VERIFY and no batch
# weigh 1 (SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DECODE / _NONE defaults), any other (a batch
# that prefills) `_DEFAULT_WEIGHT` = 1000; it starts at N (the first call receives). So
# requests are received every N decode steps, and at the first poll after a prefill.
RECV_WEIGHT_EXTEND = 1000
# vLLM's default max_num_seqs and the V1 server's default max_num_batched_tokens on large GPUs.
DEFAULT_MAX_NUM_SEQS = 256
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
# TensorRT-LLM's `AttentionDpConfig` defaults (tensorrt_llm/llmapi/llm_args.py): timeout_iters 50,
# batching_wait_iters 10; `enable_balance` defaults to False.
ADP_BALANCE_DEFAULTS = (50, 10)
# The longest wait accepted, iterations: far past any launch script's (InferenceX: 60).
MAX_ADP_BALANCE_ITERS = 100_000


def parse_adp_balance(text: str) -> tuple[int, int] | None:
    """TensorRT-LLM's `attention_dp_config` as `--attention-dp-balance` gives it: "off" (None),
    "on" (its defaults, ADP_BALANCE_DEFAULTS) or "TIMEOUT[:BATCHING_WAIT]" in iterations
    (batching_wait_iters 0 when left out), e.g. "60:0"."""
    word = text.strip().lower()
    if word == "off":
        return None
    if word == "on":
        return ADP_BALANCE_DEFAULTS
    parts = word.split(":")
    if len(parts) > 2 or not all(p.isdecimal() for p in parts):  # isdigit takes "²"
        raise InputError(
            f"attention_dp_balance: {text!r} is not on, off or TIMEOUT[:BATCHING_WAIT] "
            "(whole iterations, e.g. 60:0)"
        )
    timeout, wait = int(parts[0]), int(parts[1]) if len(parts) == 2 else 0
    if max(timeout, wait) > MAX_ADP_BALANCE_ITERS:
        raise InputError(
            f"attention_dp_balance: timeout_iters and batching_wait_iters must be in "
            f"[0, {MAX_ADP_BALANCE_ITERS:,}], got {text!r}"
        )
    return timeout, wait


class PreemptionMode(StrEnum):
    """What happens to a preempted request's KV."""

    RECOMPUTE = "recompute"  # dropped; the request re-prefills prompt + generated tokens later
    SWAP = "swap"  # copied to host memory over the host link and copied back before it resumes


class Routing(StrEnum):
    """How requests are spread over data-parallel replicas."""

    ROUND_ROBIN = "round-robin"
    LEAST_LOADED = "least-loaded"  # greedy on assigned work (input + output tokens)


@dataclass(frozen=True)
class SimConfig:
    """Engine settings of every replica (`max_num_seqs` and the token budget are per replica)."""

    policy: str = "vllm"
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    preemption: PreemptionMode = PreemptionMode.RECOMPUTE
    routing: Routing = Routing.ROUND_ROBIN
    kv_margin: float = DEFAULT_KV_MARGIN  # kv-aware only
    output_quantile: float | None = None  # kv-aware: None knows each output (oracle)
    # vllm (APC) and sglang (radix cache) only; None: the engine's default, on where the
    # workload shares content, else vLLM V1's `keeps_preempted_kv` (`resolved_prefix_caching`)
    prefix_caching: bool | None = False
    # vllm-v0 only: False runs V0's default scheduler, prefills in steps of their own
    # (`capcliff.sim.loop.prefill_only`); True its chunked-prefill scheduler
    chunked_prefill: bool = True
    # False: a step that runs prefill chunks decodes nobody (SGLang without --enable-mixed-chunk,
    # its default, and always with EAGLE/MTP speculation: `capcliff.sim.loop.exclusive_prefill`);
    # True: the chunks ride along with the decodes of the step (vLLM V1, TensorRT-LLM)
    mixed_prefill: bool = True
    time_series_points: int = 512
    max_steps: int = 100_000_000  # a guard against a simulation that cannot finish
    # set: the most requests one replica simulates; each costs tens of microseconds of the
    # event loop, so 10M in a batch plan ran for over an hour where the step guard saw few steps
    max_requests: int = 200_000
    # seconds each request spends outside the engine's steps (HTTP, tokenization, the first
    # detokenized chunk, the client's turnaround): the engine sees a request this long after its
    # client sent it; TTFT and E2E include it (`simulate.simulate`). 0: not modeled
    request_overhead_s: float = 0.0
    # the engine's own cap on running sequences per replica where the user set none (SGLang
    # with speculation: 48), which a sweep's concurrency does not lift (solver.config_at);
    # None: the sweep's concurrency is the cap
    engine_max_num_seqs: int | None = None
    # SGLang --scheduler-recv-interval: the scheduler polls for new requests only once its
    # counter, +1 per decode step and +RECV_WEIGHT_EXTEND per step that prefills, reaches it
    # (`capcliff.sim.loop`, RECV_WEIGHT_EXTEND); 1: every step (every engine's default)
    scheduler_recv_interval: int = 1
    # TensorRT-LLM attention_dp_config (enable_balance, timeout_iters, batching_wait_iters): the
    # attention-DP ranks hold context requests until every rank has one, for at most
    # `timeout_iters` iterations (`capcliff.sim.loop.balance`); None: off (the engine's default).
    # Read only by the lockstep loop of attention-DP ranks.
    adp_balance: tuple[int, int] | None = None
    # vLLM V1 (recompute) with its default prefix cache on a workload that shares nothing:
    # a preempted request's recompute skips its blocks still cached (`resolved_prefix_caching`,
    # `capcliff.sim.reuse.retained_kv`); with `prefix_caching` on, the general cache does it
    keeps_preempted_kv: bool = False

    def __post_init__(self) -> None:
        if self.policy not in POLICY_NAMES:
            raise InputError(f"policy: unknown {self.policy!r}; known: {', '.join(POLICY_NAMES)}")
        if self.max_num_seqs < 1:
            raise InputError(f"max_num_seqs: must be >= 1, got {self.max_num_seqs}")
        if self.engine_max_num_seqs is not None and self.engine_max_num_seqs < 1:
            raise InputError(
                f"engine_max_num_seqs: must be >= 1 or None, got {self.engine_max_num_seqs}"
            )
        if self.mixed_prefill and self.max_num_batched_tokens < self.max_num_seqs:
            # every running request decodes within the step's token budget, as vLLM's
            # SchedulerConfig requires; where prefill steps run alone (SGLang), the budget
            # bounds the prefill chunk only and the decode batch is not budgeted
            raise InputError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= "
                f"max_num_seqs ({self.max_num_seqs})"
            )
        if not 0 <= self.kv_margin < 1:
            raise InputError(f"kv_margin: must be in [0, 1), got {self.kv_margin}")
        if self.prefix_caching and self.policy not in PREFIX_CACHING_POLICIES:
            raise InputError(
                f"prefix_caching: modelled for {', '.join(PREFIX_CACHING_POLICIES)}, "
                f"not {self.policy!r}"
            )
        if self.keeps_preempted_kv and (
            self.policy not in V1_POLICIES or self.preemption is not PreemptionMode.RECOMPUTE
        ):
            raise InputError(
                f"keeps_preempted_kv: modelled for {', '.join(V1_POLICIES)} under recompute, "
                f"not {self.policy!r} with {self.preemption.value}"
            )
        if not self.chunked_prefill and self.policy != "vllm-v0":
            raise InputError(f"chunked_prefill: off is modelled for vllm-v0, not {self.policy!r}")
        self._check_ranges()

    def _check_ranges(self) -> None:
        if not (math.isfinite(self.request_overhead_s) and 0 <= self.request_overhead_s <= 60):
            raise InputError(
                f"request_overhead_s: must be in [0, 60] seconds, got {self.request_overhead_s}"
            )
        if not 1 <= self.scheduler_recv_interval <= RECV_WEIGHT_EXTEND:
            raise InputError(
                f"scheduler_recv_interval: must be in [1, {RECV_WEIGHT_EXTEND}], "
                f"got {self.scheduler_recv_interval}"
            )
        if self.adp_balance is not None:
            timeout, wait = self.adp_balance
            if not (min(timeout, wait) >= 0 and max(timeout, wait) <= MAX_ADP_BALANCE_ITERS):
                raise InputError(
                    f"adp_balance: timeout_iters and batching_wait_iters must be in "
                    f"[0, {MAX_ADP_BALANCE_ITERS:,}], got {self.adp_balance}"
                )
        if self.output_quantile is not None and not 0 < self.output_quantile <= 1:
            raise InputError(f"output_quantile: must be in (0, 1], got {self.output_quantile}")


def resolved_prefix_caching(config: SimConfig, *, shares_content: bool) -> SimConfig:
    """`config` with prefix caching decided: None becomes on for vllm and sglang (both engines
    have it on by default) when the workload shares content (sessions, shared prefixes). Where
    it shares nothing, vLLM V1's cache can only give a preempted request back its own blocks
    (not yet reused since): under recompute, `keeps_preempted_kv` models just that
    (`capcliff.sim.reuse.retained_kv`); otherwise caching is off (the same results)."""
    if config.prefix_caching is not None:
        return config
    if shares_content:
        return replace(config, prefix_caching=config.policy in PREFIX_CACHING_POLICIES)
    keeps = config.policy in V1_POLICIES and config.preemption is PreemptionMode.RECOMPUTE
    return replace(config, prefix_caching=False, keeps_preempted_kv=keeps)


@dataclass(frozen=True)
class KVCapacity:
    """One replica's KV cache and its host link (for swapping)."""

    blocks: int
    block_size: int
    kv_bytes_per_token: int = 0  # per GPU, what a swap moves per token of context
    host_link_bytes_per_s: float = 0.0  # one direction
    host_kv_tokens: int = 0  # tokens of KV the host swap pool holds
    tiers: tuple[KVTier, ...] = ()  # offload tiers below HBM, fastest first (prefix caching)
    offload_write_back: bool = False  # store on eviction from HBM (else write-through)

    def __post_init__(self) -> None:
        if self.blocks < 1 or self.block_size < 1:
            raise InputError(
                f"KV cache: needs >= 1 block of >= 1 token, got {self.blocks} x {self.block_size}"
            )

    @property
    def tokens(self) -> int:
        """Tokens of context the replica's KV cache holds."""
        return self.blocks * self.block_size

    def swap_seconds(self, tokens: int) -> float:
        """Time to move `tokens` tokens of KV one way over the host link."""
        if tokens == 0:
            return 0.0
        if self.host_link_bytes_per_s <= 0:
            raise InputError("swap: the host link bandwidth is unknown")
        return tokens * self.kv_bytes_per_token / self.host_link_bytes_per_s

    @classmethod
    def of_layout(
        cls, memory: LayoutMemory, hardware: HardwareSpec, *, swap_space_bytes: int | None = None
    ) -> KVCapacity:
        """A replica's capacity from `layout_memory`; the swap pool is `swap_space_bytes` per GPU
        (vLLM's 4 GiB by default)."""
        per_token = memory.kv_bytes_per_token_per_gpu
        space = DEFAULT_SWAP_SPACE_BYTES if swap_space_bytes is None else swap_space_bytes
        return cls(
            blocks=memory.blocks_per_replica,
            block_size=memory.stages[0].block_size,
            kv_bytes_per_token=per_token,
            host_link_bytes_per_s=host_link_bytes_per_s(hardware),
            host_kv_tokens=space // per_token if per_token else 0,
        )
