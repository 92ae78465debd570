"""Engine step-time profiles: what an engine (and version) adds to the roofline of one step.

The roofline (`step_time.py`) prices bytes and FLOPs. Engines differ in what it leaves out:

- `host_overhead_s` (per step): CPU work (scheduling, input preparation, sampling bookkeeping)
  that the GPU waits for. Engines with an overlap scheduler hide it behind the previous step.
- `kernel_floor_s` x kernels per layer (per layer): every kernel in the decode graph costs a
  launch-and-drain gap that no byte count explains; a DeepSeek decode step runs ~2,000 of them.
- All-reduce latency against message size: measured custom all-reduce times on 8 x H100 (NVLink
  4 / NVSwitch, the H200's fabric too), interpolated; past the largest measured message the bus
  bandwidth of the hardware card takes over.
- Attention kernel efficiency: the fraction of peak HBM bandwidth the decode attention kernel
  reaches reading the KV cache (MLA: FlashMLA's published figure; GQA: the model's MBU).
- Grouped-GEMM MoE efficiency at small batches: a divisor on the time to read the routed
  experts' weights (1.0: inside the model's MBU; no published kernel figure was found).
- Attention DP, release-specific (`dp_attention_host_overhead_s`, `dp_eager_op_s`): what an
  engine's DP-attention path does differently in older releases (SGLang before PR #7269 turns
  the overlap scheduler off and runs idle ranks without CUDA graphs, so a lockstep step with an
  idle or prefilling rank lasts at least one eagerly launched pass).
- MLA models, release-specific (`mla_extend_efficiency`, `mla_kernel_floor_s`): SGLang's Triton MLA
  backend before 0.4.6 runs prefill through the absorbed kernel at a few per cent of peak, and its
  DeepSeek decode kernels before 0.4.4 cost about 14 us each; both derived from public
  measurements on other deployments (the constants below say which).

Profiles are keyed by engine and release (`engine_profile(engine, version)`); without a version
the latest modelled release's profile applies, and its label says which releases it describes.

Every figure carries its source or is labelled a named assumption; any of them can be
overridden by name (`with_overrides`) or replaced by `capcliff calibrate` from benchmark results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.overheads import VLLM_V0_MLA_ABSORBED_RELEASES
from capcliff.perf.allreduce_curves import ALLREDUCE_SOURCE
from capcliff.perf.host_time import VLLM_V1_HOST_PER_SEQ_S, VLLM_V1_HOST_PER_SEQ_SOURCE
from capcliff.perf.op_curves import (
    AITER_ORIGIN,
    compute_curve,
    compute_measured_hardware,
    curves_origin,
    measured_hardware,
    op_curve,
)
from capcliff.releases import parse_version
from capcliff.units import WeightDType

MICRO = 1e-6

# The model classes SGLang 0.5.9's server_args.py turns the fusion on for (DeepseekV3ForCausalLM,
# GptOssForCausalLM, Glm4MoeForCausalLM, Glm4MoeLiteForCausalLM, Qwen3MoeForCausalLM,
# KimiK25ForConditionalGeneration; 0.5.12 keeps them and adds newer ones), by their `model_type`.
SGLANG_ALLREDUCE_FUSION_MODEL_TYPES = frozenset(
    {"deepseek_v3", "gpt_oss", "glm4_moe", "glm4_moe_lite", "qwen3_moe", "kimi_k25"}
)


def fuses_allreduce(profile: EngineProfile, layout: Layout, arch: Architecture) -> bool:
    """Whether `profile`'s engine runs `layout`'s TP all-reduces as FlashInfer's fused kernel by
    default: SGLang with the measured kernel tables (0.5.x), a model class it turns the fusion on
    for (SGLANG_ALLREDUCE_FUSION_MODEL_TYPES), TP > 1 and no attention DP."""
    return (
        profile.engine is EngineName.SGLANG
        and profile.op_tables is not None
        and arch.model_type in SGLANG_ALLREDUCE_FUSION_MODEL_TYPES
        and layout.tp > 1
        and not layout.attention_dp
    )


def runs_trtllm_allreduce(profile: EngineProfile, layout: Layout) -> bool:
    """Whether `layout`'s TP all-reduces run TensorRT-LLM's own AllReduce at AUTO: TensorRT-LLM
    with the measured kernel tables (its current releases), TP > 1 and no attention DP."""
    return (
        profile.engine is EngineName.TRTLLM
        and profile.op_tables is not None
        and layout.tp > 1
        and not layout.attention_dp
    )


# HIP graph replay on AMD GPUs, one node of a dependent chain: KERNEL_FLOOR_S holds CUDA graph
# replay's per-node cost (ahrefs/ocannl#488: a chain of N no-op kernels stream-captured and
# replayed with a sync, ~15 us fixed + 0.58 us per node, RTX 5070 Ti) plus a drain; on ROCm the
# same measurement costs 1.54 us per node: saleelk/GraphBench results.csv (topo_bench.cpp, a
# straight chain of N null kernels added with hipGraphAddKernelNode, hipGraphLaunch +
# hipStreamSynchronize, ROCm 7.2), (12,614.6 - 1,605.1) us / (8,192 - 1,024) nodes. The CSV names
# no GPU; its README's sample output is "AMD Instinct MI300X", the repository's author works on
# AMD's HIP graph runtime (ROCm/rocm-systems PR #1073), and the cost is the runtime's and the
# command processor's, so it is used for every AMD GPU. The kernel floor on an AMD GPU is the
# profile's floor with HIP's per-node time in place of CUDA's (`hip_kernel_floor_s`).
CUDA_GRAPH_NODE_S = 0.58 * MICRO
HIP_GRAPH_NODE_S = (12_614.591 - 1_605.067) / (8_192 - 1_024) * MICRO
HIP_GRAPH_SOURCE = (
    "saleelk/GraphBench results.csv: HIP graph replay of a dependent chain of null kernels, "
    "1.54 us per node (ROCm 7.2) against CUDA's 0.58 (ahrefs/ocannl#488), added per kernel"
)
# aiter's tuned tables time kernels with `perftest` (aiter/test_common.py, ROCm/aiter 029455b):
# torch.profiler's `self_device_time_total` of the op's kernels per iteration (`get_trace_perf`),
# the kernels' own device time, not the gap between one kernel and the next. So on the GPUs whose
# op curves come from aiter (op_curves.AITER_ORIGIN) the kernels those curves price still take
# the per-kernel floor in a replayed graph. aiconfigurator's tables carry it in their floors
# already: its collector captures the calls in a CUDA graph and times replays with CUDA events,
# elapsed / runs / calls (ai-dynamo/aiconfigurator collector/helper.py `benchmark_with_power`), so
# each call's time includes its node's launch (`curves_carry_launch`).
AITER_DEVICE_TIME_SOURCE = (
    "ROCm/aiter test_common.py perftest/get_trace_perf: tuned times are profiler device time "
    "per kernel, without the gap between kernels"
)


def hip_kernel_floor_s(floor_s: float) -> float:
    """Seconds per kernel of a replayed decode graph on an AMD GPU: `floor_s` (a CUDA-graph
    floor, KERNEL_FLOOR_S by default) + HIP_GRAPH_NODE_S - CUDA_GRAPH_NODE_S."""
    return floor_s + HIP_GRAPH_NODE_S - CUDA_GRAPH_NODE_S


def curves_carry_launch(hardware_id: str, tables: str | None) -> bool:
    """Whether the measured op curves of `hardware_id` under backend `tables` include each
    kernel's launch gap (aiconfigurator's, timed per call) so that the kernels they price take
    no floor; False for aiter's (device time only, AITER_DEVICE_TIME_SOURCE) and without any."""
    if tables is None:
        return False
    origin = curves_origin(hardware_id, tables)
    return bool(origin) and not origin.startswith(AITER_ORIGIN)


