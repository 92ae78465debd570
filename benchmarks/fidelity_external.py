"""capcliff against serving results that are not in shared/reference: other concurrencies and
output lengths of deployments the reference rows describe, checked with the same rules
(uncalibrated) and with step terms fitted on the reference rows only (calibrated).

Run: python benchmarks/fidelity_external.py   (prints a Markdown table; asserts nothing)

Source of the measured figures: github.com/dstackai/benchmarks branch deepseek-r1-benchmark,
Deepseek-R1/raw_data/online_results.csv @7f37e6697725e58dd09b9ef190b62ce19f01d45e, the rows
`h200,sglang,random,,128,,3200,<osl>,1,...` (SGLang 0.4.3.post2, DeepSeek-R1 on 8 x H200, TP 8 +
DP attention, 500 requests, random_range_ratio 1): the same benchmark run as rows B02-B06 of
shared/reference/serving_benchmarks.csv, at 128 clients and 800-6,400 output tokens, none of which
the reference CSV holds.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import fidelity

from capcliff.analysis.sweep.step_fit import fit_bases, modeled_fixed_s, point_bases
from capcliff.calibrate.benchmarks import BenchmarkPoint

# (output tokens, output tok/s, mean TPOT ms, mean TTFT ms) at 128 clients, 3,200 input tokens
SGLANG_043_C128 = (
    (800, 802.5429047, 110.7541571, 36230.47317),
    (1600, 1021.106441, 100.4008092, 35417.987),
    (3200, 1169.812998, 96.69052681, 32593.70738),
    (6400, 1196.576929, 99.47912898, 31927.771),
)
REFERENCE_ROWS = ("B02", "B03", "B04", "B05", "B06")  # the same deployment, in the reference CSV


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def main() -> None:
    rows = {r.row_id: r for r in fidelity.serving_rows() if r.row_id in REFERENCE_ROWS}
    base = rows["B02"]
    assert base.dep is not None and base.layout is not None and base.point is not None
    fitted_on = [rows[k].point for k in REFERENCE_ROWS if rows[k].point is not None]
    outside = [
        replace(
            base.point,
            row_id=f"c128/osl{osl}",
            concurrency=128,
            output_len=osl,
            num_requests=500,
            output_throughput_tok_s=tput,
            mean_tpot_s=tpot / 1e3,
            mean_ttft_s=ttft / 1e3,
        )
        for osl, tput, tpot, ttft in SGLANG_043_C128
    ]
    points: list[BenchmarkPoint] = [p for p in fitted_on if p is not None] + outside
    bases = point_bases(base.dep, base.layout, points)
    fixed0, label = modeled_fixed_s(base.dep, base.layout)
    n = len(fitted_on)
    fit = fit_bases(bases[:n], fixed0=fixed0, label=label, predict=bases[n:])
    print(f"SGLang 0.4.3, DeepSeek-R1, 8 x H200, dpa8; profile: {label}")
    print(f"calibrated: fixed_s {fit.fixed_s * 1e3:.2f} ms, scale {fit.scale:.3f} (fitted on "
          f"{', '.join(REFERENCE_ROWS)} only)\n")  # fmt: skip
    print("| point | tok/s measured | uncalibrated | calibrated | TPOT ms | uncalibrated | "
          "calibrated | TTFT s | uncalibrated |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in fit.points:
        m, c = p.modeled, p.calibrated
        tput_m, tput_c = p.throughput_error(m), p.throughput_error(c)
        tpot_m, tpot_c = p.tpot_error(m), p.tpot_error(c)
        assert None not in (tput_m, tput_c, tpot_m, tpot_c) and p.point.mean_ttft_s
        print(
            f"| {p.point.row_id} | {p.point.output_throughput_tok_s:,.1f} | "
            f"{1 / m.s_per_token:,.1f} ({_pct(tput_m)}) | {1 / c.s_per_token:,.1f} "  # type: ignore[arg-type]
            f"({_pct(tput_c)}) | {(p.point.mean_tpot_s or 0) * 1e3:.1f} | {_pct(tpot_m)} | "  # type: ignore[arg-type]
            f"{_pct(tpot_c)} | {p.point.mean_ttft_s:.1f} | {m.ttft_s:.1f} "  # type: ignore[arg-type]
            f"({_pct(m.ttft_s / p.point.mean_ttft_s - 1)}) |"
        )


if __name__ == "__main__":
    main()
