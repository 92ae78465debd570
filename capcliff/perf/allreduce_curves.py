"""Measured latency of one TP all-reduce (message bytes -> seconds) for the kernels the engines
run, each table with its source: the custom all-reduces of SGLang PR #2904 on H100/H200, RCCL on
MI300X/MI325X, and on B200/B300 TensorRT-LLM's Lamport kernel (SGLang's FlashInfer fusion) and
its AUTO strategy (aiconfigurator-core 0.12). Which table a deployment takes is decided by its
engine profile (`profiles.fuses_allreduce`, `runs_trtllm_allreduce`, `efficiency`); `allreduce_s`
reads a curve at a message size."""

from __future__ import annotations

from capcliff.perf.op_curves import MICRO, data_file

# Custom all-reduce latency (message bytes -> seconds) on 8 x H100 SXM (NVLink 4, NVSwitch), one
# call without CUDA-graph capture, from sgl-project/sglang PR #2904 (2025-01-15, "unit test
# performance in H100"): columns for TP 2, 4 and 8 of the TensorRT-LLM-derived kernel SGLang
# ships ("custom allreduce") and of vLLM's kernel ("vllm").
_MESSAGE_BYTES = (512, 4_096, 32_768, 262_144, 524_288, 1_048_576)
_TRTLLM_KERNEL_US = {
    2: (3.7, 3.9, 4.5, 7.9, 12.5, 19.9),
    4: (4.8, 3.7, 4.8, 13.9, 20.2, 31.1),
    8: (5.9, 5.7, 7.8, 16.7, 22.1, 33.8),
}
_VLLM_KERNEL_US = {
    2: (9.5, 8.8, 8.7, 12.9, 17.7, 26.6),
    4: (9.1, 8.5, 9.2, 20.6, 26.9, 40.2),
    8: (10.1, 9.3, 11.8, 24.1, 30.4, 45.0),
}
ALLREDUCE_SOURCE = "sgl-project/sglang PR #2904, custom all-reduce latency table, 8 x H100 SXM"
# The fabrics those measurements describe (hardware ids): H200 has H100's NVLink 4 / NVSwitch.
MEASURED_FABRICS = frozenset({"h100-sxm", "h200-sxm"})

# SGLang's fused all-reduce on Blackwell (B200, B300): SGLang turns
# `--enable-flashinfer-allreduce-fusion` on by itself for DeepSeek-V3/R1 and the other MoE
# families it lists on sm90/sm100, one node, TP > 1, no DP attention, no all-to-all MoE backend
# (python/sglang/srt/server_args.py of the 0.5.6, 0.5.9 and 0.5.12 wheels), and every InferenceX
# B200/B300 SGLang R1 script passes the flag. Each decode layer's two TP all-reduces then run
# FlashInfer's `trtllm_allreduce_fusion` (all-reduce + residual add + RMSNorm) up to 2,048 tokens
# (layers/communicator.py `apply_flashinfer_allreduce_fusion`, FUSE_ALLREDUCE_MAX_BATCH_SIZE;
# the post-MoE one fused into the next layer's norm, models/deepseek_v2.py
# `should_fuse_mlp_allreduce_with_next_layer`), not SGLang's custom all-reduce. That kernel is
# TensorRT-LLM's (`allreduce_fusion_kernel_oneshot_lamport`, one-shot Lamport at small messages,
# two-shot above; flashinfer-ai/flashinfer ports it as its "trtllm" backend). Its measured times:
# aiconfigurator-core 0.12, `systems/data/{b200_sxm,b300_sxm}/comm/trtllm/1.3.0rc20/
# custom_allreduce_perf.parquet` (TensorRT-LLM's AllReduce, BF16, CUDA graph), message size in
# BF16 elements -> latency, TP 2/4/8, up to 4,194,304 elements (585 tokens of 7,168), copied to
# perf/data/lamport_allreduce.json; the bandwidth line past them. Named assumption: FlashInfer's
# port runs at TensorRT-LLM's speed and the fused norm adds nothing (the norm kernel keeps its
# own floor).
LAMPORT_ALLREDUCE_FILE = "lamport_allreduce.json"


def lamport_allreduce_curve(hardware_id: str, *, tp: int) -> tuple[tuple[float, float], ...]:
    """(message bytes, seconds) of one FlashInfer / TensorRT-LLM fused all-reduce over `tp`
    ranks on `hardware_id` (B200, B300); () where it was not measured (another GPU or TP)."""
    return _measured_allreduce_curve(LAMPORT_ALLREDUCE_FILE, hardware_id, tp)


def _measured_allreduce_curve(
    name: str, hardware_id: str, tp: int
) -> tuple[tuple[float, float], ...]:
    """(message bytes, seconds) of data file `name`'s BF16 all-reduce table for `hardware_id`
    at `tp` ranks; () where it has none."""
    data = data_file(name)
    table = data["latency_us"].get(hardware_id, {}).get(str(tp))
    if table is None:
        return ()
    return tuple((2.0 * n, us * MICRO) for n, us in zip(data["elements"], table, strict=True))