# SGLang 0.5.6 - 0.5.9 on gfx942 (MI300X, MI325X) with SGLANG_USE_AITER=1, DeepSeek's block-FP8
# MLA projections: from 0.5.6 every HIP block-FP8 linear calls aiter's Triton
# `gemm_a8w8_blockscale` (python/sglang/srt/layers/quantization/fp8_utils.py of the 0.5.6 and
# 0.5.9 wheels; 0.5.5.post3 called aiter's CK kernel; sgl-project/sglang PR #13617), and the
# aiter those ROCm images bundle (v0.1.7.post5 until sgl-project/sglang PR #16619, 3b0ef17 after
# it; v0.1.10.post3 in 0.5.9's, SemiAnalysisAI/InferenceX PR #816) holds only the generic gfx942
# Triton config for it (128 x 128 tiles, no split-K:
# aiter/ops/triton/configs/gemm/gfx942-GEMM-A8W8_BLOCKSCALE.json, the same at all three).
# aiter PR #2024 (merged 2026-02-12, first tagged in v0.1.11) added gfx942 configs for the
# three MLA shapes (N, K) = (2112, 7168) fused q/kv-a, (3072, 1536) q-b and (7168, 2048) o-proj
# at TP 8; the
# ROCm Dockerfile after 0.5.9 pins v0.1.11.post1, so 0.5.10 is where capcliff assumes the tuned
# configs arrive (0.5.12's rows are the first after it in the public data). Measured cost of the
# generic config, one shape: ROCm/aiter PR #1930 (SGLang, DeepSeek-R1, 8 x MI300X, 1k/1k, 4
# clients) tuned (2112, 7168) alone and median TPOT fell from 28.76 to 22.05 ms: 6.71 ms over
# 61 layers, 110 us per layer. The other two shapes have no gfx942 measurement and are left out,
# so the term is a lower bound. ROCm/aiter PR #1232 timed the generic config of the same shape
# on MI350X at 117-129 us for 64-256 tokens, in line.
GFX942_HARDWARE = frozenset({"mi300x", "mi325x"})
AITER_UNTUNED_MLA_GEMM_S = (28.76 - 22.05) * 1e-3 / 61
AITER_UNTUNED_MLA_GEMM_SOURCE = (
    "ROCm/aiter PR #1930: tuning gfx942's Triton block-FP8 GEMM for (N, K) = (2112, 7168) cut "
    "SGLang R1 median TPOT on 8 x MI300X (4 clients) 28.76 -> 22.05 ms: 110 us per layer; the "
    "0.5.9 image's aiter v0.1.10.post3 has no gfx942 config for it (InferenceX PR #816)"
)

# SGLang's aiter attention backend (`--attention-backend aiter`, the InferenceX AMD scripts' and
# the HIP default with SGLANG_USE_AITER=1) runs an MLA model's decode attention as aiter's
# `mla_decode_fwd`: an ASM decode kernel over KV splits, then the split reduce (`mla_reduce_v1`
# with SGLANG_AITER_MLA_PERSIST=1; sgl-project/sglang
# python/sglang/srt/layers/attention/aiter_backend.py). ROCm/aiter PR #2039 (merged 2026-03-09,
# 57ed6a01a2) timed that op (its "ASM (us)" columns: the persistent FP8 ASM kernel and its reduce,
# device time, AITER_DEVICE_TIME_SOURCE) at a 21-token context, where the KV read is a few KB:
# batch 1, 15.491 us on MI300 and 12.106 us on MI355 (batches 3-64: 15.1-18.9 and 12.9-15.1 us,
# the rise being the 128 query heads' reads and writes). That is the op's time beyond its bytes;
# capcliff charges decode attention one kernel floor, so each decode layer takes the measured
# figure plus the floor of the op's second kernel (`efficiency.aiter_mla_decode_s`). The table
# times 128 query heads (DeepSeek at TP 1); at TP 8 a GPU runs 16 (the `qh16` kernels), whose
# fixed cost is taken to be the same: an assumption. MI325X (gfx942, MI300X's 304 CUs) takes
# MI300's figure: an assumption. aiter's gfx942 `qh16` persistent binaries have not changed since
# 2025-11-03 (aiter PR #1233), so the figures hold for the images of SGLang 0.5.6 on; older
# releases carry no floor (`_SGLANG_0_4_8_TO_0_5_5`).
AITER_MLA_DECODE_FLOOR_S = {
    "mi300x": 15.491 * MICRO, "mi325x": 15.491 * MICRO, "mi355x": 12.106 * MICRO,
}  # fmt: skip
AITER_MLA_DECODE_SOURCE = (
    "ROCm/aiter PR #2039: aiter's MLA decode op (ASM kernel + reduce) at a 21-token context, "
    "batch 1: 15.491 us on MI300, 12.106 us on MI355 (device time); MI325X takes MI300's"
)

