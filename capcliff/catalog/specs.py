"""Pydantic models of the catalog files: a hardware spec and a model card.

Human units live in the data files (`hbm_driver_mib`, `hbm_bandwidth_tb_s`); the properties convert
them
once into bytes, bytes/s and FLOP/s for the calculators.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from capcliff.units import MIB, TB, TERA, WeightDType

# Set: the highest price per GPU-hour any input may name, $ (cloud list prices run $1-15 per
# GPU-hour; 1e308 printed "inf" $ per million tokens and a 300-digit $/h).
MAX_USD_PER_GPU_HOUR = 10_000.0
# Set: the lowest, $: under a cent per GPU-hour is a price per GPU-second or -minute (an H100 at
# $2 an hour is $0.00056 a second), which printed costs 3,600 times too low.
MIN_USD_PER_GPU_HOUR = 0.01


class _Frozen(BaseModel):
    # validators built on first use: a command pays only for the models it makes (~1 ms each)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class HardwareSpec(_Frozen):
    """One accelerator kind and the node it usually comes in. Every figure has a source."""

    id: str
    name: str
    vendor: str
    form_factor: str
    hbm_type: str
    hbm_nominal_gb: float = Field(gt=0)
    hbm_driver_mib: int = Field(gt=0)
    hbm_bandwidth_tb_s: float = Field(gt=0)
    # Measured achievable HBM bandwidth (STREAM/BabelStream-style copy or triad), TB/s; at most
    # the peak. None: not measured (the roofline then uses the reference GPU's fraction of peak).
    hbm_achievable_tb_s: float | None = Field(default=None, gt=0)
    dense_tflops_bf16: float = Field(gt=0)
    dense_tflops_fp8: float = Field(gt=0)
    dense_tflops_fp4: float | None = Field(default=None, gt=0)
    # The device capability the engines' quantization gates read (torch's major.minor: the
    # CUDA SM version, or on ROCm the gfx target's, gfx942 -> 9.4); None: not known, no gate.
    compute_capability: float | None = Field(default=None, gt=0)
    scaleup_fabric: str
    scaleup_bw_gb_s_bidir: float = Field(gt=0)
    scaleup_domain_gpus: int = Field(gt=0)
    # One hop of the scale-up fabric (NVLink/xGMI) as NCCL's tuning model charges it, microseconds.
    scaleup_latency_us: float | None = Field(default=None, gt=0)
    # Scale-out (inter-node RDMA) fabric: NIC kind, one direction of the NIC bandwidth one GPU owns
    # (a 400 Gb/s ConnectX-7 per GPU = 50 GB/s), and one network hop's latency.
    scaleout_fabric: str | None = None
    scaleout_bw_gb_s_per_gpu: float | None = Field(default=None, gt=0)
    scaleout_latency_us: float | None = Field(default=None, gt=0)
    host_link: str
    host_link_bw_gb_s_bidir: float = Field(gt=0)
    gpus_per_node: int = Field(gt=0)
    host_dram_tb_per_node: float = Field(gt=0)
    allreduce_busbw_gb_s: float | None = Field(default=None, gt=0)
    tdp_w: float | None = Field(default=None, gt=0)
    # on-demand rental, set per file
    usd_per_gpu_hour: float | None = Field(
        default=None, ge=MIN_USD_PER_GPU_HOUR, le=MAX_USD_PER_GPU_HOUR
    )
    # KV offload tiers (prefix caching): the fixed cost of one host-link transfer, and the node's
    # local NVMe (capacity, sequential read and write bandwidth, one read's latency). Host DRAM
    # is `host_dram_tb_per_node`; the host link's bandwidth is `host_link_bw_gb_s_bidir`.
    host_link_latency_us: float | None = Field(default=None, gt=0)
    nvme_tb_per_node: float | None = Field(default=None, gt=0)
    nvme_read_gb_s_per_node: float | None = Field(default=None, gt=0)
    nvme_write_gb_s_per_node: float | None = Field(default=None, gt=0)
    nvme_latency_us: float | None = Field(default=None, gt=0)
    notes: str = ""
    sources: dict[str, str]

    @model_validator(mode="after")
    def _every_figure_has_a_source(self) -> HardwareSpec:
        numeric = [
            name
            for name, value in self
            if isinstance(value, int | float) and not isinstance(value, bool)
        ]
        missing = [name for name in numeric if not self.sources.get(name, "").strip()]
        if missing:
            raise ValueError(f"no source for {', '.join(missing)} (add it under [sources])")
        unknown = sorted(set(self.sources) - set(type(self).model_fields))
        if unknown:
            raise ValueError(f"[sources] names unknown fields: {', '.join(unknown)}")
        achievable = self.hbm_achievable_tb_s
        if achievable is not None and achievable > self.hbm_bandwidth_tb_s:
            raise ValueError(
                f"hbm_achievable_tb_s {achievable} is above the peak hbm_bandwidth_tb_s "
                f"{self.hbm_bandwidth_tb_s} (valid: 0 < achievable <= peak)"
            )
        if self.scaleup_domain_gpus < self.gpus_per_node and self.scaleup_domain_gpus != 1:
            raise ValueError("scaleup_domain_gpus is smaller than gpus_per_node")
        return self

    @property
    def host_dram_bytes_per_gpu(self) -> int:
        """The node's host DRAM shared evenly by its GPUs, bytes (decimal TB)."""
        return round(self.host_dram_tb_per_node * TB / self.gpus_per_node)

    @property
    def nvme_bytes_per_gpu(self) -> int | None:
        """The node's local NVMe shared evenly by its GPUs, bytes (None: not in the catalog)."""
        tb = self.nvme_tb_per_node
        return None if tb is None else round(tb * TB / self.gpus_per_node)

    @property
    def hbm_driver_bytes(self) -> int:
        """Total device memory as the driver reports it (nvidia-smi / rocm-smi), bytes."""
        return self.hbm_driver_mib * MIB

    @property
    def hbm_achievable_fraction(self) -> float | None:
        """Measured achievable HBM bandwidth over the peak (None: not measured)."""
        a = self.hbm_achievable_tb_s
        return None if a is None else a / self.hbm_bandwidth_tb_s

    @property
    def hbm_bandwidth_bytes_per_s(self) -> float:
        """Peak HBM bandwidth, bytes/s."""
        return self.hbm_bandwidth_tb_s * TB

    def dense_flops_per_s(self, dtype: str) -> float | None:
        """Dense peak FLOP/s for a compute dtype (bf16, fp8, fp4); None where the GPU has none."""
        tflops = {
            "bf16": self.dense_tflops_bf16,
            "fp16": self.dense_tflops_bf16,
            "fp8": self.dense_tflops_fp8,
            "fp4": self.dense_tflops_fp4,
        }.get(dtype)
        return None if tflops is None else tflops * TERA


class PublishedParams(_Frozen):
    """A parameter count as its publisher states it."""

    total: int = Field(gt=0)
    active: int | None = Field(default=None, gt=0)
    rounded_to: int = Field(default=1, gt=0)
    # Publishers differ on what "active" means: DeepSeek and OpenAI leave the input embedding out
    # (a table lookup, not a matmul); Mistral and Qwen count it.
    active_counts_input_embedding: bool = True
    counts_vision_tower: bool = False  # the total includes a vision encoder capcliff does not model
    scope: str = ""
    source: str = Field(min_length=1)


class ModelCard(_Frozen):
    """A catalog model: metadata plus its HF `config.json` fields, verbatim, under `config`."""

    id: str
    name: str
    hf_repo: str
    native_dtype: WeightDType
    source: str = Field(min_length=1)
    notes: str = ""
    published_params: PublishedParams | None = None
    config: dict[str, Any]
