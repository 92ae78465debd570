"""The engine validation table of docs/validation.md: public start-up logs against capcliff.

Run: python benchmarks/engine_validation.py   (prints Markdown; nothing is asserted here, the tests
in tests/test_engines.py and tests/test_calibrate.py assert the rows with stated tolerances)
"""

from __future__ import annotations

from pathlib import Path

from capcliff.calibrate.compare import calibrate
from capcliff.calibrate.startup_logs import parse_startup_log
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.memory.budget import BudgetSettings
from capcliff.units import GIB, KVDType

LOGS = Path(__file__).parent.parent / "tests" / "fixtures" / "logs"

# (reference row, fixture, catalog model with the same architecture, KV dtype, the context length
# where the log omits it: Meta-Llama-3-8B's is 8,192)
ROWS = [
    ("V01", "vllm_v0_v01_llama31_8b_rtx3090_20k.txt", "llama-3.1-8b", KVDType.BF16, None),
    ("V02", "vllm_v0_v02_llama31_8b_rtx3090_29k_fails.txt", "llama-3.1-8b", KVDType.BF16, None),
    ("V11", "vllm_v0_v11_llama3_8b_table.txt", "llama-3.1-8b", KVDType.BF16, 8192),
    ("V24", "vllm_v0_v24_llama3_8b_a100_40gb.txt", "llama-3.1-8b", KVDType.BF16, None),
    ("V04", "vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt", "qwen3-235b-a22b", KVDType.BF16, None),
    ("V16", "vllm_v1_v16_llama31_8b_eager.txt", "llama-3.1-8b", KVDType.BF16, None),
    ("S02", "sglang_s02_qwq_32b_4xl4_tp4.txt", "deepseek-r1-distill-qwen-32b", KVDType.BF16, None),
    ("T01", "trtllm_t01_llama31_8b_rtx5090.txt", "llama-3.1-8b", KVDType.FP8, None),
]


def _cell(figures: dict[str, tuple[float, float, float]], name: str, digits: int) -> str:
    if name not in figures:
        return "- | - | -"
    logged, modeled, calibrated = figures[name]
    err = (modeled - logged) / logged * 100
    return f"{logged:,.{digits}f} | {modeled:,.{digits}f} ({err:+.1f} %) | {calibrated:,.{digits}f}"


def main() -> None:
    print(
        "| row | engine | layout | KV GiB: logged | modeled | calibrated | tokens: logged | "
        "modeled | calibrated |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for row, name, model_id, kv, length in ROWS:
        log = parse_startup_log((LOGS / name).read_text())
        result = calibrate(
            log,
            get_model(model_id),
            get_hardware("h200-sxm"),
            base=BudgetSettings(),
            kv_dtype=kv,
            max_model_len=length,
        )
        figures = {f.name: (f.logged, f.predicted, f.calibrated) for f in result.figures}
        if "kv_tokens" not in figures and "gpu_blocks" in figures:
            logged, modeled, calibrated = figures["gpu_blocks"]
            figures["kv_tokens"] = (logged * 16, modeled * 16, calibrated * 16)
        print(
            f"| {row} | {result.engine.value} | {result.layout.name} | "
            f"{_cell(figures, 'kv_cache_gib', 2)} | {_cell(figures, 'kv_tokens', 0)} |"
        )
    print()
    print("Blocks from the logged KV size (checks bytes per token and block rounding):")
    for row, kv_gib, per_token, block, logged in (
        ("V01", 3.81, 131_072, 16, 1952),
        ("V24", 11.12, 131_072, 16, 5691),
        ("V16", 85.79, 131_072, 16, 43_925),
        ("V04", 11_423_138_508 / GIB, 48_128, 16, 14_834),
    ):
        low = int((kv_gib - 0.005) * GIB) // (block * per_token)
        high = int((kv_gib + 0.005) * GIB) // (block * per_token)
        verdict = "ok" if low <= logged <= high else "MISS"
        print(
            f"- {row}: {kv_gib:.2f} GiB / ({block} x {per_token:,} B) -> {low:,}-{high:,} "
            f"blocks; logged {logged:,}: {verdict}"
        )


if __name__ == "__main__":
    main()
