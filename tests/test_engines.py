"""Each engine's budget rule against the arithmetic of its public start-up logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from capcliff.calibrate.compare import calibrate
from capcliff.calibrate.startup_logs import parse_startup_log
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName, Provenance, StageDemand
from capcliff.memory.engines import engine_defaults, sglang_mem_fraction_static, stage_budget
from capcliff.units import GIB, MIB
from tests.conftest import arch_of

NO_OVERHEADS = {
    "activation_peak": 0,
    "non_torch": 0,
    "cudagraph": 0,
    "cuda_context": 0,
    "weights_overhead": 0,
}


def _demand(
    model_id: str = "llama-3.1-8b",
    *,
    total: int,
    weights: int,
    per_token: int = 131_072,
    layout: Layout | None = None,
    max_model_len: int = 8192,
) -> StageDemand:
    return StageDemand(
        arch=arch_of(model_id),
        layout=layout or Layout(),
        stage=0,
        total_memory_bytes=total,
        weights_bytes=weights,
        kv_bytes_per_token=per_token,
        max_model_len=max_model_len,
    )


def _block_range(kv_gib: float, block_bytes: int) -> range:
    """Block counts consistent with a KV size the log rounded to 0.01 GiB."""
    low = int((kv_gib - 0.005) * GIB) // block_bytes
    high = int((kv_gib + 0.005) * GIB) // block_bytes
    return range(low, high + 1)


def test_vllm_v0_row_v24_budget_and_blocks() -> None:
    # Row V24 (A100 40GB, Llama-3-8B): 39.50 GiB x 0.90 - weights 14.96 - non-torch 0.10
    # - activation 9.37 = 11.12 GiB of KV (logged 11.12); 5,691 blocks logged.
    settings = BudgetSettings(
        engine=EngineName.VLLM_V0,
        term_overrides={"activation_peak": round(9.37 * GIB), "non_torch": round(0.10 * GIB)}
        | {"weights_overhead": 0},
    )
    budget = stage_budget(_demand(total=round(39.50 * GIB), weights=round(14.96 * GIB)), settings)
    assert budget.kv_bytes / GIB == pytest.approx(11.12, abs=0.01)
    assert 5691 in _block_range(11.12, 16 * 131_072)
    assert budget.blocks in _block_range(11.12, 16 * 131_072)


def test_vllm_v1_row_v04_exact_blocks_from_logged_bytes() -> None:
    # Row V04 logs the KV pool in bytes: 11,423,138,508 B. Qwen3-235B at TP8 stores one of its 4 KV
    # heads per rank: 2 * 94 * 1 * 128 * 2 = 48,128 B/token; a 16-token block is 770,048 B;
    # 11,423,138,508 // 770,048 = 14,834 blocks (the log's num_gpu_blocks), 237,344 tokens.
    settings = BudgetSettings(kv_cache_memory_bytes=11_423_138_508)
    demand = _demand(
        "qwen3-235b-a22b", total=round(44.42 * GIB), weights=0, per_token=48_128,
        layout=Layout(tp=8, ep=8), max_model_len=32_768,
    )  # fmt: skip
    budget = stage_budget(demand, settings)
    assert budget.blocks == 14_834
    assert budget.blocks * budget.block_size == 237_344


def test_vllm_current_subtracts_cuda_graphs_and_v0_does_not() -> None:
    demand = _demand(total=80 * GIB, weights=16 * GIB)
    current = stage_budget(demand, BudgetSettings())
    v0 = stage_budget(demand, BudgetSettings(engine=EngineName.VLLM_V0))
    assert "cudagraph" in [t.name for t in current.terms]
    assert "cudagraph" in [t.name for t in v0.outside_terms]
    eager = stage_budget(demand, BudgetSettings(enforce_eager=True))
    assert eager.term("cudagraph") == 0


def test_kv_cache_memory_bypasses_the_budget() -> None:
    # --kv-cache-memory 21.43GiB: 21.43 * 2^30 // (16 * 131,072) = 10,972 blocks.
    settings = BudgetSettings(kv_cache_memory_bytes=round(21.43 * GIB))
    budget = stage_budget(_demand(total=80 * GIB, weights=16 * GIB), settings)
    assert budget.blocks == round(21.43 * GIB) // (16 * 131_072) == 10_972


def test_sglang_row_s02_tokens_within_log_rounding() -> None:
    # Row S02 (QwQ-32B = Qwen2.5-32B, TP4 on L4, mem_fraction_static 0.85): free before weights
    # 21.63 GiB, weights 15.54 GiB (logged mem usage); rest = 21.63 * 0.85 - 15.54 = 2.8455 GiB;
    # cell = 2 * 64 layers * 2 KV heads * 128 * 2 B = 65,536 B; 2.8455 GiB / 65,536 = 46,620 tokens.
    # Logged: 46,611 (inputs rounded to 0.01 GiB allow 46,526 - 46,715).
    settings = BudgetSettings(
        engine=EngineName.SGLANG,
        mem_fraction_static=0.85,
        term_overrides={"cuda_context": 0, "weights_overhead": 0},
    )
    demand = _demand(
        "deepseek-r1-distill-qwen-32b", total=round(21.63 * GIB), weights=round(15.54 * GIB),
        per_token=65_536, layout=Layout(tp=4), max_model_len=131_072,
    )  # fmt: skip
    tokens = stage_budget(demand, settings).blocks
    assert tokens == pytest.approx(46_620, abs=1)
    assert 46_526 <= tokens <= 46_715


def test_trtllm_row_t01_fp8_kv_reproduces_blocks_and_gib() -> None:
    # Row T01 (Llama-3.1-8B): 17.83 GiB free; 0.9 of it over FP8 KV at 65,536 B/token gives
    # floor(0.9 * 17.83 GiB / 65,536) = 262,914 tokens -> ceil(/32) = 8,217 blocks. The log prints
    # 8,219 blocks (263,008 tokens, 16.05 GiB): the printed 17.83 hides up to 0.005 GiB, which is
    # worth up to 3 blocks here.
    settings = BudgetSettings(engine=EngineName.TRTLLM, term_overrides=NO_OVERHEADS)
    budget = stage_budget(_demand(total=round(17.83 * GIB), weights=0, per_token=65_536), settings)
    assert budget.block_size == 32
    assert budget.blocks == 8_217
    assert abs(budget.blocks - 8_219) <= 3
    assert budget.kv_bytes / GIB == pytest.approx(16.05, abs=0.01)


def test_trtllm_max_tokens_caps_the_pool() -> None:
    settings = BudgetSettings(
        engine=EngineName.TRTLLM, term_overrides=NO_OVERHEADS, max_tokens=100_000
    )
    budget = stage_budget(_demand(total=80 * GIB, weights=0), settings)
    assert budget.blocks == 3_125  # ceil(100,000 / 32)


@pytest.mark.parametrize(
    ("total_mib", "tp", "release", "expected"),
    [
        # H200 TP8: reserved = 512 + 1.5 * 8192 + 2 * 512 + 8 / 8 * 1024 = 14,848 MiB;
        # (143,771 - 14,848) / 143,771 = 0.897 at 0.5.9; from 0.5.10 a dense model adds 58
        # piecewise sizes x 8 MiB = 464: 15,312; 128,459 / 143,771 = 0.89349 -> 0.893.
        (143_771, 8, (0, 5, 9), 0.897),
        (143_771, 8, None, 0.893),
        # H100 TP1: 512 + 12,288 + 2 * 256 + 128 = 13,440; (81,559 - 13,440) / 81,559 = 0.835;
        # from 0.5.10 13,904: 67,655 / 81,559 = 0.82952 -> 0.83.
        (81_559, 1, (0, 5, 9), 0.835),
        (81_559, 1, (0, 5, 10), 0.83),
    ],
)
def test_sglang_default_mem_fraction_static(
    total_mib: int, tp: int, release: tuple[int, int, int] | None, expected: float
) -> None:
    assert sglang_mem_fraction_static(total_mib * MIB, tp=tp, pp=1, release=release) == expected


@pytest.mark.parametrize(
    ("engine", "total_gib", "expected"),
    [
        (EngineName.VLLM, 140, (8192, 1024, 16)),  # >= 70 GiB tier
        (EngineName.VLLM, 44, (2048, 256, 16)),  # L40S: row V04 logs max_num_batched_tokens 2048
        (EngineName.TRTLLM, 140, (8192, 2048, 32)),
        # SGLang server_args.py: chunked_prefill_size by GPU memory (< 20 GiB 2048, < 35 2048,
        # < 60 4096, < 160 8192, else 16384); max_running_requests up to 4096; page size 1.
        (EngineName.SGLANG, 16, (2048, 4096, 1)),
        (EngineName.SGLANG, 40, (4096, 4096, 1)),
        (EngineName.SGLANG, 140, (8192, 4096, 1)),
        (EngineName.SGLANG, 180, (16384, 4096, 1)),
    ],
)
def test_engine_batch_defaults(
    engine: EngineName, total_gib: int, expected: tuple[int, int, int]
) -> None:
    d = engine_defaults(
        BudgetSettings(engine=engine),
        total_memory_bytes=total_gib * GIB,
        max_model_len=8192,
        mla=False,
        tp=1,
    )
    assert (d.max_num_batched_tokens, d.max_num_seqs, d.block_size) == expected


def test_vllm_uses_64_token_blocks_for_mla() -> None:
    d = engine_defaults(
        BudgetSettings(), total_memory_bytes=140 * GIB, max_model_len=8192, mla=True, tp=8
    )
    assert d.block_size == 64


def test_vllm_v0_batches_whole_prompts_up_to_32k() -> None:
    # V0 without chunked prefill: max(max_model_len, 2048); above 32K chunked prefill at 2048.
    for length, expected in ((20_000, 20_000), (1024, 2048), (65_536, 2048)):
        d = engine_defaults(
            BudgetSettings(engine=EngineName.VLLM_V0),
            total_memory_bytes=24 * GIB,
            max_model_len=length,
            mla=False,
            tp=1,
        )
        assert d.max_num_batched_tokens == expected


def test_pinned_terms_are_labelled() -> None:
    settings = BudgetSettings(
        term_overrides={"activation_peak": GIB}, calibrated_terms=frozenset({"activation_peak"})
    )
    budget = stage_budget(_demand(total=80 * GIB, weights=16 * GIB), settings)
    labels = {t.name: t.provenance for t in budget.terms}
    assert labels["activation_peak"] is Provenance.CALIBRATED
    assert labels["non_torch"] is Provenance.MODELED


# --- Modern-engine start-up logs whose configuration is known: KV tokens within +-2 % ---
# Uncalibrated: every overhead modeled (weights per module, activation peak, non-PyTorch memory).

LOGS = Path(__file__).parent / "fixtures" / "logs"


def _modeled_kv_tokens_error(fixture: str, model_id: str, gpu: str, fabric: str | None) -> float:
    hardware = get_hardware(gpu)
    if fabric is not None:  # the log's GPU is not in the catalog: its memory comes from the log
        hardware = hardware.model_copy(update={"scaleup_fabric": fabric})
    log = parse_startup_log((LOGS / fixture).read_text())
    result = calibrate(log, get_model(model_id), hardware, base=BudgetSettings())
    tokens = next(f for f in result.figures if f.name == "kv_tokens")
    return tokens.error


@pytest.mark.parametrize(
    ("fixture", "model_id", "gpu", "fabric"),
    [
        # V35: vLLM 0.19.1, DeepSeek-R1-0528 NVFP4, 4 x B200, TP4 + EP4: 1,901,888 tokens.
        ("vllm_v1_v35_dsr1_0528_fp4_4xb200_tp4_ep4.txt", "deepseek-r1-0528-fp4", "b200", None),
        # V37: vLLM 0.15.0, Llama-3.3-70B NVFP4, 1 x B200: 782,160 tokens.
        ("vllm_v1_v37_llama33_70b_fp4_b200_tp1.txt", "llama-3.3-70b-fp4", "b200", None),
        # V04: vLLM 0.10.2, Qwen3-235B FP8, 8 x L40S (PCIe, no NVLink), TP8 + EP8: 237,344 tokens.
        ("vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt", "qwen3-235b-a22b-fp8", "h200-sxm", "PCIe"),
    ],
    ids=["v35", "v37", "v04"],
)
def test_modeled_kv_tokens_within_two_percent_of_modern_vllm_logs(
    fixture: str, model_id: str, gpu: str, fabric: str | None
) -> None:
    assert abs(_modeled_kv_tokens_error(fixture, model_id, gpu, fabric)) <= 0.02


def test_modeled_sglang_row_s02_within_two_percent() -> None:
    # SGLang ~0.4.3, QwQ-32B (the Qwen2.5-32B architecture of deepseek-r1-distill-qwen-32b), TP4 on
    # 4 x L4: 46,611 tokens. The weights, RoPE cache and allocator rounding are modeled; the 0.86
    # GiB CUDA context is the row's own (free before load = device total - context).
    error = _modeled_kv_tokens_error(
        "sglang_s02_qwq_32b_4xl4_tp4.txt", "deepseek-r1-distill-qwen-32b", "h200-sxm", "PCIe"
    )
    assert abs(error) <= 0.02
