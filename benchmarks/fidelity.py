"""The fidelity harness: capcliff against every public serving benchmark and start-up log row.

Run: python benchmarks/fidelity.py   (prints the Markdown tables of docs/validation.md; asserts
nothing: the tests assert the rules with stated tolerances). `--op-curves gemm,moe,mla` (or
`none`) prices steps with another set of measured op curves (perf/op_curves.py) than the
profiles' default, to compare them on the same rows.

Serving rows (shared/reference/serving_benchmarks.csv): each row is simulated as the benchmark ran
it (closed-loop clients, the row's lengths and request count) and its output throughput and mean
TPOT compared with the measurement, uncalibrated (the engine's step-time profile; a replayed run's
first wave from the other deployments of its engine and GPU vendor, `held_out_first_waves`) and
calibrated leave-one-out (step-time terms fitted to the other rows of the same deployment: model,
GPU, layout, engine and version; two terms from two or more rows, the scale alone from one). Online
rows' clients reach the engine one request at a time (calibrate.benchmarks.CLIENT_TURNAROUND_S);
offline rows (vLLM's benchmark_throughput.py) queue every prompt at once and, in the 0.6 releases,
run without chunked prefill (`_offline_chunked_prefill`); vLLM V1 rows run with V1's default prefix
cache, which gives a preempted request back its blocks not yet reused
(`capcliff.sim.reuse.retained_kv`); rows measured through a chat endpoint prefill their model's
chat-template tokens too, the shared leading ones cached once (`CHAT_TEMPLATE_TOKENS`). Each row's
engine release picks its step-time profile. Start-up log rows: KV tokens predicted from the
configuration the log states (benchmarks/engine_validation.py's fixtures). Rows capcliff cannot
express are listed with why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from capcliff.analysis.deployment import Deployment, resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.sweep.step_fit import (
    Basis,
    PointFit,
    fit_bases,
    modeled_fixed_s,
    point_bases,
)
from capcliff.calibrate.benchmarks import (
    CLIENT_TURNAROUND_S,
    BenchmarkPoint,
    engine_of,
    layout_of,
)
from capcliff.catalog.catalogs import get_hardware, get_model, model_catalog
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.errors import CapcliffError
from capcliff.perf import profiles

ROOT = Path(__file__).parent.parent
# shared/reference next to the repository (or $CAPCLIFF_REFERENCE).
REFERENCE = Path(
    os.environ.get("CAPCLIFF_REFERENCE")
    or next(
        (p for p in (ROOT.parent / "shared" / "reference", Path("/work/shared/reference"))
         if p.is_dir()),
        ROOT.parent / "shared" / "reference",
    )
)  # fmt: skip
# Served checkpoints -> (catalog id, weight dtype when the card is the BF16 architecture).
CHECKPOINTS = {
    "meta-llama/llama-3.1-405b-fp8": ("llama-3.1-405b-fp8", ("llama-3.1-405b", "fp8")),
    "deepseek-ai/deepseek-r1": ("deepseek-r1", None),
    "deepseek-ai/deepseek-r1-0528": ("deepseek-r1", None),  # same architecture and FP8 format
    "nvidia/llama-3.3-70b-instruct-fp4": ("llama-3.3-70b-fp4", None),
    "nvidia/deepseek-r1-0528-fp4": ("deepseek-r1-0528-fp4", None),
    "openai/gpt-oss-120b": ("gpt-oss-120b", None),
    "openai/gpt-oss-20b": ("gpt-oss-20b", None),
    "qwen/qwen3-32b": ("qwen3-32b", None),
    "qwen/qwen3-30b-a3b": ("qwen3-30b-a3b", None),
    # The 2507 refresh: the cards' architecture, a longer context (262144 positions); the
    # rows' workloads stay far below either.
    "qwen/qwen3-235b-a22b-instruct-2507": ("qwen3-235b-a22b", None),
    "qwen/qwen3-235b-a22b-instruct-2507-fp8": ("qwen3-235b-a22b-fp8", None),
}
# What a chat endpoint adds around each prompt, per catalog id: (prompt tokens in all, leading
# tokens every request of a run shares). `vllm bench serve --backend openai-chat` counts a
# prompt's own tokens only (RandomDataset re-encodes it without special tokens; the GPUStack
# rows' notes), while the server prefills the rendered chat, and vLLM V1's prefix cache (on for
# every generating model) computes the shared leading blocks once per run. Counted from the
# templates (docs/validation.md, "The chat template's tokens"):
# - gpt-oss, vLLM 0.10.2 / 0.11.0 (`_make_request_with_harmony`, serving_chat.py): harmony's
#   default system message (SystemContent.new(): identity, knowledge cutoff, current date,
#   "Reasoning: medium", "# Valid channels: analysis, final. Channel must be included for every
#   message.", the commentary channel dropped without custom tools, harmony_utils.py
#   `get_system_message`, PR #23386): 59 o200k_harmony tokens; an empty developer message
#   (`get_developer_message(tools=None)`; harmony's DeveloperContent renders no text):
#   <|start|>developer<|message|><|end|>, 4; the user header <|start|>user<|message|>, 3; then
#   the prompt, <|end|>, and <|start|>assistant (render_conversation_for_completion), 3.
#   59 + 4 + 3 + 3 = 69 in all, the first 59 + 4 + 3 = 66 shared.
# - DeepSeek-R1-0528 (its tokenizer_config's template): the BOS and User special tokens, the
#   prompt, the Assistant special token: 3, the first 2 shared.
# - Qwen3 (Qwen3-32B; Qwen3-235B-A22B-Instruct-2507): <|im_start|>user\n, the prompt,
#   <|im_end|>\n<|im_start|>assistant\n (no default system message; nothing more with thinking
#   left on): 3 + 5 = 8, the first 3 shared.
CHAT_TEMPLATE_TOKENS: dict[str, tuple[int, int]] = {
    "gpt-oss-120b": (69, 66),
    "gpt-oss-20b": (69, 66),
    "deepseek-r1": (3, 2),
    "qwen3-32b": (8, 3),
    "qwen3-235b-a22b": (8, 3),
    "qwen3-235b-a22b-fp8": (8, 3),
}
GPUS = {"h100": "h100-sxm", "h200": "h200-sxm", "b200": "b200", "b300": "b300", "mi300x": "mi300x",
        "mi325x": "mi325x", "mi355x": "mi355x"}  # fmt: skip
# Public rows collected for this harness (not in shared/reference), each with its source.
PUBLIC_ROWS = Path(__file__).parent / "data" / "public_serving_rows.csv"
BANDS = ROOT / "capcliff" / "perf" / "error_bands.json"
# InferenceX (bench_serving with --random-range-ratio 0.8, num_prompts = 10 x conc: the row
# notes quote the InferenceMAX README).
INFERENCEX_RANGE_RATIO = 0.8
# InferenceX's client under transformers 5 (`_served_prompt_factor`): server tokens per client
# token, measured in SemiAnalysisAI/InferenceX #937 (7,140 -> 35,921 tokens, DeepSeek-R1).
INFLATED_PROMPT_FACTOR = 35_921 / 7_140
INFLATED_PROMPT_SINCE = (0, 5, 10)  # SGLang releases that require transformers 5
TOKENIZER_FIX_DATE = "2026-05-15"  # InferenceX #1381: the client fix reaches HF Hub repo ids


@dataclass(frozen=True)
class Row:
    """A serving row resolved to a deployment and a point, or the reason it cannot be."""

    row_id: str
    engine: str
    group: tuple[str, ...] = ()  # rows of one deployment share it
    point: BenchmarkPoint | None = None
    dep: Deployment | None = None
    layout: Layout | None = None
    reason: str = ""


def _model(cell: str) -> tuple[str, str | None] | None:
    """(catalog id, weight dtype) of a served checkpoint, or None when no card describes it."""
    repo = cell.split()[0].lower()
    found = CHECKPOINTS.get(repo)
    if found is None:
        return None
    cards = model_catalog()
    card, fallback = found
    if card in cards:
        return card, None
    return fallback if fallback and fallback[0] in cards else None


def _point(r: dict[str, object], row_id: str) -> BenchmarkPoint:
    """The row as its benchmark ran it (see the notes column of each source)."""
    c = int(re.match(r"\d+", str(r["concurrency"])).group())  # type: ignore[union-attr]
    isl, osl = int(float(str(r["input_len"]))), int(float(str(r["output_len"])))
    tool = str(r["benchmark_tool"])
    tpot = r["mean_tpot_ms"]
    point = BenchmarkPoint(
        row_id, c, isl, osl,
        client_turnaround_s=CLIENT_TURNAROUND_S,
        num_requests=None if pd.isna(r["num_requests"]) else int(float(str(r["num_requests"]))),
        output_throughput_tok_s=float(str(r["output_throughput_tok_s"])),
        mean_tpot_s=None if pd.isna(tpot) else float(str(tpot)) / 1e3,
        mean_ttft_s=None if pd.isna(r["mean_ttft_ms"]) else float(str(r["mean_ttft_ms"])) / 1e3,
    )  # fmt: skip
    if "benchmark_throughput" in tool:
        # Offline: num_prompts = the batch; the published tokens_per_second counts input and
        # output tokens (B34: 4 x (128 + 2,048) / 71.27 s = 122.1): output = c x osl / e2e.
        e2e_s = float(str(r["mean_e2e_latency_ms"])) / 1e3
        return replace(
            point, num_requests=c, output_throughput_tok_s=c * osl / e2e_s, client_turnaround_s=0.0
        )
    if "InferenceX" in tool:
        served = round(isl * _served_prompt_factor(r))
        return replace(
            point, input_len=served, num_requests=10 * c, range_ratio=INFERENCEX_RANGE_RATIO
        )
    if "openai-chat" in tool:
        return _with_chat_template(point, r)
    return point


def _with_chat_template(point: BenchmarkPoint, r: dict[str, object]) -> BenchmarkPoint:
    """`point` as the server prefilled it through a chat endpoint: the model's chat-template
    tokens around each prompt, the leading ones shared by every request (CHAT_TEMPLATE_TOKENS)."""
    model = _model(str(r["model"]))
    found = CHAT_TEMPLATE_TOKENS.get(model[0]) if model else None
    if found is None:
        raise ValueError(
            f"{point.row_id}: a chat-endpoint row needs its model's template tokens in "
            "CHAT_TEMPLATE_TOKENS"
        )
    total, shared = found
    return replace(point, input_len=point.input_len + total, shared_prefix_tokens=shared)


def _served_prompt_factor(r: dict[str, object]) -> float:
    """Server-side prompt tokens per prompt token InferenceX's client counted: 1, except on the
    SGLang DeepSeek-R1 rows its client tokenized wrongly. Transformers 5 loads DeepSeek-R1's
    tokenizer (declared LlamaTokenizerFast, ByteLevel in tokenizer.json) with a Metaspace
    pre-tokenizer and decoder; SGLang restores them at start-up
    (`_fix_v5_tokenizer_components`), the benchmark client did not, so the random token ids it
    decoded to a prompt re-tokenized on the server into about five times as many
    (SemiAnalysisAI/InferenceX #937, measured with transformers 5.3.0: a 7,140-token prompt
    reached the server as 35,921 tokens). #937 (ef01c2205, 2026-03-27) applied the fix in the
    client for local model directories only; #1381 (5fe6d56ee, 2026-05-15) for HF Hub repo ids,
    which is how the B300 runner passed DeepSeek-R1 (runners/launch_b300-nv.sh from 9ebeafb4e),
    and #1502 re-ran the DeepSeek-R1 SGLang configs "to pick up the tokenizer fix". SGLang
    requires transformers 5 from 0.5.10 (INFLATED_PROMPT_SINCE). So: InferenceX SGLang
    DeepSeek-R1 rows of release 0.5.10 or later dated before 2026-05-15."""
    engine = engine_of(str(r["engine"]), str(r["engine_version"]))
    release = _release(str(r["engine_version"]))
    date = re.search(r"InferenceX (\d{4}-\d\d-\d\d)", str(r["notes"]))
    if (
        engine != "sglang"
        or date is None
        or date.group(1) >= TOKENIZER_FIX_DATE
        or "deepseek-r1" not in str(r["model"]).lower()
        or release is None
        or tuple(int(x) for x in release.split(".")) < INFLATED_PROMPT_SINCE
    ):
        return 1.0
    return INFLATED_PROMPT_FACTOR


def _flag(flags: str, name: str) -> int | None:
    """The integer a server flag (`--max-model-len 32768`) sets in a row's flags, or None."""
    found = re.search(rf"{name}[ =](\d+)", flags)
    return int(found.group(1)) if found else None