# FlashMLA (deepseek-ai/FlashMLA README): "up to 3000 GB/s in memory-bound configuration ... on
# H800 SXM5", whose HBM3 peak is 3.35 TB/s: 3000 / 3350 = 0.896 of peak.
FLASHMLA_BANDWIDTH_FRACTION = 3000 / 3350
# Named assumption: the gap one kernel of a captured decode graph adds beyond its bytes and
# FLOPs (graph-node launch ~0.6 us measured in ahrefs/ocannl issue #488, plus the drain of the
# previous kernel). 1 us.
KERNEL_FLOOR_S = 1.0 * MICRO
# Named assumption (the engines' earlier default in capcliff): host time per step of an engine
# without an overlap scheduler (vLLM V0: scheduling and input preparation run between steps).
V0_HOST_OVERHEAD_S = 2e-3
# Named assumption: vLLM V1 keeps a persistent batch and runs the API server and detokenizer in
# other processes; its scheduler still runs between steps unless --async-scheduling. 0.5 ms.
V1_HOST_OVERHEAD_S = 0.5e-3
# Named assumption: host (CPU) time of one eagerly launched PyTorch op: Python, pybind11, the ATen
# dispatcher and cudaLaunchKernel add "~5-25 us of CPU-side work per op" (J. Lin, "From PyTorch
# op to kernel launch", gpu_kernel_serving lesson 18, per-layer cost table). 15 us: the middle of
# that range. Only the SGLang < 0.4.8 DP-attention profile uses it (see SGLANG_DPA_EAGER_SOURCE).
EAGER_OP_S = 15.0 * MICRO
# SGLang runs a step that prefills (an extend batch) without CUDA graphs unless
# --enable-piecewise-cuda-graph (off by default; model_runner.py replays graphs for decode batches
# only). Measured: sgl-project/sglang PR #12160 (2025-10-26), DeepSeek-V3, an extend of one new
# token ("#new-token: 1, #cached-token: 1") logged "forward cost-82.64 ms" run eagerly and 23.10 ms
# through a captured graph. A one-token pass does next to no GPU work, so the eager pass is bound
# by launching its ops: 82.64 ms over 61 layers x 33 kernels (kernels_per_layer, DeepSeek at TP 8)
# = 41 us per op, about 3x the generic figure above (SGLang's layers add Python around each op).
SGLANG_EXTEND_EAGER_OP_S = 82.64e-3 / (61 * 33)
SGLANG_EXTEND_EAGER_SOURCE = (
    "sgl-project/sglang PR #12160: DeepSeek-V3 one-token extend 82.64 ms eager vs 23.10 ms "
    "graphed; 41 us per eager op (61 layers x 33 kernels); model_runner.py graphs decode only"
)
# Seconds each request spends in SGLang outside its forward passes, measured end to end: SGLang's
# HTTP server, tokenizer manager, scheduler and detokenizer processes with a model runner whose
# forward busy-waits 1 / 380 s (tenstorrent/tt-inference-server issue #3560, 2026-05-18,
# tt-sglang-plugin CPU mock at 380 tokens/s/user): `vllm bench serve --backend openai-chat
# --random-input-len 128 --max-concurrency 1` measured a median TTFT of 9.54 ms, of which one
# forward is 2.632 ms. The other 6.9 ms are the client's request and SSE parsing, HTTP, the chat
# template and tokenization of 128 tokens, the ZMQ hops between SGLang's processes, the
# scheduler's admission and the first detokenized chunk. Tokenization of longer prompts is not
# in it (no per-token figure was found); nor is the first use of a kernel shape (warm-up).
SGLANG_REQUEST_OVERHEAD_S = 9.54e-3 - 1 / 380
SGLANG_REQUEST_OVERHEAD_SOURCE = (
    "tenstorrent/tt-inference-server#3560: SGLang with a 2.632 ms mock forward, median TTFT "
    "9.54 ms at one client (chat endpoint, 128-token prompts): 6.9 ms outside the forward"
)
# Seconds each request spends in TensorRT-LLM's trtllm-serve outside its steps, as one client saw
# it: NVIDIA/TensorRT-LLM issue #5929 (v0.21.0rc2, LLMPerf against trtllm-serve, DeepSeek-R1 FP8
# on 8 x H200 at TP 8 with EP none, 4 and 8, one client) measured median TTFTs of 164.63, 134.36
# and 124.11 ms at 1,600 prompt tokens and 515.83, 370.07 and 352.81 ms at 8,192; capcliff
# simulates those six points without an overhead at 115.0, 75.8, 70.1, 483.5, 334.4 and 310.9 ms.
# The remainders, 49.6, 58.6, 54.0, 32.3, 35.7 and 41.9 ms, do not grow with the prompt, so they
# are a per-request cost (client, HTTP, chat template and tokenization, the hops between
# trtllm-serve's processes, the first chunk), not a slower prefill; the figure is their median.
# `python benchmarks/trtllm_request_overhead.py` recomputes it (a prefill model that moves the
# simulated TTFTs moves it too). The B200 FP4 points are not used: their remainder grows
# with the prompt (131 to 291 ms), a prefill slower than modelled at that release.
TRTLLM_REQUEST_OVERHEAD_S = (41.9e-3 + 49.6e-3) / 2
TRTLLM_REQUEST_OVERHEAD_SOURCE = (
    "NVIDIA/TensorRT-LLM#5929: DeepSeek-R1 FP8 on 8 x H200, one client, median TTFT at 1,600 and "
    "8,192 prompt tokens (v0.21.0rc2, LLMPerf) less capcliff's simulated TTFT: 32-59 ms, median "
    "45.75 ms, flat in the prompt length (benchmarks/trtllm_request_overhead.py)"
)
# SGLang DP attention before PR #7269 (sgl-project/sglang, merged 2025-06-17, "Enable cuda graph
# for dp idle batch": "#6081 does not enable CUDA graphs when some DP ranks are idle"): a rank with
# no requests runs an IDLE batch so the per-layer collectives have every rank
# (scheduler.py prepare_dp_attn_batch: `local_batch = self.get_idle_batch()`), and
# ForwardMode.is_cuda_graph() did not include IDLE, so that rank launches its pass eagerly; the
# same function all-reduces MIN over "decode or idle", so a step in which any rank prefills runs
# every rank eagerly (`can_run_dp_cuda_graph`). The busy ranks wait for it at the next collective.
SGLANG_DPA_EAGER_SOURCE = (
    "sgl-project/sglang PR #7269 (idle DP ranks ran without CUDA graphs before it) and "
    "scheduler.py prepare_dp_attn_batch (all ranks eager when one prefills)"
)
# Overlap schedulers: the CPU schedules and launches step N + 1 while the GPU runs step N, and
# processes step N's results after that launch. SGLang (>= 0.4, on unless
# --disable-overlap-schedule): python/sglang/srt/managers/scheduler.py `event_loop_overlap` runs
# `recv_requests()`, `get_next_batch_to_run()`, `run_batch(batch)` (non-blocking) and only then
# `pop_and_process()` of the previous batch, which waits for it; the next iteration's
# `recv_requests()` follows. So the poll that feeds step N + 1 happens as step N starts, and a
# request that arrives while step N runs is first received for step N + 2 (PR #2067 introduced
# the loop: "we delayed the processing of the first batch in favor of launching the kernels for the
# next batch first"; PR #11856 measured the cost of one such step in P99 TTFT, 425.5 -> 335.1 ms
# on 8 x H20). TensorRT-LLM's PyTorch backend (overlap scheduler on by default:
# `disable_overlap_scheduler=False`): tensorrt_llm/_torch/pyexecutor/py_executor.py
# `_executor_loop_overlap` runs `_fetch_new_requests()`, `_schedule()`, `_forward_step()` and then
# `_update_requests()` / `_handle_responses()` of `self.previous_batch`, the same order. An idle
# engine blocks on its queue (TensorRT-LLM's fetch waits with no timeout when nothing is active;
# SGLang's loop spins), so a request reaching an idle engine runs at once.
OVERLAP_SCHEDULE_SOURCE = (
    "sglang scheduler.py event_loop_overlap (PR #2067); TensorRT-LLM py_executor.py "
    "_executor_loop_overlap: step N + 1 is scheduled before step N's results, so a request "
    "arriving during step N runs from step N + 2"
)
# SGLang 0.4.x server_args.py, `if self.enable_dp_attention:` ... `self.disable_overlap_schedule =
# True` ("Overlap scheduler is disabled."): host time per step returns; V0's 2 ms assumption.
SGLANG_DPA_OVERLAP_SOURCE = (
    "sglang 0.4.x server_args.py: DP attention turns the overlap scheduler off"
)
# SGLang before 0.4.6 serves MLA models with its Triton backend (model_runner.py: "MLA
# optimization is turned on. Use triton backend." unless --enable-flashinfer-mla), whose
# DeepseekV2AttentionMLA.forward runs an extend through the MHA path only when no token of the
# batch is cached (`no_absorb`: `forward_batch.extend_prefix_lens.sum() == 0`); every other
# prefill, and with the radix cache on that is every prompt after the first (they share the BOS
# token), runs the absorbed path: MQA over (kv_lora_rank + rope) dims in the Triton extend kernel.
# Its efficiency is derived from sgl-project/sglang PR #3550 (2025-02-13), Triton run: DeepSeek-V3
# on TP 8, --disable-radix-cache, 60 prompts of 1-32,000 tokens (random range ratio 0), 100
# output tokens, total throughput 2,679.07 tok/s, so 350.7 s for 936,860 input tokens. With
# 8,192-token chunks the first chunk of a prompt runs MHA and the rest the absorbed path: 1.92e16
# attention FLOPs per GPU (61 layers x 16 heads x (640 MHA or 2,176 absorbed FLOPs per pair));
# the GEMMs take ~9 s at the model's MFU and decode (6,000 tokens) at most ~15 s, leaving
# 325-340 s: 5.7-6.5 % of 989 TFLOP/s. 6 %, a derived figure: the PR names no GPU (H100 and H200
# have the same BF16 peak) and 4,096- or 16,384-token chunks put it at 6.4 % or 4.2 %.
TRITON_MLA_EXTEND_EFFICIENCY = 0.06
# SGLang 0.4.0-0.4.3, MLA (DeepSeek) models: what one kernel of a decode layer costs at small batch,
# derived from a public single-request measurement, not from the benchmark rows: on 8 x H200
# (nvidia-smi in the thread), TP 8, SGLang of early February 2025 (0.4.2), "H200*8 with R1 or V3
# get about 30-35 tokens/sec" (sgl-project/sglang issue #3196, 2025-02-08; a maintainer answers
# that torch.compile, which fuses small ops, reaches 50). 28.6-33.3 ms per token against capcliff's
# 3.0 ms roofline of that step (R1, one request, short context, without kernel floors) leaves
# 25.6-30.3 ms over 61 layers x 33 kernels: 12.7-15.1 us per kernel; 13.8 us from the middle,
# 30.8 ms. Those releases ran DeepSeek's decode on Triton kernels (block-FP8 GEMMs, fused MoE, the
# MLA decode kernel) and unfused torch ops (grouped top-k, per-token-group quantisation), which
# later releases replaced (DeepGEMM, FlashMLA, fused gate); the 0.4.4 boundary is where those
# landed, not checked against each tag.
SGLANG_04_MLA_KERNEL_S = 13.8 * MICRO
SGLANG_04_MLA_KERNEL_SOURCE = (
    "sgl-project/sglang issue #3196: R1/V3 on 8 x H200 TP 8, about 30-35 tok/s single request "
    "(Feb 2025); 13.8 us per decode kernel derived"
)
TRITON_MLA_EXTEND_SOURCE = (
    "sglang < 0.4.6 Triton MLA backend, absorbed extend (deepseek_v2.py no_absorb); derived "
    "from sgl-project/sglang PR #3550's Triton run: 6 % of dense BF16 peak"
)


