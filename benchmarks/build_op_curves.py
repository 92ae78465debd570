"""Rebuild capcliff/perf/data/op_curves.json from aiconfigurator-core's measured kernel tables.

Run: python benchmarks/build_op_curves.py [--check] [--aiter DIR]
(needs `pip install '.[kernels]'`; writes the JSON, or with --check prints how far the shipped
file is from a rebuild; asserts nothing. --aiter DIR: a git clone of ROCm/aiter holding
AITER_COMMIT, for the AMD curves; without it the shipped AMD curves are kept as they are)

aiconfigurator-core (NVIDIA, Apache-2.0) ships per-GPU, per-engine tables of measured kernel
latencies (systems/data/<system>/<op>/<backend>/<release>/*.parquet). From two of them this
script distils, per GPU, engine and weight format, how long a weight-reading kernel takes as a
function of the tokens it runs over:

- dense GEMM (gemm_perf): an M x N x K matmul reading W = N x K x bytes-per-element bytes;
- routed-expert MoE (moe_perf, `balanced` routing): T tokens routed to top-k of E experts,
  each GPU holding E / ep experts sliced 1 / moe_tp, reading the experts the tokens touch,
  E / ep x (1 - (1 - k / E)^T) of them (the expectation capcliff's roofline uses), three
  hidden x inter / moe_tp matrices each (gate, up, down).

For every token count t the table's shapes give points (bytes read, latency); a line
latency = floor_s + bytes / (fraction x peak HBM bytes/s) is fitted through them by least
squares on relative error. `floor_s` is the kernel's fixed cost (launch, tail, synchronisation:
what no byte count explains) and `fraction` the share of the GPU's peak HBM bandwidth the kernel
reaches on its bytes. Where several kernels were measured for one format (e.g. Triton and
CUTLASS MoE), each shape keeps its fastest: the engine picks among them per shape.

Only the memory-bound range is kept (t <= MAX_TOKENS): above it the roofline's compute term
takes over. Each curve records its source: aiconfigurator-core's version, the system, the
backend's table release and the table file.

The compute term's curves (`compute_curves`) come from the same two tables at the token counts
of prefill chunks and large batches (COMPUTE_TOKENS, 512-16384): per token count a line
latency = floor_s + FLOPs / (flops_fraction x peak FLOP/s) through the same shapes, where FLOPs
= 2 x M x N x K for a GEMM and 2 x T x top-k / ep x 3 x hidden x inter / moe_tp for a MoE layer
(the token-expert pairs that land on one GPU under balanced routing) and the peak is the
system's dense tensor-core figure for the format in aiconfigurator's system file (bfloat16,
fp8 for both FP8 formats, fp4 for NVFP4), recorded with the curve. At 512 tokens a GEMM's
compute line is its weight-read line (the same points; FLOPs and bytes are both proportional to
N x K). A compute curve is kept only where the same table's weight-read curve is (the same
test of a bandwidth-bound kernel) and no fraction exceeds 1. MLA prefill attention
(context_mla_perf) gets a compute line over the prompt length (`mla_context`, per KV dtype and
heads per GPU), its FLOPs counted in the MHA form the engines run (2 x (128 + 64 + 128) per
causal pair and head) at the BF16 peak.

AMD GPUs (`aiter_curves`): ROCm/aiter (AMD, MIT) ships the tuned kernel tables its dispatcher
reads, each row a shape, the CU count it was tuned on and the measured time of the fastest
kernel (`us`). The DeepSeek-V3 block-FP8 tables give, per GPU, the GEMM curve (the same fit as
above; aiter pads M < 16 to 16, so the MI325X rows start at 16 tokens and the curve holds its
first values below) and its compute line, and the fused-MoE curve. The fused-MoE table holds one
to three shapes per token count, too few for a line, so there the fraction is 1 (a named
assumption: the kernel reads its touched experts at peak HBM bandwidth) and the floor is the
median over the shapes of measured time - bytes / peak: everything the bytes at peak do not
explain is fixed cost. CU counts name GPUs through each row's commit (AITER_GPUS).
vLLM's dense FP8 GEMMs on MI300X (AITER_DENSE) come the same way from the rows AMD measured on
MI300X for Llama 70B and 405B in ROCm/aiter#1092 (aiter's CK row-scaled 8-bit GEMM).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import statistics
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "capcliff" / "perf" / "data" / "op_curves.json"
# aiconfigurator system -> capcliff hardware id
SYSTEMS = {
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
}
BACKENDS = ("sglang", "trtllm", "vllm")
# aiconfigurator's weight formats -> bytes per stored element (scales included: block FP8 adds
# one fp32 scale per 128 x 128 block, NVFP4 one fp8 scale per 16 elements)
FORMATS = {
    "bfloat16": 2.0,
    "fp8": 1.0,
    "fp8_block": 1.0 + 4.0 / (128 * 128),
    "nvfp4": 0.5 + 1.0 / 16,
}
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # MLA: batch sizes (256 and 512 as measured)
MAX_TOKENS = 512
# Shapes kept for the fit: weights per GPU between these (bytes). Smaller kernels are all floor;
# larger are not in decode.
MIN_BYTES = 256 * 1024
MAX_BYTES = 2 * 1024**3
# A fit is dropped (the roofline keeps its constants there) when it does not describe a
# bandwidth-bound kernel: a fixed cost over 50 us for one token, or under a fifth of peak bandwidth
# (vLLM's block-FP8 GEMM table: 56-536 us "floors"; its per-tensor FP8 MoE: 10-17 % of peak).
MAX_FLOOR_US = 50.0
MIN_FRACTION = 0.2
# Compute curves: tokens per GPU in one GEMM or MoE call (the tables measure M up to 32768 and
# MoE tokens up to 16384), and the system file's peak per format.
COMPUTE_TOKENS = (512, 1024, 2048, 4096, 8192, 16384)
PEAK_FLOPS = {
    "bfloat16": "bfloat16_tc_flops",
    "fp8": "fp8_tc_flops",
    "fp8_block": "fp8_tc_flops",
    "nvfp4": "fp4_tc_flops",
}


def _package_dir() -> Path:
    import aiconfigurator_core

    return Path(aiconfigurator_core.__file__).parent


def _current_release(system: str, backend: str) -> str:
    from aiconfigurator_core.sdk import perf_database

    return str(perf_database.resolve_query_version(system, backend, "current"))


def _table(system: str, op: str, backend: str, release: str, name: str) -> Path | None:
    folder = _package_dir() / "systems" / "data" / system / op / backend
    path = folder / release / name
    return path if path.exists() else None


def _fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(floor_s, seconds per byte) minimising sum(((a + s x) - y) / y)^2)."""
    w = [1.0 / (y * y) for _, y in points]
    sw = sum(w)
    sx = sum(wi * x for wi, (x, _) in zip(w, points, strict=True))
    sy = sum(wi * y for wi, (_, y) in zip(w, points, strict=True))
    sxx = sum(wi * x * x for wi, (x, _) in zip(w, points, strict=True))
    sxy = sum(wi * x * y for wi, (x, y) in zip(w, points, strict=True))
    slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    return max((sy - slope * sx) / sw, 0.0), slope