def _server_context(context: int | None, engine: str) -> int | None:
    """A vLLM V0 server started without --max-model-len serves the model's whole context
    (`ModelConfig` derives max_model_len from max_position_embeddings), which decides V0's
    chunked-prefill default and its profile run (`engines.vllm_v0_chunked_prefill`). Other
    engines' rows keep the workload's length, as before (their budgets do not depend on it)."""
    return context if engine == "vllm-v0" else None


def _offline_chunked_prefill(r: dict[str, object], engine: str) -> bool | None:
    """vLLM V0's benchmark_throughput.py (0.6.x) declares `--enable-chunked-prefill` as a
    store_true flag and passes `enable_chunked_prefill=False` to LLM(...) unless it is given, so
    the engine's long-context default (chunked prefill above 32K) never applies: SchedulerConfig
    budgets max(max_model_len, 2048) tokens per step, the profile run (which sizes the
    activation peak, hence the KV pool) runs that many tokens, and prefills run in steps of their
    own. None: the engine's own default."""
    flags, tool = str(r["server_flags"]), str(r["benchmark_tool"])
    if engine != "vllm-v0" or "benchmark_throughput" not in tool or "chunked" in flags:
        return None
    return False


def _recv_interval(r: dict[str, object], engine: str, layout: str) -> int | None:
    """SGLang's --scheduler-recv-interval as InferenceX's DeepSeek-R1 launch scripts for B200
    and B300 pass it (SemiAnalysisAI/InferenceX benchmarks/dsr1_fp{4,8}_b200_docker.sh from
    2025-10-01, benchmarks/single_node/dsr1_fp{4,8}_b{2,3}00.sh; the B300 scripts had it from
    their first commit, 2026-04-17): 30 at 16 clients and more, else 10; 10 for FP8 at TP 4; 1
    with DP attention. None for every other row (H200 and AMD scripts do not pass it)."""
    hardware, model = str(r["hardware"]), str(r["model"]).lower()
    if (
        engine != "sglang"
        or "InferenceX" not in str(r["notes"])
        or "deepseek-r1" not in model
        or not any(g in hardware for g in ("B200", "B300"))
        or layout.startswith("dpa")
    ):
        return None
    if "fp8" in model and layout.startswith("tp4"):
        return 10
    return 30 if int(float(str(r["concurrency"]))) >= 16 else 10