# "gemm_flops" and "moe_flops": the compute term's measured lines (perf/op_curves.py
# ComputeCurve) for the dense GEMMs (and lm_head) and the routed experts; without them every
# FLOP is priced at DEFAULT_MFU of the compute dtype's peak. Both lowered the held-out error
# (235 rows: uncalibrated throughput 23 -> 22 %, mean TTFT 78 -> 76 %, LOO-calibrated TTFT
# 47 -> 43 %; docs/validation.md), so they are on by default.
# "mla_context": MLA prefill attention's measured compute line over the prompt length.
# "moe_table": a routed-expert layer of DeepSeek-V3/R1's own shape at its measured time
# (perf/moe_tables.py), in place of the "moe" and "moe_flops" lines for that layer, where the
# measured kernel is the one the engine's MoE backend runs (SGLang on Hopper and Blackwell,
# TensorRT-LLM on Hopper, and on Blackwell the trtllm-gen rows measured under SGLang: the same
# runner; `EngineProfile.moe_backend`, --moe-backend). It lowered the held-out error (253 rows:
# uncalibrated throughput / TPOT / mean TTFT 18 / 17 / 60 -> 17 / 15 / 57 %, LOO-calibrated
# 15 / 15 / 35 -> 15 / 13 / 33 %; docs/validation.md), so it is on by default.
# "mla_bmm": MLA decode's two absorbed BMMs at their measured time by tokens (perf/mla_bmm.py),
# in place of two kernel floors per layer, where the tables timed the kernel the engine runs.
OP_CURVE_OPS = (
    "gemm", "moe", "mla", "gemm_flops", "moe_flops", "mla_context", "moe_table", "mla_bmm",
)  # fmt: skip
DEFAULT_OP_CURVES = ("gemm", "moe", "gemm_flops", "moe_flops", "moe_table", "mla_bmm")


