"""TensorRT-LLM's request overhead: one client's measured TTFT against capcliff's simulated one.

Run: python benchmarks/trtllm_request_overhead.py   (prints Markdown; asserts nothing)

NVIDIA/TensorRT-LLM issue #5929 (2025-07-10, TensorRT-LLM v0.21.0rc2 built from source) ran
LLMPerf against `trtllm-serve` with DeepSeek-R1 FP8 on 8 x H200 at TP 8 (EP none, 4 and 8) and
published the median TTFT of one client at 1,600 and 8,192 prompt tokens (600 output tokens).
capcliff simulates each point with the engine's profile and no request overhead; the measured
minus the simulated TTFT is what the client saw outside the engine's steps (the client, HTTP, the
chat template and tokenization, the hops between trtllm-serve's processes, the first chunk).
Where the prefill model is right that remainder does not depend on the prompt length: on H200 it
is 32-54 ms at both lengths, and the median of the six is the profile's default
(`profiles.TRTLLM_REQUEST_OVERHEAD_S`). The issue's B200 FP4 points are printed too and not used:
their remainder grows with the prompt (131 ms at 1,600 tokens, 291 ms at 8,192), a prefill that
ran slower than modelled at that release (the issue's subject), not a per-request cost. No row of
benchmarks/data or shared/reference chose anything here.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent.parent))
sys.path.insert(0, str(Path(__file__).parent))

from fidelity import resolve_rows

from capcliff.analysis.sweep.step_fit import modeled_fixed_s, point_bases

R1_FP8, R1_FP4 = "deepseek-ai/DeepSeek-R1-0528", "nvidia/DeepSeek-R1-0528-FP4"
# (name, checkpoint, hardware, parallelism, prompt tokens, median TTFT ms, used): the issue's
# "TTFT p50" columns at batch size 1, 600 output tokens.
POINTS = (
    ("H200 FP8 TP8", R1_FP8, "8x H200", "TP8", 1600, 164.63, True),
    ("H200 FP8 TP8", R1_FP8, "8x H200", "TP8", 8192, 515.83, True),
    ("H200 FP8 TP8 EP4", R1_FP8, "8x H200", "TP8 EP4", 1600, 134.36, True),
    ("H200 FP8 TP8 EP4", R1_FP8, "8x H200", "TP8 EP4", 8192, 370.07, True),
    ("H200 FP8 TP8 EP8", R1_FP8, "8x H200", "TP8 EP8", 1600, 124.11, True),
    ("H200 FP8 TP8 EP8", R1_FP8, "8x H200", "TP8 EP8", 8192, 352.81, True),
    ("B200 FP4 TP8", R1_FP4, "8x B200", "TP8", 1600, 161.04, False),
    ("B200 FP4 TP8", R1_FP4, "8x B200", "TP8", 8192, 394.11, False),
)
OUTPUT_TOKENS = 600
REQUESTS = 10  # one client, one request at a time: every request sees the same idle engine


def _record(point: tuple[str, str, str, str, int, float, bool]) -> dict[str, object]:
    """One of the issue's points in the reference CSV's columns (benchmarks/fidelity.py)."""
    name, model, hardware, parallelism, isl, ttft_ms, _ = point
    record: dict[str, object] = dict.fromkeys(
        ("duration_s", "request_throughput_req_s", "median_ttft_ms", "p99_ttft_ms",
         "mean_tpot_ms", "mean_itl_ms", "mean_e2e_latency_ms", "median_e2e_latency_ms",
         "total_or_other_throughput")
    )  # fmt: skip
    record.update(dict.fromkeys(("server_flags", "notes", "reliability"), ""))
    record.update(
        row_id=f"{name} / {isl}", model=model, hardware=hardware, num_gpus=8,
        parallelism=parallelism, engine="TensorRT-LLM", engine_version="0.21.0rc2",
        benchmark_tool="LLMPerf", dataset="LLMPerf", input_len=isl, output_len=OUTPUT_TOKENS,
        num_requests=REQUESTS, concurrency=1, output_throughput_tok_s=1.0, mean_ttft_ms=ttft_ms,
        source="NVIDIA/TensorRT-LLM#5929",
    )  # fmt: skip
    return record


def _table() -> pd.DataFrame:
    """The issue's points as rows benchmarks/fidelity.py resolves."""
    return pd.DataFrame([_record(p) for p in POINTS])


def residuals() -> list[tuple[str, int, float, float, bool]]:
    """(point, prompt tokens, measured, simulated TTFT seconds, used) of every point."""
    out = []
    # without any request overhead: the remainder is what is looked for
    no_overhead = resolve_rows(_table(), lambda _: {"request_overhead_ms": 0.0})
    for row, point in zip(no_overhead, POINTS, strict=True):
        assert row.dep is not None and row.layout is not None and row.point is not None, row.reason
        basis = point_bases(row.dep, row.layout, [row.point])[0]
        fixed_s, _ = modeled_fixed_s(row.dep, row.layout)
        modeled = basis.modeled or basis.fixed.combine(fixed_s, basis.variable, 1.0)
        out.append((point[0], point[4], point[5] / 1e3, modeled.ttft_s, point[6]))
    return out


def main() -> None:
    found = residuals()
    print("| point | prompt tokens | median TTFT measured | simulated | measured - simulated "
          "| used |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---|")
    for name, isl, measured, simulated, used in found:
        print(f"| {name} | {isl:,} | {measured * 1e3:.1f} ms | {simulated * 1e3:.1f} ms | "
              f"{(measured - simulated) * 1e3:.1f} ms | {'yes' if used else 'no'} |")  # fmt: skip
    kept = [m - s for _, _, m, s, used in found if used]
    print(f"\nmedian of the used points: {statistics.median(kept) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
