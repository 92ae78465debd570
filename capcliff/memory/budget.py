"""The memory budget of one GPU: engine settings in, named terms and KV blocks out.

Each serving engine splits device memory its own way (see `engines.py`); they all produce a
`StageBudget`: the bytes the engine lets the model use, the terms it subtracts (weights, activation
peak, non-PyTorch memory, CUDA graphs ...), each labelled modeled, calibrated, measured or set, the
KV bytes left and the whole KV blocks they make.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.deepep import AllToAllBackend


class EngineName(StrEnum):
    """The serving engines whose memory rules capcliff follows."""

    VLLM = "vllm"  # vLLM V1, current releases (>= 0.20: CUDA-graph memory inside the budget)
    VLLM_V0 = "vllm-v0"  # vLLM V0 (2024 - mid 2025)
    SGLANG = "sglang"
    TRTLLM = "trtllm"


class Provenance(StrEnum):
    """Where a number comes from."""

    MODELED = "modeled"  # a formula of the model, layout and settings
    CALIBRATED = "calibrated"  # fitted from an engine start-up log (`capcliff calibrate`)
    MEASURED = "measured"  # read from the checkpoint or the device
    SET = "set"  # given by the user


# Names of the overhead terms a calibration file or a flag may pin (bytes per GPU).
OVERRIDABLE_TERMS = (
    "activation_peak",
    "non_torch",
    "cudagraph",
    "cuda_context",
    "weights_overhead",
    "all2all_buffers",
)


@dataclass(frozen=True)
class BudgetSettings:
    """Engine settings, named as the engines name them; None means the engine's own default."""

    engine: EngineName = EngineName.VLLM
    # the engine's release as (major, minor, patch) where the user names one (None: the latest
    # capcliff models); vLLM's CUDA-graph capture sizes and whether V1 counts the graphs in its
    # budget depend on it (overheads.py)
    engine_release: tuple[int, int, int] | None = None
    gpu_memory_utilization: float = 0.9  # vLLM
    gpu_total_memory_bytes: int | None = None  # overrides the driver-reported total
    max_num_batched_tokens: int | None = (
        None  # vLLM; SGLang chunked_prefill_size; TRT max_num_tokens
    )
    max_num_seqs: int | None = None  # vLLM; SGLang max_running_requests; TRT max_batch_size
    # vLLM V0 --enable-chunked-prefill (engines.vllm_v0_chunked_prefill when None)
    enable_chunked_prefill: bool | None = None
    block_size: int | None = None  # vLLM block_size; SGLang page_size; TRT tokens_per_block
    kv_cache_memory_bytes: int | None = None  # vLLM --kv-cache-memory: bypasses the budget
    enforce_eager: bool = False
    # vLLM V1 subtracts its CUDA-graph estimate from the budget (None: by engine_release on an
    # NVIDIA GPU, overheads.vllm_graphs_in_budget; from 0.20.0, from 0.26.0 on AMD)
    cudagraph_in_budget: bool | None = None
    # vLLM V1 samples with FlashInfer's top-k/top-p kernels: up to 0.11.0 wherever FlashInfer is
    # installed (an optional extra of the PyPI wheel, in vLLM's own images), from 0.11.1 only
    # with VLLM_USE_FLASHINFER_SAMPLER=1 (vllm/v1/sample/ops/topk_topp_sampler.py); it sizes the
    # profile run's sampler peak (overheads.v1_activation_peak_bytes)
    flashinfer_sampler: bool = False
    mem_fraction_static: float | None = None  # SGLang
    # SGLang's default mem_fraction_static reads these (engines.sglang_reserved_mib): the
    # speculative method (mtp, eagle, ngram; None: none), --enable-hierarchical-cache (capcliff's
    # --offload) and PD disaggregation (a disagg pool's worker)
    speculative: str | None = None
    hierarchical_cache: bool = False
    pd_disaggregation: bool = False
    free_gpu_memory_fraction: float = 0.9  # TensorRT-LLM
    # MoE all-to-all backend (vLLM --all2all-backend, SGLang --moe-a2a-backend/--deepep-mode);
    # every engine's default is none (deepep.py)
    all2all_backend: AllToAllBackend = AllToAllBackend.NONE
    max_tokens: int | None = None  # TensorRT-LLM KvCacheConfig.max_tokens
    term_overrides: dict[str, int] = field(default_factory=dict)  # bytes, by OVERRIDABLE_TERMS
    calibrated_terms: frozenset[str] = frozenset()  # which overrides came from a calibration file
    # Step-time terms by name (perf.profiles: profile terms, or fitted `fixed_s` and `scale`).
    step_time_terms: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        for name in ("gpu_memory_utilization", "free_gpu_memory_fraction", "mem_fraction_static"):
            value = getattr(self, name)
            if value is not None and not 0 < value <= 1:
                raise InputError(f"{name}: must be in (0, 1], got {value}")
        for name in ("max_num_batched_tokens", "max_num_seqs", "block_size", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise InputError(f"{name}: must be >= 1, got {value}")
        unknown = set(self.term_overrides) - set(OVERRIDABLE_TERMS)
        if unknown:
            raise InputError(
                f"term_overrides: unknown {', '.join(sorted(unknown))}; "
                f"valid: {', '.join(OVERRIDABLE_TERMS)}"
            )

    def override(self, term: str) -> int | None:
        """The pinned value of an overhead term, if any."""
        return self.term_overrides.get(term)

    def provenance_of(self, term: str) -> Provenance:
        """How an overhead term's value was obtained."""
        if term in self.calibrated_terms:
            return Provenance.CALIBRATED
        return Provenance.SET if term in self.term_overrides else Provenance.MODELED


@dataclass(frozen=True)
class BudgetTerm:
    """One named use of GPU memory, bytes."""

    name: str
    bytes: int
    provenance: Provenance
    source: str  # the formula or the engine source it follows, one line


@dataclass(frozen=True)
class StageBudget:
    """How an engine splits one GPU's memory, and the KV blocks that result."""

    engine: EngineName
    total_memory_bytes: int
    requested_bytes: int  # what the engine lets weights, overheads and KV use together
    terms: tuple[BudgetTerm, ...]  # subtracted from `requested_bytes` before the KV cache
    kv_bytes: int  # the KV pool the engine allocates (negative: overflow)
    kv_bytes_per_token: int
    block_size: int
    blocks: int
    outside_terms: tuple[
        BudgetTerm, ...
    ] = ()  # must fit in total - requested (CUDA graphs, context)

    def term(self, name: str) -> int:
        """Bytes of the term called `name` (0 if absent)."""
        return sum(t.bytes for t in (*self.terms, *self.outside_terms) if t.name == name)

    @property
    def weights_bytes(self) -> int:
        """Bytes of weights (as the engine loads them, with load-time buffers)."""
        return self.term("weights") + self.term("weights_overhead")

    @property
    def reserves_bytes(self) -> int:
        """Everything but weights that the budget holds back from the KV cache."""
        return sum(t.bytes for t in self.terms) - self.weights_bytes

    @property
    def headroom_bytes(self) -> int:
        """Memory outside the budget minus what must live there (negative: it will not fit)."""
        outside = sum(t.bytes for t in self.outside_terms)
        return self.total_memory_bytes - self.requested_bytes - outside


@dataclass(frozen=True)
class StageDemand:
    """What one GPU of a pipeline stage must hold, before the engine's rule splits memory."""

    arch: Architecture
    layout: Layout
    stage: int
    total_memory_bytes: int
    weights_bytes: int
    kv_bytes_per_token: int
    max_model_len: int
    weights_provenance: Provenance = Provenance.MODELED
    nvls_channels: int = 0  # NCCL NVLS channels of the GPU's NVSwitch fabric (0: no NVLS)
    # BF16 W_UK/W_UV vLLM builds from a quantised kv_b_proj (V0 0.7.1-0.7.x: + W_Q_UK, W_UV_O, W_QR)
    mla_weight_copies_bytes: int = 0
    allocator_rounding_bytes: int = 0  # caching-allocator segment rounding of the weight tensors
    draft_weights_bytes: int = 0  # a speculative draft's weights on this GPU (memory/draft.py)
    gpu_vendor: str = "NVIDIA"  # the GPU's vendor (SGLang turns piecewise graphs off on HIP)