def _fit_grid(
    by_tokens: dict[int, list[tuple[float, float]]], peak_per_s: float, grid: tuple[int, ...]
) -> tuple[list[int], list[float], list[float]]:
    """(amount, seconds) points per token count -> the token counts with a physical fit, their
    floors (us) and their fractions of `peak_per_s` (bytes or FLOPs per second)."""
    tokens, floors, fractions = [], [], []
    for t in grid:
        points = by_tokens.get(t, [])
        if len(points) < 4:
            continue
        floor_s, s_per_unit = _fit(points)
        if s_per_unit <= 0:
            continue
        tokens.append(t)
        floors.append(round(floor_s * 1e6, 3))
        fractions.append(round(1.0 / (s_per_unit * peak_per_s), 4))
    return tokens, floors, fractions


def _curve(
    by_tokens: dict[int, list[tuple[float, float]]],
    peak_bytes_per_s: float,
    *,
    decode_fraction_only: bool = False,
) -> dict[str, list[float]] | None:
    """The weight-read curve, or None where it does not describe a bandwidth-bound kernel (with
    `decode_fraction_only`, the fraction test looks at the first token count alone: aiter's
    GEMMs fall under a fifth of peak past 256 tokens, where the compute line takes over)."""
    tokens, floors, fractions = _fit_grid(by_tokens, peak_bytes_per_s, TOKENS)
    fractions = [min(1.0, f) for f in fractions]
    if len(tokens) < 3 or floors[0] > MAX_FLOOR_US:
        return None
    if (fractions[0] if decode_fraction_only else min(fractions)) < MIN_FRACTION:
        return None
    return {"tokens": tokens, "floor_us": floors, "hbm_fraction": fractions}