@dataclass(frozen=True)
class EngineProfile:
    """Named step-time terms of one engine and version (seconds, fractions of peak)."""

    engine: EngineName
    version: str  # the releases the figures describe
    host_overhead_s: float
    kernel_floor_s: float
    allreduce_kernel: str  # "trtllm" or "vllm": which measured custom all-reduce it runs
    mla_attention_efficiency: float
    gqa_attention_efficiency: float | None  # None: the model's MBU
    moe_small_batch_efficiency: float
    sources: tuple[tuple[str, str], ...]  # (term, source or "assumption: ...")
    # Attention DP only: host time per step (None: host_overhead_s) and the host time of one
    # eagerly launched op, which sets a lockstep step's floor when some rank is idle or
    # prefilling (0: every rank replays its CUDA graph).
    dp_attention_host_overhead_s: float | None = None
    dp_eager_op_s: float = 0.0
    # Host time of one op of a step that prefills, where the engine launches such steps without
    # CUDA graphs: that step lasts at least one eagerly launched pass (0: graphed or not modelled).
    extend_eager_op_s: float = 0.0
    # Seconds each request spends outside the engine's steps (front end, tokenizer, the first
    # chunk, the client): the default of SimConfig.request_overhead_s where neither the user
    # (--request-overhead-ms) nor a calibration sets it (0: not modelled).
    request_overhead_s: float = 0.0
    # MLA models: the fraction of dense BF16 peak the prefill (extend) attention kernel reaches
    # (None: the model's MFU of the compute dtype's peak, as for every other FLOP).
    mla_extend_efficiency: float | None = None
    # MLA models: the kernel floor of a decode layer's kernels (None: kernel_floor_s).
    mla_kernel_floor_s: float | None = None
    # MLA models with block-FP8 projections on gfx942 (GFX942_HARDWARE): seconds per layer and
    # pass its projection GEMMs take beyond the tuned kernels the op curves price (0: none).
    gfx942_mla_gemm_extra_s: float = 0.0
    # MLA models on AMD GPUs: seconds beyond its bytes of one decode layer's aiter MLA decode op
    # (kernel and reduce). None: the figure measured for the GPU (AITER_MLA_DECODE_FLOOR_S; none on
    # a GPU it does not name); 0: the profile does not run aiter's MLA decode.
    aiter_mla_decode_floor_s: float | None = 0.0
    # An overlap scheduler (OVERLAP_SCHEDULE_SOURCE): a request that arrives while step N runs
    # is first scheduled in step N + 2 (False: N + 1). Off under attention DP where
    # `dp_attention_host_overhead_s` is set (those releases turn the scheduler off; `overlaps`).
    overlap_schedule: bool = False
    # The aiconfigurator backend whose measured kernel tables describe this release's GEMM and
    # MoE kernels (perf/op_curves.py); None: the roofline's constants (MBU, kernel floor).
    op_tables: str | None = None
    # Which of those curves price steps: "gemm", "moe" by default; "mla" (MLA decode attention
    # over the batch) is measured too but did not lower the held-out error (docs/validation.md),
    # so it is opt-in (benchmarks/fidelity.py --op-curves gemm,moe,mla).
    op_curve_ops: tuple[str, ...] = DEFAULT_OP_CURVES
    # Host (CPU) seconds per scheduled sequence per step, on top of host_overhead_s: serial
    # without an overlap scheduler, the larger of it and the GPU's step with one
    # (perf/host_time.py). 0: not measured for this engine.
    host_per_seq_s: float = 0.0
    # The MoE backend the engine runs (its own name, perf/moe_tables.py MOE_BACKEND_KERNELS),
    # which decides the measured MoE rows that price DeepSeek's expert layers; None: the
    # engine's default for the GPU (moe_tables.DEFAULT_MOE_KERNELS). --moe-backend sets it.
    moe_backend: str | None = None
    # SGLang's dense block-FP8 GEMM kernel (its --fp8-gemm-backend name): "flashinfer_trtllm"
    # (what SGL_ENABLE_JIT_DEEPGEMM=false selects on sm100) prices those GEMMs' FLOPs at
    # FlashInfer's measured line (perf/flashinfer_gemm.py); None: the tables' DeepGEMM.
    fp8_gemm_backend: str | None = None
    # MLA models: the decode reads the absorbed W_Q_UK, W_UV_O and W_QR in place of the q, kv_b
    # and o projections (vLLM V0 0.7.1-0.7.x, memory.overheads.mla_absorbed_bytes).
    mla_absorbed_decode: bool = False

    @property
    def label(self) -> str:
        """How outputs name the profile: engine and version."""
        return f"{self.engine.value} {self.version}"

    def with_overrides(self, overrides: Mapping[str, float]) -> EngineProfile:
        """The profile with terms replaced by name (a user's or a calibration's figures)."""
        unknown = sorted(set(overrides) - set(OVERRIDABLE_PROFILE_TERMS))
        if unknown:
            raise InputError(
                f"step_time: unknown term {', '.join(unknown)}; "
                f"valid: {', '.join((*OVERRIDABLE_PROFILE_TERMS, *FITTED_TERMS))}"
            )
        terms: dict[str, Any] = dict(overrides)
        if "overlap_schedule" in terms:  # a switch: 0 off, anything else on
            terms["overlap_schedule"] = bool(terms["overlap_schedule"])
        if "moe_table" in terms:  # a switch over op_curve_ops: 0 off, anything else on
            ops = tuple(op for op in self.op_curve_ops if op != "moe_table")
            terms["op_curve_ops"] = (*ops, "moe_table") if terms.pop("moe_table") else ops
        return dataclasses.replace(self, **terms)


# Terms a calibration from benchmark results sets directly (`capcliff calibrate bench.csv`):
# seconds per step replacing host time and kernel floors, and a factor on the rest of the step.
FITTED_TERMS = ("fixed_s", "scale")
# Calibrated terms outside the step time: they reach the simulator's settings, not the profile
# (`SimConfig.request_overhead_s`).
REQUEST_TERMS = ("request_overhead_s",)

OVERRIDABLE_PROFILE_TERMS = (
    "host_overhead_s",
    "kernel_floor_s",
    "mla_attention_efficiency",
    "gqa_attention_efficiency",
    "moe_small_batch_efficiency",
    "dp_attention_host_overhead_s",
    "dp_eager_op_s",
    "extend_eager_op_s",
    "mla_extend_efficiency",
    "mla_kernel_floor_s",
    "gfx942_mla_gemm_extra_s",
    "aiter_mla_decode_floor_s",
    "overlap_schedule",
    "moe_table",
    "host_per_seq_s",
)

_COMMON_SOURCES = (
    ("kernel_floor_s", "assumption: 1 us per graph kernel (ahrefs/ocannl#488: ~0.6 us per node)"),
    ("mla_attention_efficiency", "FlashMLA README: 3000 GB/s of H800's 3.35 TB/s"),
    ("gqa_attention_efficiency", "assumption: the model's decode MBU"),
    ("moe_small_batch_efficiency", "assumption: 1.0 (inside the model's MBU)"),
    ("allreduce", ALLREDUCE_SOURCE),
)
# The releases aiconfigurator-core 0.12's tables were measured on (SGLang 0.5.14, TensorRT-LLM
# 1.3.0rc20, vLLM 0.24.0) stand for every release the latest profiles describe.
OP_TABLES_SOURCE = (
    "op_tables",
    "aiconfigurator-core 0.12 measured GEMM and MoE tables (perf/data/op_curves.json); "
    "DeepSeek-V3/R1's MoE layers at the rows of their own shape where the measured kernel is "
    "the engine's default (perf/data/moe_tables.json)",
)

PROFILES: dict[EngineName, EngineProfile] = {
    EngineName.VLLM: EngineProfile(
        EngineName.VLLM, "V1 (>= 0.8)", V1_HOST_OVERHEAD_S, KERNEL_FLOOR_S, "vllm",
        FLASHMLA_BANDWIDTH_FRACTION, None, 1.0,
        (("host_overhead_s", "assumption: 0.5 ms, scheduler between steps"), *_COMMON_SOURCES,
         OP_TABLES_SOURCE, ("host_per_seq_s", VLLM_V1_HOST_PER_SEQ_SOURCE)),
        op_tables="vllm",
        host_per_seq_s=VLLM_V1_HOST_PER_SEQ_S,
    ),
    EngineName.VLLM_V0: EngineProfile(
        EngineName.VLLM_V0, "V0 (0.6 - 0.7)", V0_HOST_OVERHEAD_S, KERNEL_FLOOR_S, "vllm",
        FLASHMLA_BANDWIDTH_FRACTION, None, 1.0,
        (("host_overhead_s", "assumption: 2 ms, no overlap scheduler"), *_COMMON_SOURCES),
    ),
    EngineName.SGLANG: EngineProfile(
        EngineName.SGLANG, ">= 0.4.8 (overlap scheduler)", 0.0, KERNEL_FLOOR_S, "trtllm",
        FLASHMLA_BANDWIDTH_FRACTION, None, 1.0,
        (("host_overhead_s", "SGLang v0.4 blog: zero-overhead batch scheduler"), *_COMMON_SOURCES,
         OP_TABLES_SOURCE, ("extend_eager_op_s", SGLANG_EXTEND_EAGER_SOURCE),
         ("request_overhead_s", SGLANG_REQUEST_OVERHEAD_SOURCE),
         ("overlap_schedule", OVERLAP_SCHEDULE_SOURCE)),
        op_tables="sglang",
        extend_eager_op_s=SGLANG_EXTEND_EAGER_OP_S,
        request_overhead_s=SGLANG_REQUEST_OVERHEAD_S,
        overlap_schedule=True,
    ),
    EngineName.TRTLLM: EngineProfile(
        EngineName.TRTLLM, "PyTorch backend (overlap scheduler)", 0.0, KERNEL_FLOOR_S, "trtllm",
        FLASHMLA_BANDWIDTH_FRACTION, None, 1.0,
        (("host_overhead_s", "TensorRT-LLM docs: overlap scheduler on by default"),
         *_COMMON_SOURCES, OP_TABLES_SOURCE, ("overlap_schedule", OVERLAP_SCHEDULE_SOURCE),
         ("request_overhead_s", TRTLLM_REQUEST_OVERHEAD_SOURCE)),
        op_tables="trtllm",
        overlap_schedule=True,
        request_overhead_s=TRTLLM_REQUEST_OVERHEAD_S,
    ),
}  # fmt: skip