def _parallelism(r: dict[str, object], engine: str) -> str:
    """The row's parallelism cell, with expert parallelism where InferenceX's launch script ran
    it and the cell leaves it out: SemiAnalysisAI/InferenceX benchmarks/dsr1_fp4_b200_docker.sh
    passed `--enable-ep-moe` (SGLang: ep_size = tp_size) from its first version (2025-09-19)
    until d8fe8f73e (2025-11-10), which replaced it with `--ep-size $EP_SIZE` and set `ep` equal
    to `tp` on every point of dsr1-fp4-b200-sglang in .github/configs/nvidia-master.yaml; the
    same script's later rows are recorded as TP + EP. So an InferenceX SGLang DeepSeek-R1 FP4 row
    on B200 recorded as "TPn (no DP attention)" ran TPn + EPn. Not the MTP rows (another script,
    dsr1_fp4_b200_mtp.sh)."""
    cell = str(r["parallelism"])
    found = re.fullmatch(r"TP(\d+) \(no DP attention\)", cell)
    if (
        found is None
        or engine != "sglang"
        or "InferenceX" not in str(r["notes"])
        or "B200" not in str(r["hardware"])
        or "deepseek-r1" not in str(r["model"]).lower()
        or "fp4" not in str(r["model"]).lower()
        or str(r.get("spec_method", "nan")) != "nan"
    ):
        return cell
    return f"TP{found.group(1)} + EP{found.group(1)} (no DP attention)"