def _compute_curve(
    by_tokens: dict[int, list[tuple[float, float]]],
    peak_flops_per_s: float,
    grid: tuple[int, ...] = COMPUTE_TOKENS,
) -> dict[str, list[float]] | None:
    """(FLOPs, seconds) points per token count -> floor and fraction of peak FLOP/s."""
    tokens, floors, fractions = _fit_grid(by_tokens, peak_flops_per_s, grid)
    if len(tokens) < 3 or max(fractions) > 1.0:
        return None
    return {"tokens": tokens, "floor_us": floors, "flops_fraction": fractions}


def _fastest(frame: Any, keys: list[str]) -> Any:
    return frame.groupby(keys, as_index=False)["latency"].min()


def gemm_curves(
    frame: Any,
    peak: float,
    peaks: dict[str, float] | None = None,
    *,
    decode_fraction_only: bool = False,
) -> dict[str, dict[str, list[float]]]:
    """Per weight format: the dense GEMM curve over M tokens; with `peaks` (peak FLOP/s per
    format), the compute curves over COMPUTE_TOKENS instead (where the weight-read curve is)."""
    out = {}
    for fmt, bpe in FORMATS.items():
        part = frame[(frame.gemm_dtype == fmt) & (frame.m <= max(COMPUTE_TOKENS))]
        part = part[(part.n >= 512) & (part.k >= 512)]
        if part.empty:
            continue
        part = _fastest(part, ["m", "n", "k"])
        by_tokens: dict[int, list[tuple[float, float]]] = {}
        by_flops: dict[int, list[tuple[float, float]]] = {}
        for m, n, k, ms in part[["m", "n", "k", "latency"]].itertuples(index=False):
            size = float(n) * float(k) * bpe
            if MIN_BYTES <= size <= MAX_BYTES and ms > 0:
                if m <= MAX_TOKENS:
                    by_tokens.setdefault(int(m), []).append((size, ms * 1e-3))
                by_flops.setdefault(int(m), []).append((2.0 * m * n * k, ms * 1e-3))
        found = _format_curve(
            _curve(by_tokens, peak, decode_fraction_only=decode_fraction_only),
            by_flops, peaks.get(fmt) if peaks else None, weight_reads=peaks is None,
        )  # fmt: skip
        if found:
            out[fmt] = found
    return out


def _format_curve(
    curve: dict[str, list[float]] | None,
    by_flops: dict[int, list[tuple[float, float]]],
    peak_flops: float | None,
    *,
    weight_reads: bool,
) -> dict[str, Any] | None:
    """One weight format's entry: the weight-read `curve` (`weight_reads`), else, where the
    format has a weight-read curve and a peak, its compute curve with that peak; None: none."""
    if not curve:
        return None
    if weight_reads:
        return curve
    compute = _compute_curve(by_flops, peak_flops) if peak_flops else None
    return {**compute, "peak_flops_per_s": peak_flops} if compute else None


def moe_curves(
    frame: Any, peak: float, peaks: dict[str, float] | None = None
) -> dict[str, dict[str, list[float]]]:
    """Per weight format: the routed-expert MoE curve over T tokens (balanced routing); with
    `peaks`, the compute curves over COMPUTE_TOKENS instead (where the weight-read curve is)."""
    out = {}
    frame = frame[(frame.distribution == "balanced") & (frame.num_tokens <= max(COMPUTE_TOKENS))]
    keys = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
            "moe_ep_size"]  # fmt: skip
    for fmt, bpe in FORMATS.items():
        part = frame[frame.moe_dtype == fmt]
        if part.empty:
            continue
        part = _fastest(part, keys)
        by_tokens: dict[int, list[tuple[float, float]]] = {}
        by_flops: dict[int, list[tuple[float, float]]] = {}
        for t, h, inter, k, e, tp, ep, ms in part[[*keys, "latency"]].itertuples(index=False):
            if k > e or ms <= 0:
                continue
            held = e / ep
            touched = held * (1.0 - (1.0 - k / e) ** t)
            size = touched * 3.0 * h * inter / tp * bpe
            if MIN_BYTES <= size <= MAX_BYTES:
                if t <= MAX_TOKENS:
                    by_tokens.setdefault(int(t), []).append((size, ms * 1e-3))
                flops = 2.0 * t * k / ep * 3.0 * h * inter / tp
                by_flops.setdefault(int(t), []).append((flops, ms * 1e-3))
        found = _format_curve(
            _curve(by_tokens, peak), by_flops, peaks.get(fmt) if peaks else None,
            weight_reads=peaks is None,
        )  # fmt: skip
        if found:
            out[fmt] = found
    return out


