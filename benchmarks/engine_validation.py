"""The engine validation table of docs/validation.md: public start-up logs against capcliff.

Run: python benchmarks/engine_validation.py   (prints Markdown; nothing is asserted here, the tests
in tests/test_engines.py, tests/test_weights.py and tests/test_calibrate.py assert the rows with
stated tolerances)
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from capcliff.calibrate.compare import calibrate
from capcliff.calibrate.startup_logs import parse_startup_log
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.budget import BudgetSettings
from capcliff.units import GIB, KVDType

LOGS = Path(__file__).parent.parent / "tests" / "fixtures" / "logs"


class Row(NamedTuple):
    """A reference row: its fixture, the catalog model (architecture or checkpoint) and GPU."""

    row: str
    fixture: str
    model_id: str
    gpu: str
    kv_dtype: KVDType = KVDType.BF16
    max_model_len: int | None = None  # where the log omits it (Meta-Llama-3-8B: 8,192)
    fabric: str | None = None  # scale-up fabric where the log's GPU is not in the catalog


# The log states the total memory where the GPU is not in the catalog; `fabric` then says whether
# NCCL can use NVLink SHARP (it cannot on PCIe-only L40S or RTX cards).
ROWS = [
    Row("V01", "vllm_v0_v01_llama31_8b_rtx3090_20k.txt", "llama-3.1-8b", "h200-sxm", fabric="PCIe"),
    Row("V02", "vllm_v0_v02_llama31_8b_rtx3090_29k_fails.txt", "llama-3.1-8b", "h200-sxm",
        fabric="PCIe"),
    Row("V11", "vllm_v0_v11_llama3_8b_table.txt", "llama-3.1-8b", "h200-sxm", max_model_len=8192),
    Row("V24", "vllm_v0_v24_llama3_8b_a100_40gb.txt", "llama-3.1-8b", "h200-sxm"),
    Row("V04", "vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt", "qwen3-235b-a22b-fp8", "h200-sxm",
        fabric="PCIe"),
    Row("V16", "vllm_v1_v16_llama31_8b_eager.txt", "llama-3.1-8b", "h200-sxm"),
    Row("V35", "vllm_v1_v35_dsr1_0528_fp4_4xb200_tp4_ep4.txt", "deepseek-r1-0528-fp4", "b200"),
    Row("V37", "vllm_v1_v37_llama33_70b_fp4_b200_tp1.txt", "llama-3.3-70b-fp4", "b200"),
    Row("S02", "sglang_s02_qwq_32b_4xl4_tp4.txt", "deepseek-r1-distill-qwen-32b", "h200-sxm",
        fabric="PCIe"),
    Row("T01", "trtllm_t01_llama31_8b_rtx5090.txt", "llama-3.1-8b", "h200-sxm", KVDType.FP8,
        fabric="PCIe"),
]  # fmt: skip


def _hardware(row: Row) -> HardwareSpec:
    spec = get_hardware(row.gpu)
    return spec if row.fabric is None else spec.model_copy(update={"scaleup_fabric": row.fabric})


def _cell(figures: dict[str, tuple[float, float, float]], name: str, digits: int) -> str:
    if name not in figures:
        return "- | - | -"
    logged, modeled, calibrated = figures[name]
    err = (modeled - logged) / logged * 100
    return f"{logged:,.{digits}f} | {modeled:,.{digits}f} ({err:+.1f} %) | {calibrated:,.{digits}f}"


def main() -> None:
    print(
        "| row | engine | model | layout | weights GiB: logged | modeled | KV GiB: logged | "
        "modeled | calibrated | tokens: logged | modeled | calibrated |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in ROWS:
        log = parse_startup_log((LOGS / row.fixture).read_text())
        result = calibrate(
            log,
            get_model(row.model_id),
            _hardware(row),
            base=BudgetSettings(),
            kv_dtype=row.kv_dtype,
            max_model_len=row.max_model_len,
        )
        figures = {f.name: (f.logged, f.predicted, f.calibrated) for f in result.figures}
        if "kv_tokens" not in figures and "gpu_blocks" in figures:
            logged, modeled, calibrated = figures["gpu_blocks"]
            figures["kv_tokens"] = (logged * 16, modeled * 16, calibrated * 16)
        weights = figures.get("weights_gib")
        weight_cells = "- | -"
        if weights is not None:
            err = (weights[1] - weights[0]) / weights[0] * 100
            weight_cells = f"{weights[0]:.2f} | {weights[1]:.2f} ({err:+.1f} %)"
        print(
            f"| {row.row} | {result.engine.value} | {row.model_id} | {result.layout.name} | "
            f"{weight_cells} | {_cell(figures, 'kv_cache_gib', 2)} | "
            f"{_cell(figures, 'kv_tokens', 0)} |"
        )
    print()
    print("Blocks from the logged KV size (checks bytes per token and block rounding):")
    for name, kv_gib, per_token, block, logged in (
        ("V01", 3.81, 131_072, 16, 1952),
        ("V24", 11.12, 131_072, 16, 5691),
        ("V16", 85.79, 131_072, 16, 43_925),
        ("V04", 11_423_138_508 / GIB, 48_128, 16, 14_834),
        ("V35", 62.24, 61 * 576, 32, 1_901_888 // 32),
    ):
        low = int((kv_gib - 0.005) * GIB) // (block * per_token)
        high = int((kv_gib + 0.005) * GIB) // (block * per_token)
        verdict = "ok" if low <= logged <= high else "MISS"
        print(
            f"- {name}: {kv_gib:.2f} GiB / ({block} x {per_token:,} B) -> {low:,}-{high:,} "
            f"blocks; logged {logged:,}: {verdict}"
        )


if __name__ == "__main__":
    main()