def _adp_balance(r: dict[str, object], engine: str, layout: str) -> str | None:
    """TensorRT-LLM's attention-DP balance as InferenceX's DeepSeek-R1 TensorRT-LLM launch
    scripts set it on every DP-attention point (SemiAnalysisAI/InferenceX
    benchmarks/dsr1_fp{4,8}_b200_trt*.sh and dsr1_fp8_h200_trt*.sh, `attention_dp_config:
    enable_balance: true, timeout_iters: 60, batching_wait_iters: 0` when DP_ATTENTION is true,
    since ec90f3fe7, 2025-09-18; the MTP scripts alike): "60:0". None for every other row
    (TensorRT-LLM's default is off)."""
    if (
        engine != "trtllm"
        or "InferenceX" not in str(r["notes"])
        or "deepseek-r1" not in str(r["model"]).lower()
        or not parse_layout(layout).attention_dp
    ):
        return None
    return "60:0"


def _async_scheduling(r: dict[str, object], engine: str) -> bool | None:
    """vLLM V1's `--async-scheduling` in a row's serve command (P213-P215, P217): the engine's
    overlap scheduler (`--overlap-schedule`: AsyncScheduler schedules step N + 1 while step N
    runs, perf/host_time.py). None: the release's default."""
    if engine != "vllm" or "--async-scheduling" not in str(r["server_flags"]):
        return None
    return True


def _vllm_mxfp4_backend(r: dict[str, object], engine: str) -> str | None:
    """ "marlin" for GPUStack's gpt-oss rows on Hopper: the lab runs vLLM in its runner images
    (gpustack/gpustack docs/image-selector: `gpustack/runner:cuda12.8-vllm0.10.2`, ...), whose
    pack/cuda/Dockerfile (gpustack/runner 99e25ed for 0.10.x, 9063cc7 for 0.11.0) installs
    `vllm==${VLLM_VERSION}` from PyPI and FlashInfer, not the optional `triton_kernels`, so
    vLLM's `get_mxfp4_backend` runs the experts on Marlin (perf/marlin_moe.py). None for every
    other row."""
    return "marlin" if _gpustack_vllm_hopper(r, engine, "gpt-oss") else None


def _vllm_block_fp8_backend(r: dict[str, object], engine: str) -> str | None:
    """ "triton" for GPUStack's DeepSeek-R1 rows (vLLM 0.11.0 on H200, P206-P209): vLLM's
    `Fp8MoEMethod` runs block-FP8 experts on DeepGEMM only where `has_deep_gemm()` finds it
    installed (and `VLLM_USE_DEEP_GEMM` allows it), else on its Triton `fused_experts` kernel.
    The page was published on 2025-10-15 (gpustack/gpustack 72aee9dd) and the lab's runner
    images installed vLLM from PyPI without DeepGEMM until 2025-11-06 (gpustack/runner 796089a
    "cuda pack ep kernels" adds it), so the experts ran the Triton kernel, which aiconfigurator
    measured at R1's own shape (perf/moe_tables.py). None for every other row."""
    return "triton" if _gpustack_vllm_hopper(r, engine, "deepseek-r1") else None


def _sglang_fp8_gemm_backend(r: dict[str, object], engine: str) -> str | None:
    """ "flashinfer_trtllm" for InferenceX's SGLang rows on B200 and B300: every launch script
    of theirs exports `SGL_ENABLE_JIT_DEEPGEMM=false` (and `SGLANG_ENABLE_FLASHINFER_GEMM=true`),
    under which SGLang's `dispatch_w8a8_block_fp8_linear` runs the dense block-FP8 GEMMs on
    FlashInfer's `gemm_fp8_nt_groupwise` (perf/flashinfer_gemm.py). None for every other row."""
    hardware, notes = str(r["hardware"]), str(r["notes"])
    blackwell = "B200" in hardware or "B300" in hardware
    return (
        "flashinfer_trtllm" if engine == "sglang" and blackwell and "InferenceX" in notes else None
    )


def _gpustack_vllm_hopper(r: dict[str, object], engine: str, model: str) -> bool:
    """Whether a row is GPUStack's vLLM run of `model` (a lower-case name part) on an H100 or
    H200: the lab's runner images, which the two MoE backends above describe."""
    return (
        engine == "vllm"
        and "gpustack" in str(r["source"])
        and model in str(r["model"]).lower()
        and any(g in str(r["hardware"]) for g in ("H100", "H200"))
    )


def _moe_backend(r: dict[str, object], engine: str) -> str | None:
    """The MoE backend a TensorRT-LLM R1 FP8 row on B200 ran, where it is not the default
    (TRTLLM, perf/moe_tables.py): InferenceX's dsr1_fp8_b200_trt.sh set `moe_config.backend:
    DEEPGEMM` until 2026-01-29 (#594 made it TRTLLM), and dsr1_fp8_b200_trt_mtp.sh until
    2026-02-05 (#632); under attention DP it stays DEEPGEMM. None: the default."""
    if engine != "trtllm" or "B200" not in str(r["hardware"]):
        return None
    notes = str(r["notes"])
    date = re.search(r"InferenceX (\d{4}-\d\d-\d\d)", notes)
    if "precision fp8" not in notes or date is None:
        return None
    mtp = str(r.get("spec_method", "nan")) != "nan"
    switched = "2026-02-05" if mtp else "2026-01-29"
    dpa = "DP attention" in str(r["parallelism"]) and "no DP attention" not in str(r["parallelism"])
    return "deepgemm" if date.group(1) < switched or dpa else None