# Older releases whose data show a difference: engine -> (first release a profile does not
# describe, the profile of the releases before it), oldest first; releases past the last boundary
# get PROFILES' profile.
_SGLANG_PRE_0_4_8 = dataclasses.replace(
    PROFILES[EngineName.SGLANG],
    version="0.4.6 - 0.4.7 (DP attention: overlap scheduler off, idle ranks eager)",
    dp_attention_host_overhead_s=V0_HOST_OVERHEAD_S,
    dp_eager_op_s=EAGER_OP_S,
    op_tables=None,  # older kernels than the tables measured
    sources=(
        *(s for s in PROFILES[EngineName.SGLANG].sources if s != OP_TABLES_SOURCE),
        ("dp_attention_host_overhead_s", SGLANG_DPA_OVERLAP_SOURCE + "; assumption: 2 ms"),
        ("dp_eager_op_s", SGLANG_DPA_EAGER_SOURCE + "; assumption: 15 us per eager op"),
    ),
)
_SGLANG_PRE_0_4_6 = dataclasses.replace(
    _SGLANG_PRE_0_4_8,
    version=(
        "0.4.0 - 0.4.5 (DP attention: overlap scheduler off, idle ranks eager; Triton MLA extend)"
    ),
    mla_extend_efficiency=TRITON_MLA_EXTEND_EFFICIENCY,
    sources=(*_SGLANG_PRE_0_4_8.sources, ("mla_extend_efficiency", TRITON_MLA_EXTEND_SOURCE)),
)
_SGLANG_PRE_0_4_4 = dataclasses.replace(
    _SGLANG_PRE_0_4_6,
    version=(
        "0.4.0 - 0.4.3 (DP attention: overlap scheduler off, idle ranks eager; "
        "Triton MLA extend; DeepSeek decode kernels 13.8 us)"
    ),
    mla_kernel_floor_s=SGLANG_04_MLA_KERNEL_S,
    sources=(*_SGLANG_PRE_0_4_6.sources, ("mla_kernel_floor_s", SGLANG_04_MLA_KERNEL_SOURCE)),
)
# 0.4.8 - 0.5.5: no measured aiter MLA decode figure for those images (AITER_MLA_DECODE_SOURCE).
_SGLANG_0_4_8_TO_0_5_5 = PROFILES[EngineName.SGLANG]
PROFILES[EngineName.SGLANG] = dataclasses.replace(
    _SGLANG_0_4_8_TO_0_5_5,
    aiter_mla_decode_floor_s=None,
    sources=(
        *_SGLANG_0_4_8_TO_0_5_5.sources,
        ("aiter_mla_decode_floor_s", AITER_MLA_DECODE_SOURCE),
    ),
)


def _with_term(
    base: EngineProfile, version: str, term: str, value: Any, source: str
) -> EngineProfile:
    """`base` for the releases `version` describes, with profile term `term` set to `value` and
    its source added."""
    return dataclasses.replace(
        base, version=version, **{term: value}, sources=(*base.sources, (term, source))
    )


_SGLANG_0_5_6_TO_0_5_9 = _with_term(
    PROFILES[EngineName.SGLANG],
    "0.5.6 - 0.5.9 (gfx942: aiter's Triton block-FP8 GEMMs without gfx942 configs)",
    "gfx942_mla_gemm_extra_s",
    AITER_UNTUNED_MLA_GEMM_S,
    AITER_UNTUNED_MLA_GEMM_SOURCE,
)
# vLLM V1 before 0.14 schedules between steps unless `--async-scheduling`
# (SchedulerConfig.async_scheduling = False); 0.14.0 turned async scheduling on by default ("Async
# scheduling is now enabled by default", #27614), except with pipeline parallelism, the CPU
# backend and speculation other than EAGLE/MTP (release notes of v0.14.0, 2026-01).
VLLM_ASYNC_DEFAULT_SOURCE = (
    "vLLM v0.14.0 release notes: async scheduling on by default (#27614), not with PP; "
    "AsyncScheduler schedules step N + 1 while step N runs (vllm/v1/core/sched/async_scheduler.py)"
)
_VLLM_V1_SERIAL = dataclasses.replace(
    PROFILES[EngineName.VLLM], version="V1 0.8 - 0.13 (scheduler between steps)"
)
PROFILES[EngineName.VLLM] = dataclasses.replace(
    _VLLM_V1_SERIAL,
    version="V1 >= 0.14 (async scheduling)",
    overlap_schedule=True,
    sources=(*_VLLM_V1_SERIAL.sources, ("overlap_schedule", VLLM_ASYNC_DEFAULT_SOURCE)),
)
# vLLM V0 0.7.1-0.7.x materialise MLA's absorbed decode matrices and read them in each decode
# step (memory.overheads.VLLM_V0_MLA_ABSORBED_RELEASES, PR #12528 to PR #14770).
VLLM_V0_MLA_ABSORBED_SOURCE = (
    "vLLM V0 0.7.1-0.7.x vllm/attention/backends/mla (utils.py, common.py) "
    "process_weights_after_loading: W_Q_UK and W_UV_O materialised (VLLM_MLA_PERFORM_MATRIX_"
    "ABSORPTION) and read by the decode; removed by PR #14770 (0.8.0)"
)
_VLLM_V0_MLA_ABSORBED = _with_term(
    PROFILES[EngineName.VLLM_V0],
    "V0 0.7.1 - 0.7.x (MLA decode reads the absorbed W_Q_UK / W_UV_O)",
    "mla_absorbed_decode",
    True,
    VLLM_V0_MLA_ABSORBED_SOURCE,
)
_V0_ABSORBED_FROM, _V0_ABSORBED_UNTIL = VLLM_V0_MLA_ABSORBED_RELEASES
OLDER_PROFILES: dict[EngineName, tuple[tuple[tuple[int, ...], EngineProfile], ...]] = {
    EngineName.VLLM: (((0, 14, 0), _VLLM_V1_SERIAL),),
    EngineName.VLLM_V0: (
        (_V0_ABSORBED_FROM, PROFILES[EngineName.VLLM_V0]),
        (_V0_ABSORBED_UNTIL, _VLLM_V0_MLA_ABSORBED),
    ),
    EngineName.SGLANG: (
        ((0, 4, 4), _SGLANG_PRE_0_4_4),
        ((0, 4, 6), _SGLANG_PRE_0_4_6),
        ((0, 4, 8), _SGLANG_PRE_0_4_8),
        ((0, 5, 6), _SGLANG_0_4_8_TO_0_5_5),
        ((0, 5, 10), _SGLANG_0_5_6_TO_0_5_9),
    ),
}
# The earliest release of each engine: no engine shipped a 0.0.x release (vLLM's first was 0.1.0,
# SGLang's 0.1.x, TensorRT-LLM's 0.5.0), and vLLM's V1 engine first shipped, as an opt-in alpha, in
# 0.7.0 (vLLM v0.7.0 release notes, "V1 alpha"); earlier vLLM releases ran V0 (`--engine vllm-v0`).
EARLIEST_RELEASE: dict[EngineName, tuple[int, int, int]] = {
    EngineName.VLLM: (0, 7, 0),
    EngineName.VLLM_V0: (0, 1, 0),
    EngineName.SGLANG: (0, 1, 0),
    EngineName.TRTLLM: (0, 5, 0),
}
# The first release without an engine: vLLM removed V0 completely in 0.11.0 (V1 is the only engine
# from it; huggingface/optimum-neuron#1027 moving to 0.11.0 for that reason), so `vllm-v0` at
# 0.11 or later names an engine that release does not have.
REMOVED_IN: dict[EngineName, tuple[tuple[int, int, int], str]] = {
    EngineName.VLLM_V0: ((0, 11, 0), "vLLM removed its V0 engine in 0.11.0; --engine vllm"),
}