# TensorRT-LLM's own all-reduce on Blackwell (B200, B300). InferenceX's TensorRT-LLM scripts set
# no `allreduce_strategy`, so it is AUTO. On one node with NVLink and P2P, AUTO runs the custom
# kernels up to the IPC workspace (8 MB at TP > 2; cpp/tensorrt_llm/common/customAllReduceUtils.h
# getMaxRequiredWorkspaceSize; 64 MB from NVIDIA/TensorRT-LLM#9145) and NCCL past it; below it
# the strategy is 1.1's MIN_LATENCY one-shot up to 128 tokens (NVIDIA/TensorRT-LLM#5432), the
# lookup table (customAllReduceUtils.h read at NVIDIA/TensorRT-LLM 005b299; the release tags were
# not readable here; cpp/tensorrt_llm/thop/allreduceOp.cpp selectImplementation calls it for
# AUTO), AllReduceBestStrategyTableSM100: SM 100 and 103 share it; hidden
# 7,168 reads the 4,096 row, log2 floor; TP 8 RESIDUAL_RMS_NORM, the fusion DeepSeek's decoder
# layers use without attention DP (modeling_deepseekv3.py PRE_MOE_FUSION / POST_MOE_FUSION):
# ONESHOT 1-256 tokens, TWOSHOT 512, NCCL from 1,024), and from the AllReduce autotuner
# (NVIDIA/TensorRT-LLM#8531) the fastest of NCCL, NCCL_SYMMETRIC, ONESHOT and TWOSHOT. Every one
# runs a decode step's all-reduce (1-256 tokens) in the one-shot kernel or faster. Measured:
# aiconfigurator-core 0.12 ran that AllReduce module at AUTO on B200 and B300 over every size
# (`comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet`, collector/collect_all_reduce.py: fusion
# NONE, rows of 4,096 elements, the same lookup row as R1's 7,168), copied whole to
# perf/data/trtllm_allreduce.json: 5.0-6.3 us to 65,536 elements, 55 us at 4,194,304, then the
# large-message sizes a prefill chunk sends.
TRTLLM_ALLREDUCE_FILE = "trtllm_allreduce.json"


def trtllm_allreduce_curve(hardware_id: str, *, tp: int) -> tuple[tuple[float, float], ...]:
    """(message bytes, seconds) of one TensorRT-LLM AllReduce at strategy AUTO over `tp` ranks on
    `hardware_id` (B200, B300); () where it was not measured (another GPU or TP)."""
    return _measured_allreduce_curve(TRTLLM_ALLREDUCE_FILE, hardware_id, tp)


# RCCL all-reduce latency (message bytes -> seconds) on 8 x MI300X (xGMI full mesh), rccl-tests
# all_reduce_perf, float sum, out-of-place, one node, ROCm/RCCL of 2025 (hisohara/ai-scripts
# training/01_rccl-smoketest/README.md, "RCCL Tests with MPI (AAC8 Kubernetes)", commit 0780bb3).
# Measured for 8 ranks only. The same file's 8 x MI325X run reaches the same large-message bus
# bandwidth (316-319 GB/s against MI300X's 314-316 GB/s) on the same xGMI mesh, so the curve is
# used for MI325X too; MI355X has only a two-node run there, so it keeps latency + bandwidth.
# Named assumption for SGLang: on HIP it runs its TP all-reduces through aiter's custom
# all-reduce, not RCCL (`dispatch_custom_allreduce`, SGLANG_USE_AITER_AR defaults to true;
# python/sglang/srt/distributed/device_communicators/custom_all_reduce.py, sglang 004e656). No
# gfx942 latency of that kernel family was found; vLLM's ROCm custom all-reduce measured 6.3-7.6
# us up to 96 KB on MI355X at TP 8 (vllm-project/vllm#39080), half of RCCL's 13.7 us here.
_RCCL_MESSAGE_BYTES = (1_024, 4_096, 32_768, 262_144, 524_288, 1_048_576, 2_097_152, 4_194_304)
_RCCL_8X_MI300X_US = (13.67, 13.72, 13.94, 17.46, 27.30, 28.39, 36.68, 52.96)
RCCL_RANKS = 8
RCCL_MEASURED_FABRICS = frozenset({"mi300x", "mi325x"})


def allreduce_curve(kernel: str, *, tp: int) -> tuple[tuple[float, float], ...]:
    """(message bytes, seconds) points of one custom all-reduce over `tp` ranks of `kernel`
    (`EngineProfile.allreduce_kernel`: "trtllm" or "vllm"); () for TP 1."""
    if tp <= 1:
        return ()
    table = _TRTLLM_KERNEL_US if kernel == "trtllm" else _VLLM_KERNEL_US
    measured = max((n for n in table if n <= tp), default=2)
    return tuple(
        (float(b), us * MICRO) for b, us in zip(_MESSAGE_BYTES, table[measured], strict=True)
    )


def rccl_allreduce_curve(*, tp: int) -> tuple[tuple[float, float], ...]:
    """(message bytes, seconds) points of one RCCL all-reduce over `tp` ranks on an 8-GPU xGMI
    mesh; () where RCCL was not measured at that rank count (only 8 ranks were)."""
    if tp != RCCL_RANKS:
        return ()
    return tuple(
        (float(b), us * MICRO)
        for b, us in zip(_RCCL_MESSAGE_BYTES, _RCCL_8X_MI300X_US, strict=True)
    )


def allreduce_s(
    curve: tuple[tuple[float, float], ...], message_bytes: float, wire_bytes_per_s: float
) -> float:
    """Seconds of one all-reduce of `message_bytes`: linear between measured points, the first
    point's latency below them, and the last point plus the extra bytes at bus bandwidth past
    them (`wire_bytes_per_s`: message bytes per second the ring moves)."""
    (b0, t0) = curve[0]
    if message_bytes <= b0:
        return t0
    for b1, t1 in curve[1:]:
        if message_bytes <= b1:
            return t0 + (t1 - t0) * (message_bytes - b0) / (b1 - b0)
        b0, t0 = b1, t1
    return t0 + (message_bytes - b0) / wire_bytes_per_s