def _release(cell: str) -> str | None:
    """The release a row's engine_version cell names (sglang 0.4.3.post2, v0.5.12-cu130), or
    None (not recorded: the latest modelled profile)."""
    found = re.search(r"\d+\.\d+(?:\.\d+)?", cell)
    return found.group(0) if found else None


def load_public_rows(path: Path = PUBLIC_ROWS) -> pd.DataFrame:
    """benchmarks/data/public_serving_rows.csv: the reference CSV's columns, every row with a
    source."""
    return pd.read_csv(path)


def public_ids() -> set[str]:
    """Row ids of benchmarks/data/public_serving_rows.csv."""
    return set(load_public_rows()["row_id"].astype(str))


def serving_rows() -> list[Row]:
    """Every row of serving_benchmarks.csv and of the public rows, resolved or with the reason
    it is not."""
    tables = [load_public_rows()]
    if (REFERENCE / "serving_benchmarks.csv").exists():
        tables.insert(0, pd.read_csv(REFERENCE / "serving_benchmarks.csv"))
    return resolve_rows(pd.concat(tables, ignore_index=True))


def resolve_rows(
    table: pd.DataFrame, extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> list[Row]:
    """Every row of `table` (the reference CSV's columns) resolved, or with the reason it is
    not; `extra` adds deployment settings read from a row (benchmarks/speculative_fidelity.py:
    its speculative decoding)."""
    rows = []
    for r in table.to_dict("records"):
        row_id = str(r["row_id"])
        engine = engine_of(str(r["engine"]), str(r["engine_version"])) or str(r["engine"])
        layout = layout_of(_parallelism(r, engine))
        model = _model(str(r["model"]))
        gpu = next((v for k, v in GPUS.items() if k in str(r["hardware"]).lower()), None)
        if pd.isna(r["input_len"]):
            reason = (
                "multi-turn/agentic trace replay: the row gives mean lengths and a prefix-cache "
                "hit rate, not the conversations to replay"
            )
        elif model is None:
            reason = f"no catalog card for {str(r['model']).split()[0]}"
        elif gpu is None:
            reason = f"no hardware card for {r['hardware']}"
        else:
            reason = ""
        if reason:
            rows.append(Row(row_id, engine, reason=reason))
            continue
        assert model is not None and gpu is not None
        settings = settings_of(
            {"engine": engine, "weight_dtype": model[1],
             "max_model_len": _flag(str(r["server_flags"]), "--max-model-len")
             or _server_context(get_model(model[0]).arch.max_position_embeddings, engine),
             "max_num_batched_tokens": _flag(str(r["server_flags"]), "--max-num-batched-tokens"),
             "enable_chunked_prefill": _offline_chunked_prefill(r, engine),
             "engine_version": _release(str(r["engine_version"])),
             "scheduler_recv_interval": _recv_interval(r, engine, layout),
             "overlap_schedule": _async_scheduling(r, engine),
             "prefix_caching": "off" if "no-enable-prefix-caching" in str(r["server_flags"])
             else None,
             "moe_backend": _moe_backend(r, engine) or _vllm_mxfp4_backend(r, engine)
             or _vllm_block_fp8_backend(r, engine),
             "attention_dp_balance": _adp_balance(r, engine, layout),
             "fp8_gemm_backend": _sglang_fp8_gemm_backend(r, engine),
             **(extra(r) if extra else {})}
        )  # fmt: skip
        try:
            dep = resolve(get_model(model[0]), get_hardware(gpu), settings)
        except CapcliffError as exc:
            rows.append(Row(row_id, engine, reason=str(exc)))
            continue
        # A deployment: model, GPU, layout, engine and release.
        group = (model[0], gpu, layout, engine, _release(str(r["engine_version"])) or "latest")
        rows.append(Row(row_id, engine, group, _point(r, row_id), dep, parse_layout(layout)))
    return rows


@dataclass(frozen=True)
class Outcome:
    """One row: uncalibrated and leave-one-deployment-out calibrated predictions."""

    row: Row
    fit: PointFit  # modeled = uncalibrated; calibrated = fitted on other deployments
    loo_terms: str  # what the held-out fit used ("fixed_s+scale", "scale", "none")


def _deployment_bases(members: list[Row]) -> list[Basis] | str:
    """The deployment's bases, or why capcliff cannot simulate it (a layout that does not fit).
    Rows of one deployment whose server ran another receive interval (InferenceX's scripts set
    it by concurrency: `_recv_interval`) are simulated with their own."""
    layout = members[0].layout
    assert layout is not None
    runs: dict[int | None, list[int]] = {}
    for i, m in enumerate(members):
        assert m.dep is not None and m.point is not None
        runs.setdefault(m.dep.settings.scheduler_recv_interval, []).append(i)
    bases: dict[int, Basis] = {}
    try:
        for idx in runs.values():
            dep = members[idx[0]].dep
            assert dep is not None
            points = [p for i in idx if (p := members[i].point) is not None]
            bases.update(zip(idx, point_bases(dep, layout, points), strict=True))
    except CapcliffError as exc:
        return str(exc)
    return [bases[i] for i in range(len(members))]


def _bases_job(
    job: tuple[tuple[str, ...], float | None],
) -> tuple[tuple[str, ...], list[Basis] | str]:
    """Worker: rebuild the rows (cheap) and simulate one deployment's points (with its held-out
    first wave, where it has one)."""
    key, wave = job
    members = [with_first_wave(r, wave) for r in serving_rows() if not r.reason and r.group == key]
    return key, _deployment_bases(members)


def with_first_wave(row: Row, wave_s: float | None) -> Row:
    """`row` whose deployment simulates a first wave of `wave_s` seconds (None: the shipped
    figure of its engine and GPU vendor, `capcliff/perf/first_wave.py`)."""
    if wave_s is None or row.dep is None:
        return row
    return replace(row, dep=replace(row.dep, first_wave_s=wave_s))


def held_out_first_waves() -> dict[tuple[str, ...], float]:
    """Each InferenceX deployment's first wave from the other deployments of its engine and GPU
    vendor (benchmarks/first_wave.py): the shipped figures were made from these runs, so a row
    of them is predicted with the figure its own deployment did not choose. Rows outside
    those runs chose nothing and get the shipped figure."""
    from first_wave import held_out, waves

    return held_out(waves())


def serving_outcomes(
    rows: list[Row], jobs: int = 1, first_waves: dict[tuple[str, ...], float] | None = None
) -> list[Outcome]:
    """See _serving_outcomes; rows whose deployment cannot be simulated get its reason.
    `first_waves`: per deployment, the first wave its uncalibrated prediction simulates (default:
    `held_out_first_waves()`)."""
    waves = held_out_first_waves() if first_waves is None else first_waves
    rows[:] = [with_first_wave(r, waves.get(r.group)) for r in rows]
    outcomes, failed = _serving_outcomes(rows, jobs, waves)
    for i, row in enumerate(rows):
        if row.group in failed:
            rows[i] = replace(row, reason=failed[row.group])
    return outcomes


def _terms_family(key: tuple[str, ...]) -> tuple[str, str]:
    """What prices deployment `key` (model, GPU, layout, engine, release): its engine and GPU
    vendor (NVIDIA GPUs read their weights through measured op curves, AMD GPUs through the MBU
    constants: perf/op_curves.py). A calibration is evidence only within one family."""
    return key[3], get_hardware(key[1]).vendor


def _serving_outcomes(
    rows: list[Row], jobs: int, waves: dict[tuple[str, ...], float]
) -> tuple[list[Outcome], dict[tuple[str, ...], str]]:
    """Simulate every expressible row; calibrate each deployment leave-one-deployment-out: the
    terms (fixed_s, scale) are fitted to the other deployments of the same engine and GPU vendor
    (`_terms_family`), never to a row of the deployment predicted. Uncalibrated = the engine
    profile's defaults."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        if not row.reason:
            groups.setdefault(row.group, []).append(row)
    if jobs > 1:
        from multiprocessing import Pool

        with Pool(jobs) as pool:
            work = [(key, waves.get(key)) for key in groups]
            bases = dict(pool.map(_bases_job, work, chunksize=1))
    else:
        bases = {key: _deployment_bases(members) for key, members in groups.items()}
    failed = {k: v for k, v in bases.items() if isinstance(v, str)}
    ok = {k: v for k, v in bases.items() if not isinstance(v, str)}
    family = {k: _terms_family(k) for k in ok}
    out = []
    for key, members in groups.items():
        if key in failed:
            continue
        dep, layout = members[0].dep, members[0].layout
        assert dep is not None and layout is not None
        fixed0, label = modeled_fixed_s(dep, layout)
        others = [b for k, v in ok.items() if family[k] == family[key] and k != key for b in v]
        if not others:
            for member, b in zip(members, ok[key], strict=True):
                modeled = b.modeled or b.fixed.combine(fixed0, b.variable, 1.0)
                out.append(Outcome(member, PointFit(b.point, modeled, modeled), "none"))
            continue
        terms = ("fixed_s", "scale") if len(others) >= 2 else ("scale",)
        try:
            fit = fit_bases(others, fixed0=fixed0, label=label, terms=terms, predict=ok[key])
            used = "+".join(terms)
        except CapcliffError:
            fit = fit_bases(others, fixed0=fixed0, label=label, terms=("scale",),
                            predict=ok[key])  # fmt: skip
            used = "scale"
        for member, point_fit in zip(members, fit.points, strict=True):
            out.append(Outcome(member, point_fit, used))
    return out, failed


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f} %"


def _errors(outcomes: list[Outcome], metric: str, which: str) -> list[float]:
    """Signed relative errors of `metric` (throughput, tpot, ttft) for `which` prediction."""
    out = []
    for o in outcomes:
        timings = getattr(o.fit, which)
        p = o.row.point
        assert p is not None
        if metric == "throughput":
            e = o.fit.throughput_error(timings)
        elif metric == "tpot":
            e = o.fit.tpot_error(timings)
        else:
            e = timings.ttft_s / p.mean_ttft_s - 1 if p.mean_ttft_s else None
        if e is not None:
            out.append(e)
    return out


def _band(errors: list[float]) -> float | None:
    """Median |relative error| (a fraction), None without rows."""
    return round(statistics.median(abs(e) for e in errors), 4) if errors else None


def _cell(errors: list[float]) -> str:
    if not errors:
        return "-"
    within = sum(abs(e) <= 0.2 for e in errors) / len(errors)
    return f"{statistics.median(abs(e) for e in errors) * 100:.0f} % / {within * 100:.0f} %"


def _by_engine_gpu(outcomes: list[Outcome]) -> dict[str, dict[str, list[Outcome]]]:
    """Outcomes per engine ("all": every engine) and GPU family ("h200"; "all": every GPU), the
    keys of capcliff/perf/error_bands.json (perf/error_band._gpu_key)."""
    table: dict[str, dict[str, list[Outcome]]] = {}
    for o in outcomes:
        gpu = o.row.group[1].split("-")[0].lower()
        for engine in (o.row.engine, "all"):
            per = table.setdefault(engine, {})
            per.setdefault(gpu, []).append(o)
            per.setdefault("all", []).append(o)
    return table


def print_summary(outcomes: list[Outcome]) -> None:
    """Per engine and GPU: rows, deployments, then median |error| / share within 20 % of output
    throughput, mean TPOT and mean TTFT, uncalibrated and calibrated leave-one-deployment-out."""
    print("| engine | GPU | rows | deployments | throughput: uncal. | LOO-cal. | "
          "TPOT: uncal. | LOO-cal. | TTFT: uncal. | LOO-cal. |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for engine, per in sorted(_by_engine_gpu(outcomes).items()):
        for gpu, chosen in sorted(per.items(), key=lambda kv: (kv[0] == "all", kv[0])):
            cells = [
                _cell(_errors(chosen, metric, which))
                for metric in ("throughput", "tpot", "ttft")
                for which in ("modeled", "calibrated")
            ]
            deps = len({o.row.group for o in chosen})
            print(f"| {engine} | {gpu} | {len(chosen)} | {deps} | {' | '.join(cells)} |")
    print()
    print("Cells: median |error| / share of rows within 20 %. LOO-cal.: step terms (fixed_s, "
          "scale) and the request overhead (the median of measured - simulated mean TTFT) "
          "fitted to the other deployments of the same engine and GPU vendor; a deployment is "
          "model, GPU, layout, engine and release.")  # fmt: skip


# A band is a median: a cell of fewer rows is left out, and a report then takes the next wider
# scope (perf/error_band.py). Set, not fitted.
MIN_BAND_ROWS = 5


def sustained(o: Outcome) -> bool:
    """Whether a row measured a sustained load (clients that send their next request when one
    finishes, more requests than clients), the regime the figures a band travels with describe
    (plan's and sweep's steady state), rather than one burst of every request at once (a batch's
    transient: its makespan, its queue of all the prompts)."""
    p = o.row.point
    return p is not None and (p.num_requests is None or p.num_requests > p.concurrency)


def error_bands(outcomes: list[Outcome], when: str) -> dict[str, object]:
    """The bands as capcliff/perf/error_bands.json holds them (perf/error_band.py reads it):
    {"about", "engines": {engine or "all": {GPU family or "all": {"rows", "uncalibrated":
    {"throughput", "tpot", "ttft"}, "calibrated": {...}}}}}; fractions, None: not measured.
    From the rows of sustained loads (`sustained`), in cells of at least MIN_BAND_ROWS."""
    engines: dict[str, object] = {}
    steady = [o for o in outcomes if sustained(o)]
    for engine, per in sorted(_by_engine_gpu(steady).items()):
        per = {gpu: chosen for gpu, chosen in per.items() if len(chosen) >= MIN_BAND_ROWS}
        if not per:
            continue
        engines[engine] = {
            gpu: {
                "rows": len(chosen),
                "deployments": len({o.row.group for o in chosen}),
                **{
                    name: {
                        m: _band(_errors(chosen, m, which)) for m in ("throughput", "tpot", "ttft")
                    }
                    for name, which in (("uncalibrated", "modeled"), ("calibrated", "calibrated"))
                },
            }
            for gpu, chosen in sorted(per.items())
        }
    about = (
        "Median absolute error of capcliff's figures against public serving benchmarks "
        "(shared/reference/serving_benchmarks.csv and benchmarks/data/public_serving_rows.csv), "
        "per engine and GPU family: uncalibrated (the engine profile's named terms) and "
        "calibrated leave-one-deployment-out (fixed_s, scale and the request overhead fitted to "
        "the other deployments of the same engine and GPU vendor; a deployment is model, GPU, "
        "layout, engine and release). Only rows of a sustained load (more requests than "
        "clients; not one burst of every request at once), in cells of at least "
        f"{MIN_BAND_ROWS} rows. Fractions. "
        f"Written by `python benchmarks/fidelity.py --write-bands` on {when}."
    )
    return {"about": about, "engines": engines}


def print_serving(outcomes: list[Outcome], rows: list[Row]) -> None:
    print("| row | engine | GPU | layout | release | clients | isl/osl | output tok/s | "
          "uncalibrated | LOO | TPOT ms | uncalibrated | LOO | TTFT s | uncalibrated | LOO | "
          "past cliff |")  # fmt: skip
    print("|---|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for o in outcomes:
        p, f = o.row.point, o.fit
        assert p is not None and o.row.layout is not None
        tpot = "-" if p.mean_tpot_s is None else f"{p.mean_tpot_s * 1e3:.2f}"
        ttft = "-" if p.mean_ttft_s is None else f"{p.mean_ttft_s:.2f}"
        ttft_err = _pct(f.modeled.ttft_s / p.mean_ttft_s - 1) if p.mean_ttft_s else "-"
        ttft_cal = _pct(f.calibrated.ttft_s / p.mean_ttft_s - 1) if p.mean_ttft_s else "-"
        print(
            f"| {o.row.row_id} | {o.row.engine} | {o.row.group[1]} | {o.row.layout.name} | "
            f"{o.row.group[4]} | {p.concurrency} | "
            f"{p.input_len}/{p.output_len} | {p.output_throughput_tok_s:,.1f} | "
            f"{1 / f.modeled.s_per_token:,.1f} ({_pct(f.throughput_error(f.modeled))}) | "
            f"{_pct(f.throughput_error(f.calibrated))} | "
            f"{tpot} | {_pct(f.tpot_error(f.modeled))} | {_pct(f.tpot_error(f.calibrated))} | "
            f"{ttft} | {f.modeled.ttft_s:.2f} ({ttft_err}) | {ttft_cal} | "
            f"{'yes' if f.modeled.preemptions else 'no'} |"
        )
    print()
    print("Rows capcliff cannot express yet:")
    for row in rows:
        if row.reason:
            print(f"- {row.row_id} ({row.engine}): {row.reason}")


def print_startup() -> None:
    """KV tokens of the start-up logs: benchmarks/engine_validation.py's table over the rows
    with a fixture log, then the reference rows it cannot express and why."""
    sys.path.insert(0, str(Path(__file__).parent))
    import engine_validation  # type: ignore[import-not-found]

    engine_validation.main()
    covered = {row.row for row in engine_validation.ROWS}
    cards = model_catalog()
    repos = {card.hf_repo.lower() for card in cards.values()}
    print()
    print("Start-up log rows capcliff cannot express yet:")
    for name in ("vllm_kv_logs.csv", "sglang_trtllm_kv_logs.csv"):
        for r in pd.read_csv(REFERENCE / name).to_dict("records"):
            if r["row_id"] in covered:
                continue
            repo = str(r["model_hf_id"]).lower()
            why = "no catalog card for it" if repo not in repos else "no fixture log in tests/"
            print(f"- {r['row_id']} ({r['model_hf_id']}): {why}")


def use_op_curves(ops: tuple[str, ...]) -> None:
    """Every engine profile with measured op tables prices steps with the curves `ops` (of
    profiles.OP_CURVE_OPS; () the constants alone): an evaluation switch, before the run."""
    for engine, profile in list(profiles.PROFILES.items()):
        if profile.op_tables is not None:
            profiles.PROFILES[engine] = replace(profile, op_curve_ops=ops)
    for engine, older in list(profiles.OLDER_PROFILES.items()):  # earlier releases alike
        profiles.OLDER_PROFILES[engine] = tuple(
            (boundary, replace(p, op_curve_ops=ops) if p.op_tables is not None else p)
            for boundary, p in older
        )


def _op_curves(text: str) -> tuple[str, ...]:
    ops = () if text == "none" else tuple(text.split(","))
    unknown = sorted(set(ops) - set(profiles.OP_CURVE_OPS))
    if unknown:
        valid = ", ".join(profiles.OP_CURVE_OPS)
        raise argparse.ArgumentTypeError(f"unknown op {', '.join(unknown)}; valid: {valid}, none")
    return ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes simulating deployments")
    parser.add_argument(
        "--summary", action="store_true",
        help="only the per-engine summaries (not every row nor the start-up logs)",
    )  # fmt: skip
    parser.add_argument(
        "--write-bands",
        action="store_true",
        help=f"write the per-engine error bands to {BANDS.relative_to(ROOT)}",
    )
    parser.add_argument(
        "--op-curves", type=_op_curves, default=None,
        help="measured op curves that price steps, comma-separated (gemm, moe, mla) or none; "
        f"default: the profiles' own ({','.join(profiles.DEFAULT_OP_CURVES)})",
    )  # fmt: skip
    args = parser.parse_args()
    if args.op_curves is not None:
        if args.write_bands:
            parser.error("--write-bands records the default profiles: drop --op-curves")
        use_op_curves(args.op_curves)
    rows = serving_rows()
    outcomes = serving_outcomes(rows, jobs=args.jobs)
    print("## Serving benchmarks\n")
    print("### Every row (shared/reference and benchmarks/data)\n")
    print_summary(outcomes)
    print(
        "\n### The public rows alone (benchmarks/data: no term was chosen on them but the first "
        "wave, which each deployment takes from the others)\n"
    )
    print_summary([o for o in outcomes if o.row.row_id in public_ids()])
    print()
    if not args.summary:
        print_serving(outcomes, rows)
    if args.write_bands:
        when = datetime.now(UTC).date().isoformat()
        bands = error_bands(outcomes, when)
        if BANDS.exists():  # the speculative section is speculative_fidelity.py's: kept
            kept = json.loads(BANDS.read_text()).get("speculative")
            if kept is not None:
                bands["speculative"] = kept
        BANDS.write_text(json.dumps(bands, indent=2) + "\n")
        print(f"\nwrote {BANDS.relative_to(ROOT)}")
    if not args.summary:
        print("\n## Start-up logs\n")
        print_startup()


if __name__ == "__main__":
    main()