def engine_profile(engine: EngineName, version: str | None = None) -> EngineProfile:
    """The step-time profile capcliff assumes for `engine` at release `version` (None: the latest
    modelled release, PROFILES). A release before the engine's first (EARLIEST_RELEASE) is an
    input error, not the oldest profile silently."""
    release = None if version is None else parse_version(version)
    if release is not None:
        first = EARLIEST_RELEASE.get(engine, (0, 1, 0))
        if release < first:
            hint = (
                "; releases before it run V0: --engine vllm-v0" if engine is EngineName.VLLM else ""
            )
            raise InputError(
                f"engine_version: {version!r:.60} is older than the earliest {engine} release "
                f"({'.'.join(map(str, first))}){hint}"
            )
        removed = REMOVED_IN.get(engine)
        if removed is not None and release >= removed[0]:
            raise InputError(
                f"engine_version: {version!r:.60} has no {engine} engine: {removed[1]}"
            )
        for boundary, profile in OLDER_PROFILES.get(engine, ()):
            if release < boundary:
                return profile
    return PROFILES[engine]


def step_profile(
    engine: EngineName, terms: Mapping[str, float], version: str | None = None
) -> tuple[EngineProfile, dict[str, float]]:
    """The engine's profile (at `version`) with `terms` applied: profile terms by name replace
    its figures; the fitted terms (`fixed_s`, `scale`) come back separately."""
    fitted = {k: v for k, v in terms.items() if k in FITTED_TERMS}
    rest = {k: v for k, v in terms.items() if k not in (*FITTED_TERMS, *REQUEST_TERMS)}
    return engine_profile(engine, version).with_overrides(rest), fitted


def profile_label(
    engine: EngineName,
    terms: Mapping[str, float],
    version: str | None = None,
    *,
    hardware_id: str | None = None,
    formats: Mapping[str, str | None] | None = None,
) -> str:
    """What outputs print about the step time: engine, version, modeled or calibrated, and what
    prices the weight reads (measured op curves or the MBU constants) and the compute (measured
    compute curves or the MFU constant); without `hardware_id`, where each applies; with
    `formats` (op -> the table format of the model's weights it runs, `model_formats`), only
    curves of those formats count as pricing them."""
    how = "calibrated" if any(k in FITTED_TERMS for k in terms) else "modeled"
    overridden = (
        " with overrides" if any(k not in (*FITTED_TERMS, *REQUEST_TERMS) for k in terms) else ""
    )
    profile = engine_profile(engine, version)
    op_s = terms.get("extend_eager_op_s", profile.extend_eager_op_s)
    eager = (
        f"; a step that prefills lasts at least one eager pass ({op_s * 1e6:.0f} us per op, "
        "no CUDA graph)"
        if op_s > 0 and how == "modeled"
        else ""
    )
    return (
        f"{profile.label}, {how}{overridden}; "
        f"{weight_read_source(profile, hardware_id, formats)}"
        + compute_source(profile, hardware_id, formats)
        + eager
    )


def model_formats(linear: str | None, expert: str | None) -> dict[str, str | None]:
    """The table formats (`op_curves.table_format`) of a model's dense (`linear`) and expert
    (`expert`; None: no experts, or none in a tabled format) weights, keyed by the op ("gemm",
    "moe") whose curves price them."""
    return {"gemm": linear} | ({} if expert is None else {"moe": expert})


def _unmeasured(
    hardware_id: str, tables: str, formats: Mapping[str, str | None] | None, *, compute: bool
) -> str:
    """The names of the model's weight `formats` ("bfloat16", "nvfp4/bfloat16") where they are
    given and no curve of `hardware_id`'s `tables` (compute lines where `compute`) measures any
    of them, so that the MBU or MFU constant prices each op (`efficiency.op_curves_for`); ""
    otherwise."""
    if formats is None:
        return ""
    find = compute_curve if compute else op_curve
    if any(find(hardware_id, tables, op, fmt) is not None for op, fmt in formats.items()):
        return ""
    names = sorted({fmt or "unlisted" for fmt in formats.values()})
    return "/".join(names)


def weight_read_source(
    profile: EngineProfile,
    hardware_id: str | None = None,
    formats: Mapping[str, str | None] | None = None,
) -> str:
    """Which figures price the weight reads of `profile` on `hardware_id` (None: any GPU);
    with `formats` (`model_formats`), the curves of the model's weight formats only: a GPU's
    tables that measure none of them price nothing of this model."""
    tables = profile.op_tables
    if tables is None:
        return "weight reads at the model's MBU (no measured op tables for this release)"
    if hardware_id is None:
        gpus = ", ".join(measured_hardware(tables))
        return f"weight reads from measured {tables} op curves on {gpus}; MBU elsewhere"
    missing = (
        _unmeasured(hardware_id, tables, formats, compute=False)
        if hardware_id in measured_hardware(tables)
        else ""
    )
    if missing:
        return (
            f"weight reads at the model's MBU (no measured {tables} op curve for "
            f"{missing} weights on {hardware_id})"
        )
    if hardware_id in measured_hardware(tables):
        origin = curves_origin(hardware_id, tables)
        if origin.startswith(AITER_ORIGIN):
            return f"weight reads from {origin}"
        return f"weight reads from measured {tables} op curves ({origin})"
    return f"weight reads at the model's MBU (no measured {tables} op table for {hardware_id})"