# DeepSeek's MLA cache per token and layer: kv_lora_rank 512 + rope 64 elements (the tables hold
# no dimension column: every MLA model they measure has DeepSeek's shape)
MLA_CACHE_ELEMENTS = 512 + 64
MLA_KV = {"bfloat16": 2.0, "fp8": 1.0}
MLA_HEADS = (8, 16, 32, 64, 128)  # heads per GPU: DeepSeek's 128 over TP 16, 8, 4, 2, 1


def _mla_parts(frame: Any, keys: list[str]) -> Iterator[tuple[str, float, int, Any]]:
    """("kv:heads", KV bytes per element, heads, the fastest rows per `keys`) for every KV dtype and
    heads per GPU the MLA table measured."""
    for kv, bpe in MLA_KV.items():
        for heads in MLA_HEADS:
            part = frame[(frame.kv_cache_dtype == kv) & (frame.num_heads == heads)]
            if not part.empty:
                yield f"{kv}:{heads}", bpe, heads, _fastest(part, keys)


def mla_curves(frame: Any, peak: float) -> dict[str, dict[str, list[float]]]:
    """Per KV dtype and heads per GPU ("bfloat16:16"): the MLA decode attention curve over the
    batch, each batch's line fitted across the measured contexts (one call reads batch x
    (step + 1) tokens' latent cache)."""
    out = {}
    for key, bpe, _, part in _mla_parts(frame, ["batch_size", "step"]):
        by_batch: dict[int, list[tuple[float, float]]] = {}
        for b, step, ms in part[["batch_size", "step", "latency"]].itertuples(index=False):
            size = float(b) * (step + 1) * MLA_CACHE_ELEMENTS * bpe
            if step + 1 >= 128 and ms > 0:
                by_batch.setdefault(int(b), []).append((size, ms * 1e-3))
        curve = _curve(by_batch, peak)
        if curve:
            out[key] = curve
    return out


# MLA prefill (context) attention: engines run it in the MHA form (the latent KV expanded by
# kv_b_proj), per (query, key) pair and head 2 x (qk_nope + rope + v) = 2 x (128 + 64 + 128)
# FLOPs, causal: a prompt of L tokens has L (L + 1) / 2 pairs. DeepSeek's head dims (every MLA
# model the tables measure).
MLA_MHA_FLOPS_PER_PAIR_HEAD = 2.0 * (128 + 64 + 128)
CONTEXT_ISL = (1024, 2048, 4096, 8192, 16384)


def mla_context_curves(frame: Any, peak_bf16: float) -> dict[str, dict[str, Any]]:
    """Per KV dtype and heads per GPU ("bfloat16:16"): the MLA prefill attention compute line
    over the prompt length (its "tokens"), fitted across the measured batch sizes; FLOPs in the
    MHA form at BF16 peak (the tables' attention runs in BF16)."""
    out: dict[str, dict[str, Any]] = {}
    for key, _, heads, part in _mla_parts(
        frame[frame.mla_dtype == "bfloat16"], ["batch_size", "isl"]
    ):
        by_isl: dict[int, list[tuple[float, float]]] = {}
        for b, isl, ms in part[["batch_size", "isl", "latency"]].itertuples(index=False):
            flops = b * isl * (isl + 1) / 2 * heads * MLA_MHA_FLOPS_PER_PAIR_HEAD
            if isl in CONTEXT_ISL and ms > 0:
                by_isl.setdefault(int(isl), []).append((flops, ms * 1e-3))
        curve = _compute_curve(by_isl, peak_bf16, CONTEXT_ISL)
        if curve:
            out[key] = {**curve, "peak_flops_per_s": peak_bf16}
    return out


