"""Attention DP before and after lockstep: SGLang TP8 + DP attention serving DeepSeek-R1 on
8 x H200 (shared/reference/serving_benchmarks.csv rows B02-B06), uncalibrated.

Run: python benchmarks/attention_dp.py   (prints the Markdown table of docs/validation.md)

"before": the model capcliff had for attention-DP layouts until it simulated them in lockstep
(`dp8-ep8` as eight independent replicas, each reading only the experts its own tokens touch, no
token exchange); "after": the layout the row ran (`dpa8`: SGLang `--tp 8 --enable-dp-attention`,
experts split 8 ways in width, tokens gathered), the ranks in lockstep. Both under the engine's
step-time profile, nothing fitted to these rows.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from capcliff.analysis.deployment import Deployment, resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.evaluate.solver import config_at
from capcliff.analysis.sweep.step_fit import point_requests
from capcliff.calibrate.benchmarks import BenchmarkPoint, DeploymentFilter, read_benchmark_file
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.simulate import simulate

REFERENCE = Path("/work/shared/reference/serving_benchmarks.csv")


def independent_replicas(steps: StepTimeModel) -> StepTimeModel:
    """The pre-lockstep model: the shared MoE layers folded back into one replica's own step."""
    moe = steps.moe
    assert moe is not None
    return replace(
        steps,
        moe=None,
        expert_bytes=moe.expert_bytes,
        expert_choice_fraction=moe.expert_choice_fraction,
        flops_per_token=steps.flops_per_token + moe.expert_flops_per_token,
    )


def predict(
    dep: Deployment, layout: Layout, point: BenchmarkPoint, *, old: bool
) -> tuple[float, float]:
    """(mean TPOT s, output tok/s) of `point` simulated on `layout`."""
    requests = point_requests(point)
    length = dep.context_length(requests)
    capacity, steps = replica_models(dep, dep.memory(layout, length), {})
    if old:
        steps = independent_replicas(steps)
    config = config_at(dep.sim_config(length), point.concurrency, layout.dp)
    result = simulate(requests, steps, capacity, config, dp=layout.dp)
    return result.tpot.mean, float(result.output_tokens.sum()) / result.makespan_s


def main() -> None:
    keep = DeploymentFilter("deepseek-ai/DeepSeek-R1", "h200-sxm", 8, "dpa8", "sglang")
    points = sorted(read_benchmark_file(REFERENCE, keep), key=lambda p: p.concurrency)
    dep = resolve(
        get_model("deepseek-r1"), get_hardware("h200-sxm"), settings_of({"engine": "sglang"})
    )
    print(
        "| row | clients | TPOT measured | before (dp8-ep8 apart) | after (dpa8 lockstep) "
        "| tok/s measured | before | after |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for p in points:
        assert p.mean_tpot_s is not None and p.output_throughput_tok_s is not None
        b_tpot, b_tok = predict(dep, parse_layout("dp8-ep8"), p, old=True)
        a_tpot, a_tok = predict(dep, parse_layout("dpa8"), p, old=False)
        m_tpot, m_tok = p.mean_tpot_s, p.output_throughput_tok_s

        def err(x: float, m: float) -> str:
            return f"{(x / m - 1) * 100:+.0f} %"

        print(
            f"| {p.row_id} | {p.concurrency} | {m_tpot * 1e3:.1f} ms "
            f"| {b_tpot * 1e3:.1f} ms ({err(b_tpot, m_tpot)}) "
            f"| {a_tpot * 1e3:.1f} ms ({err(a_tpot, m_tpot)}) | {m_tok:.0f} "
            f"| {b_tok:.0f} ({err(b_tok, m_tok)}) | {a_tok:.0f} ({err(a_tok, m_tok)}) |"
        )


if __name__ == "__main__":
    main()