def compute_source(
    profile: EngineProfile,
    hardware_id: str | None = None,
    formats: Mapping[str, str | None] | None = None,
) -> str:
    """The label's "; compute ..." part where `profile` prices GEMM or MoE FLOPs from measured
    compute curves: on which GPUs (None: any) or, on `hardware_id` without them (or without
    any for the model's weight `formats`, `model_formats`), at the MFU constant; "" where the
    profile uses no compute curves (every FLOP at MFU, as before)."""
    tables = profile.op_tables
    if tables is None or not {"gemm_flops", "moe_flops"} & set(profile.op_curve_ops):
        return ""
    gpus = compute_measured_hardware(tables)
    if hardware_id is None:
        return f"; compute from measured {tables} curves on {', '.join(gpus)}; MFU elsewhere"
    missing = _unmeasured(hardware_id, tables, formats, compute=True) if hardware_id in gpus else ""
    if missing:
        return (
            f"; compute at MFU (no measured {tables} compute curve for {missing} weights on "
            f"{hardware_id})"
        )
    if hardware_id in gpus:
        origin = curves_origin(hardware_id, tables)
        if origin.startswith(AITER_ORIGIN):
            return f"; compute from {AITER_ORIGIN} (the same tables)"
        return f"; compute from measured {tables} curves ({origin})"
    return f"; compute at MFU (no measured {tables} compute table for {hardware_id})"


def overlaps(profile: EngineProfile, layout: Layout) -> bool:
    """Whether `layout` runs under the profile's overlap scheduler: not on attention-DP layouts
    of the releases that turn it off there (their `dp_attention_host_overhead_s` is set: SGLang
    before 0.4.8, SGLANG_DPA_OVERLAP_SOURCE), nor vLLM's with pipeline parallelism
    (VLLM_ASYNC_DEFAULT_SOURCE)."""
    if layout.attention_dp and profile.dp_attention_host_overhead_s is not None:
        return False
    if profile.engine is EngineName.VLLM and layout.pp > 1:  # not by default with PP (0.14.0)
        return False
    return profile.overlap_schedule


def dp_host_overhead_s(profile: EngineProfile, layout: Layout) -> float:
    """Host seconds per step of `layout` under `profile`: its DP-attention figure for
    attention-DP layouts where the profile has one."""
    dpa = profile.dp_attention_host_overhead_s
    return dpa if layout.attention_dp and dpa is not None else profile.host_overhead_s


def dp_eager_pass_s(profile: EngineProfile, arch: Architecture, layout: Layout) -> float:
    """Seconds of one eagerly launched forward pass of an attention-DP rank: layers x the
    decoder layer's kernels (with the gather and the post-MoE all-reduce in the all-reduces'
    places) x the host time of one eager op. 0 when the profile graphs idle ranks too."""
    if not layout.attention_dp or profile.dp_eager_op_s <= 0:
        return 0.0
    ranks = max(layout.tp, layout.moe_ranks)
    return arch.num_layers * kernels_per_layer(arch, tp=ranks) * profile.dp_eager_op_s


def extend_eager_pass_s(profile: EngineProfile, arch: Architecture, layers: int, tp: int) -> float:
    """Seconds of host time launching one eager pass over `layers` decoder layers at TP `tp`:
    the least a step that prefills takes in an engine that runs such steps without CUDA graphs
    (layers x the decoder layer's kernels x `extend_eager_op_s`; 0 where it is 0)."""
    if profile.extend_eager_op_s <= 0:
        return 0.0
    return layers * kernels_per_layer(arch, tp=tp) * profile.extend_eager_op_s


def kernels_per_layer(arch: Architecture, *, tp: int) -> int:
    """Kernels one decoder layer launches in a decode step (counted from the op sequence).

    Dense GQA layer: input norm, QKV GEMM, RoPE, KV-cache write, attention, O GEMM, fused
    add+norm, gate/up GEMM, SiLU-and-mul, down GEMM = 10, + 2 all-reduces when TP > 1.
    MLA replaces QKV/RoPE/attention (3) with q_a GEMM, q_a norm, q_b GEMM, kv_a GEMM, kv_a norm,
    RoPE, W_UK absorb, attention, W_UV absorb (9): +6. A routed MoE replaces the MLP (3) with
    router GEMM, top-k, token sort, two grouped GEMMs, activation, combine, and the shared
    expert's three (10): +7. FP8 weights quantise the activations before each GEMM: +1 per GEMM.
    DeepSeek-R1 at TP 8: 10 + 2 + 6 + 7 + 8 = 33. (An SGLang DeepSeek decode graph captured
    ~2,873 kernels over 61 layers, ~47 per layer with DP attention: sgl-project/sglang #31545.)
    """
    count = 10 + (2 if tp > 1 else 0)
    gemms = 4
    if arch.mla is not None:
        count += 6
        gemms += 2
    if arch.moe is not None:
        count += 7
        gemms += 2
    if arch.linear_dtype is WeightDType.FP8:
        count += gemms
    return count


# The kernels of kernels_per_layer's list that the fused MoE op of the measured tables times: the
# token sort, the two grouped GEMMs, the activation and the combine.
FUSED_MOE_KERNELS = 5


def dense_gemms_per_layer(arch: Architecture) -> int:
    """Dense (non-expert) weight GEMMs of one decoder layer in kernels_per_layer's list: QKV, O,
    gate/up, down (4); MLA's q_a, q_b and kv_a in QKV's place (+2)."""
    return 4 + (2 if arch.mla is not None else 0)


def dense_gemm_modules(arch: Architecture, layer: int) -> tuple[str, ...]:
    """The Hugging Face module each dense GEMM of kernels_per_layer's list reads in decoder layer
    `layer` (`dense_gemms_per_layer` of them): QKV (q_proj; MLA's q_a_proj, q_b_proj and
    kv_a_proj_with_mqa), O, gate/up and down (the shared expert's in a MoE layer)."""
    prefix = f"model.layers.{layer}."
    attention = (
        ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "o_proj")
        if arch.mla is not None
        else ("q_proj", "o_proj")
    )
    moe_layer = arch.moe is not None and arch.moe.is_moe_layer[layer]
    mlp = "mlp.shared_experts." if moe_layer else "mlp."
    return (
        *(f"{prefix}self_attn.{name}" for name in attention),
        f"{prefix}{mlp}gate_proj",
        f"{prefix}{mlp}down_proj",
    )


def curve_kernels_per_layer(
    arch: Architecture, *, gemm: bool, moe: bool, attention: bool = False
) -> int:
    """Kernels of one decoder layer that measured op curves price themselves (so they take no
    kernel floor): the dense GEMMs with a GEMM curve, the fused MoE op with a MoE curve, the
    attention kernel with an attention curve."""
    dense = dense_gemms_per_layer(arch) if gemm else 0
    return dense + (FUSED_MOE_KERNELS if moe and arch.moe is not None else 0) + int(attention)