# ROCm/aiter's tuned tables (aiter/configs/model_configs at AITER_COMMIT): DeepSeek-V3's block-FP8
# GEMMs and fused MoE.
AITER_COMMIT = "e4048607a535ace3a2b51ded31b1c8c2d45c0879"
AITER_TABLES = "aiter/configs/model_configs"
AITER_GEMM = "a8w8_blockscale_tuned_gemm_ds_v3.csv"
AITER_MOE = "a8w8_blockscale_tuned_fmoe_ds_v3.csv"
# capcliff hardware id -> (gfx target, CU count, the commit whose added rows were measured on it,
# why). MI300X and MI325X both have 304 gfx942 CUs, MI350X and MI355X 256 gfx950 CUs (AMD's
# ROCm "AMD GPU specifications" table, rocm.docs.amd.com reference/gpu-specs), so a CU count
# alone names no GPU: each GPU takes the rows that the commit naming it added and that the table
# still holds at AITER_COMMIT (MI355X: 6,339 GEMM and 51 fused-MoE rows; MI325X: 258 and 15).
AITER_GPUS = {
    "mi355x": (
        "gfx950", 256, "1638f9e7a913cf55ac527917ef3c5d9d0b09d671",
        "ROCm/aiter#3024 'Add MI355X tuned GEMM and FMoE configs for DeepSeek-V3.2 (gfx950, "
        "MI355X, cu_num=256)'",
    ),
    "mi325x": (
        "gfx942", 304, "84493f0e5b083b02c9ff3d60961f58bae547045a",
        "ROCm/aiter#3951 'tuned a8w8 blockscale GEMM + FMoE configs for DSv3.2 TP8 ... gfx942 "
        "(MI325X, 304 CU)'",
    ),
}  # fmt: skip
# Curves a GPU has no table for, taken from another GPU's: id -> (measured GPU, the assumption).
# Only an (op, engine, format) the GPU has no curve of its own for is taken, and only a curve
# measured on the other GPU (never one it took itself). MI300X and MI325X are one gfx942 die
# with 304 CUs; each takes the other's engine: SGLang's block-FP8 rows were measured on MI325X,
# vLLM's dense FP8 rows (AITER_DENSE) on MI300X.
AITER_BORROWED = {
    "mi300x": (
        "mi325x",
        "assumption: MI325X's curves on MI300X (same gfx942 die, 304 CUs and clocks; only the "
        "HBM differs), at the same fraction of MI300X's peak HBM",
    ),
    "mi325x": (
        "mi300x",
        "assumption: MI300X's curves on MI325X (same gfx942 die, 304 CUs and clocks; only the "
        "HBM differs), at the same fraction of MI325X's peak HBM",
    ),
}
AITER_FORMAT = "fp8_block"
AITER_QUANT = "QuantType.per_1x128"
# Dense 8-bit GEMMs of Llama 70B and 405B (vLLM's per-tensor FP8 checkpoints): ROCm/aiter#1092
# ("[MI300X] tune Gemm performance for llama 70b/405b", AMD, 2025-09-26) timed aiter's CK
# row-scaled GEMM (`a8w8_rowwise`) on MI300X for their linear shapes at TP 1, 2, 4 and 8 and M up
# to 32768 (288 rows with cu_num 304 in aiter/configs/a8w8_tuned_gemm.csv at the PR's head
# commit; the table before it had none; the rows never reached aiter's main, so they are read at
# that commit). id -> (CU count, commit, table, why).
AITER_DENSE = {
    "mi300x": (
        304, "035725098db2d65f8d5757d6c8488c6176b00b93", "aiter/configs/a8w8_tuned_gemm.csv",
        "ROCm/aiter#1092 '[MI300X] tune Gemm performance for llama 70b/405b' (Llama 70B/405B "
        "shapes, TP 1/2/4/8, on MI300X)",
    ),
}  # fmt: skip
AITER_DENSE_ENGINE = "vllm"
AITER_DENSE_FORMAT = "fp8"
# The tuner of that date (csrc/ck_gemm_a8w8/gemm_a8w8_tune.py at the commit) times int8
# operands. gfx942 runs INT8 and FP8 matrix ops at the same dense peak (AMD MI300X datasheet:
# 2,614.9 TOPS and TFLOP/s) and both read one byte per weight; the PR's own FP8 (e4m3fnuz) run
# of the same CK kernel at 1 x 1280 x 8192 took 17.6 us against the table's 16.0 us for int8.
AITER_DENSE_ASSUMPTION = (
    "assumption: aiter's CK row-scaled int8 GEMM times (same one-byte weights and dense peak as "
    "FP8 on gfx942) stand for vLLM's FP8 GEMMs"
)


def _git_show(repo: Path, commit: str, path: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout


def aiter_rows(repo: Path, name: str, commit: str) -> Any:
    """The rows of table `name` at AITER_COMMIT that `commit` added (lines not in its parent)."""
    import pandas as pd

    path = f"{AITER_TABLES}/{name}"
    before = set(_git_show(repo, f"{commit}^", path).splitlines())
    added = set(_git_show(repo, commit, path).splitlines()) - before
    lines = _git_show(repo, AITER_COMMIT, path).splitlines()
    kept = [lines[0], *(line for line in lines[1:] if line in added)]
    return pd.read_csv(io.StringIO("\n".join(kept) + "\n"))


def aiter_gemm_frame(rows: Any, gfx: str, cu_num: int) -> Any:
    """aiter GEMM rows of one GPU -> gemm_curves' columns (block-FP8 weights, latency in ms)."""
    import pandas as pd

    part = rows[(rows.gfx == gfx) & (rows.cu_num == cu_num) & (rows.us > 0)]
    return pd.DataFrame({
        "gemm_dtype": AITER_FORMAT, "m": part.M, "n": part.N, "k": part.K,
        "latency": part.us * 1e-3,
    })  # fmt: skip


def aiter_moe_curve(rows: Any, cu_num: int, peak: float) -> dict[str, list[float]] | None:
    """The fused-MoE curve of one GPU's block-FP8 rows: per token count, fraction 1 and the
    median over the shapes of (measured - touched experts' bytes / peak) as the floor."""
    part = rows[(rows.cu_num == cu_num) & (rows.us > 0) & (rows.q_type == AITER_QUANT)]
    by_tokens: dict[int, list[float]] = {}
    cols = ["token", "model_dim", "inter_dim", "expert", "topk", "us"]
    for t, h, inter, e, k, us in part[cols].itertuples(index=False):
        touched = e * (1.0 - (1.0 - k / e) ** t)
        size = touched * 3.0 * h * inter * FORMATS[AITER_FORMAT]
        if t <= MAX_TOKENS:
            by_tokens.setdefault(int(t), []).append(max(us * 1e-6 - size / peak, 0.0))
    tokens = [t for t in TOKENS if t in by_tokens]
    if len(tokens) < 3:
        return None
    return {
        "tokens": tokens,
        "floor_us": [round(statistics.median(by_tokens[t]) * 1e6, 3) for t in tokens],
        "hbm_fraction": [1.0] * len(tokens),
    }


def aiter_dense_curves(
    repo: Path, hardware: str, cu_num: int, commit: str, path: str, why: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(weight-read curves, compute curves) of vLLM's dense FP8 GEMMs on `hardware` from the
    `cu_num` rows of aiter table `path` at `commit` (AITER_DENSE)."""
    import pandas as pd

    rows = pd.read_csv(io.StringIO(_git_show(repo, commit, path)))
    part = rows[(rows.cu_num == cu_num) & (rows.us > 0)]
    frame = pd.DataFrame({
        "gemm_dtype": AITER_DENSE_FORMAT, "m": part.M, "n": part.N, "k": part.K,
        "latency": part.us * 1e-3,
    })  # fmt: skip
    spec = _hardware(hardware)
    peak = float(spec["hbm_bandwidth_tb_s"]) * 1e12
    peaks = {AITER_DENSE_FORMAT: float(spec["dense_tflops_fp8"]) * 1e12}
    where = {
        "hardware": hardware, "op": "gemm", "engine": AITER_DENSE_ENGINE,
        "system": f"{hardware} ({cu_num} CUs)", "release": f"ROCm/aiter {commit}",
        "measured_on": hardware, "provenance": why, "table": path,
        "assumption": AITER_DENSE_ASSUMPTION,
    }  # fmt: skip
    curves = [
        {**where, "peak_hbm_bytes_per_s": peak, **curve, "format": fmt}
        for fmt, curve in gemm_curves(frame, peak, decode_fraction_only=True).items()
    ]
    compute = [
        {**where, **curve, "format": fmt}
        for fmt, curve in gemm_curves(frame, peak, peaks, decode_fraction_only=True).items()
    ]
    return curves, compute


def _hardware(hardware_id: str) -> dict[str, Any]:
    spec: dict[str, Any] = tomllib.loads((ROOT / "hardware" / f"{hardware_id}.toml").read_text())
    return spec


def aiter_curves(repo: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(weight-read curves, compute curves) of every AMD GPU from aiter's tables in `repo`; peaks
    from capcliff's hardware files (vendor specs)."""
    curves: list[dict[str, Any]] = []
    compute_curves: list[dict[str, Any]] = []
    for hardware, (gfx, cu_num, commit, why) in AITER_GPUS.items():
        spec = _hardware(hardware)
        peak = float(spec["hbm_bandwidth_tb_s"]) * 1e12
        peaks = {AITER_FORMAT: float(spec["dense_tflops_fp8"]) * 1e12}
        where = {
            "engine": "sglang", "format": AITER_FORMAT,
            "system": f"{hardware} ({gfx}, {cu_num} CUs)", "release": f"ROCm/aiter {AITER_COMMIT}",
            "measured_on": hardware, "provenance": why,
        }  # fmt: skip
        gemm = aiter_gemm_frame(aiter_rows(repo, AITER_GEMM, commit), gfx, cu_num)
        table = {"table": f"{AITER_TABLES}/{AITER_GEMM}"}
        for fmt, curve in gemm_curves(gemm, peak, decode_fraction_only=True).items():
            curves.append({"hardware": hardware, "op": "gemm", **where, **table,
                           "peak_hbm_bytes_per_s": peak, **curve, "format": fmt})  # fmt: skip
        computed = gemm_curves(gemm, peak, peaks, decode_fraction_only=True)
        for fmt, curve in computed.items():
            compute_curves.append({"hardware": hardware, "op": "gemm", **where, **table,
                                   **curve, "format": fmt})  # fmt: skip
        moe = aiter_moe_curve(aiter_rows(repo, AITER_MOE, commit), cu_num, peak)
        if moe:
            curves.append({"hardware": hardware, "op": "moe", **where,
                           "table": f"{AITER_TABLES}/{AITER_MOE}",
                           "peak_hbm_bytes_per_s": peak, **moe})  # fmt: skip
    for hardware, (cu_num, commit, path, why) in AITER_DENSE.items():
        dense, dense_compute = aiter_dense_curves(repo, hardware, cu_num, commit, path, why)
        curves += dense
        compute_curves += dense_compute
    return borrowed(curves, compute_curves)


def borrowed(
    curves: list[dict[str, Any]], compute_curves: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`curves` and `compute_curves` with AITER_BORROWED's: each GPU takes the curves measured on
    its twin for the (op, engine, format) it has none of (idempotent: run again, nothing more)."""

    def key(c: dict[str, Any]) -> tuple[str, str, str, str]:
        return (c["hardware"], c["op"], c["engine"], c.get("format", ""))

    out, out_compute = list(curves), list(compute_curves)
    for hardware, (measured, assumption) in AITER_BORROWED.items():
        peak = float(_hardware(hardware)["hbm_bandwidth_tb_s"]) * 1e12
        for source, target, extra in (
            (curves, out, {"peak_hbm_bytes_per_s": peak}),
            (compute_curves, out_compute, {}),
        ):
            have = {key(c) for c in target}
            for c in source:
                if c["hardware"] != measured or c.get("measured_on") != measured:
                    continue
                copy = {**c, "hardware": hardware, **extra, "assumption": assumption}
                if key(copy) not in have:
                    target.append(copy)
                    have.add(key(copy))
    return out, out_compute


def _spec(system: str) -> dict[str, Any]:
    import yaml

    spec = yaml.safe_load((_package_dir() / "systems" / f"{system}.yaml").read_text())
    gpu: dict[str, Any] = spec["gpu"]
    return gpu


def _peak(system: str) -> float:
    return float(_spec(system)["mem_bw"])


def _peak_flops(system: str) -> dict[str, float]:
    """Dense tensor-core FLOP/s per weight format (the system file's; 0 where it has none)."""
    gpu = _spec(system)
    return {fmt: float(gpu.get(key, 0)) for fmt, key in PEAK_FLOPS.items()}


def _amd_curves(
    aiter: Path | None, shipped: dict[str, Any] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The AMD curves from the aiter clone `aiter`, or (None) `shipped`'s as they are."""
    if aiter is not None:
        return aiter_curves(aiter)
    old = shipped or {}
    return borrowed(
        [c for c in old.get("curves", []) if "measured_on" in c],
        [c for c in old.get("compute_curves", []) if "measured_on" in c],
    )


def build(aiter: Path | None, shipped: dict[str, Any] | None) -> dict[str, Any]:
    """Every curve the installed aiconfigurator-core's tables give, and the AMD curves of the
    ROCm/aiter clone `aiter` (None: `shipped`'s AMD curves, as they are)."""
    import pandas as pd

    curves, compute_curves = [], []
    for system, hardware in SYSTEMS.items():
        peak = _peak(system)
        peaks = _peak_flops(system)
        for backend in BACKENDS:
            release = _current_release(system, backend)
            for op, name, distil, column in (
                ("gemm", "gemm_perf.parquet", gemm_curves, "gemm"),
                ("moe", "moe_perf.parquet", moe_curves, "moe"),
                ("mla", "generation_mla_perf.parquet", mla_curves, "mla"),
            ):
                path = _table(system, op, backend, release, name)
                if path is None:
                    continue
                frame = pd.read_parquet(path)
                table = path.relative_to(_package_dir()).as_posix()
                where = {"system": system, "release": release, "table": table}
                for fmt, curve in distil(frame, peak).items():
                    curves.append({
                        "hardware": hardware, "engine": backend, "op": column, "format": fmt,
                        **where, "peak_hbm_bytes_per_s": peak, **curve,
                    })  # fmt: skip
                if op == "mla":
                    context = _table(system, op, backend, release, "context_mla_perf.parquet")
                    if context is None:
                        continue
                    where = {
                        **where, "table": context.relative_to(_package_dir()).as_posix()
                    }  # fmt: skip
                    mla = mla_context_curves(pd.read_parquet(context), peaks["bfloat16"])
                    for fmt, curve in mla.items():
                        compute_curves.append({
                            "hardware": hardware, "engine": backend, "op": "mla_context",
                            "format": fmt, **where, **curve,
                        })  # fmt: skip
                    continue
                for fmt, curve in distil(frame, peak, peaks).items():
                    compute_curves.append({
                        "hardware": hardware, "engine": backend, "op": column, "format": fmt,
                        **where, **curve,
                    })  # fmt: skip
    amd, amd_compute = _amd_curves(aiter, shipped)
    curves += amd
    compute_curves += amd_compute
    return {
        "source": (
            f"aiconfigurator-core {version('aiconfigurator-core')} (NVIDIA, Apache-2.0), "
            "measured kernel tables; distilled by benchmarks/build_op_curves.py"
        ),
        "amd_source": (
            f"ROCm/aiter {AITER_COMMIT} (AMD, MIT), tuned kernel tables (measured us per shape "
            "and CU count); distilled by benchmarks/build_op_curves.py"
        ),
        "fit": "latency = floor + bytes / (hbm_fraction x peak) per token count, relative LSQ",
        "compute_fit": (
            "latency = floor + FLOPs / (flops_fraction x peak_flops_per_s) per token count, "
            "relative LSQ; peak: the system file's dense tensor-core FLOP/s of the format"
        ),
        "curves": curves,
        "compute_curves": compute_curves,
    }


def _compare(old: dict[str, Any], new: dict[str, Any]) -> float:
    """Largest relative difference of any fraction between two files with the same curves."""

    def key(c: dict[str, Any]) -> tuple[str, ...]:
        return (c["hardware"], c["engine"], c["op"], c["format"])

    worst = 0.0
    olds = {key(c): c for c in old["curves"]}
    for c in new["curves"]:
        o = olds.get(key(c))
        if o is None or o["tokens"] != c["tokens"]:
            return math.inf
        for a, b in zip(o["hbm_fraction"], c["hbm_fraction"], strict=True):
            worst = max(worst, abs(a - b) / b)
    return worst


def _dumps(data: dict[str, Any]) -> str:
    """JSON with one curve per line (readable diffs when the tables are rebuilt)."""
    lists = ("curves", "compute_curves")
    head = {k: v for k, v in data.items() if k not in lists}
    body = json.dumps(head, indent=1)[:-2]
    for name in lists:
        lines = [json.dumps(c) for c in data[name]]
        body += f',\n "{name}": [\n  ' + ",\n  ".join(lines) + "\n ]"
    return body + "\n}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--aiter", type=Path, help="a git clone of ROCm/aiter (AMD curves)")
    args = parser.parse_args()
    shipped = json.loads(OUT.read_text()) if OUT.exists() else None
    data = build(args.aiter, shipped)
    text = _dumps(data)
    if args.check:
        old = json.loads(OUT.read_text())
        print(f"largest relative difference of a fraction: {_compare(old, data):.3g}")
        return
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    sys.stdout.write(f"{len(data['curves'])} curves -> {OUT.relative_to(ROOT)}\n")


if __name__ == "__main__":
    main()
