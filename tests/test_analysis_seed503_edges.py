"""Edges the analysis mutation sample of seed 503 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 503)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings, settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.sim.traffic.workload import Requests

FLASHINFER_LINE = "dense block-FP8 GEMM FLOPs on FlashInfer's measured line (sglang PR #13528)"


@pytest.mark.parametrize(
    ("model", "named"),
    [
        ("deepseek-r1", True),  # FP8 with 128 x 128 block scales: the line prices its GEMMs
        ("llama-3.3-70b-fp8", False),  # FP8 per channel (FP8_DYNAMIC): no block scales
        ("llama-3.1-8b", False),  # BF16
    ],
)
def test_the_flashinfer_gemm_line_is_named_only_for_block_fp8_linears(
    model: str, named: bool
) -> None:
    from capcliff.analysis.evaluate.replica_models import step_label

    # SGLang with --fp8-gemm-backend flashinfer_trtllm on a B200 (sm100): FlashInfer's measured
    # line prices the dense GEMMs only where they are block-FP8 (perf/efficiency.py), and the
    # label says so only there.
    settings = settings_of({"engine": "sglang", "fp8_gemm_backend": "flashinfer_trtllm"})
    dep = resolve(get_model(model), get_hardware("b200"), settings)
    assert (FLASHINFER_LINE in step_label(dep)) is named


def _closed_loop(n: int, clients: int) -> Requests:
    """n requests of 40-token prompts and 20 tokens out from `clients` users, 0.1 s of think
    time; each user's first request at 0.05 s x its number."""
    outputs = np.full(n, 20, dtype=np.int64)
    first = np.where(np.arange(n) < clients, np.arange(n) * 0.05, np.nan)
    return Requests(
        np.full(n, 40, dtype=np.int64), outputs, outputs, first,
        (np.arange(n) % clients).astype(np.int64), closed_loop=True, think_s=np.full(n, 0.1),
    )  # fmt: skip


def test_a_closed_loop_without_resume_runs_every_round_from_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.disagg import pools as disagg_pools

    # `resume=False` is the from-zero reference of the resumed rounds (run_disagg's docstring):
    # it must build no ResumedRounds, and it gives the resumed loop's finishes. An open-loop run
    # has no rounds to resume.
    built: list[Requests] = []
    real = disagg_pools.ResumedRounds

    def spy(requests: Requests) -> Any:
        built.append(requests)
        return real(requests)

    monkeypatch.setattr(disagg_pools, "ResumedRounds", spy)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings())
    pools = disagg_pools.pools_of(dep, disagg_pools.parse_disagg("1p:tp1,1d:tp1"), 1024)
    requests = _closed_loop(12, 2)
    zero = disagg_pools.run_disagg(dep, pools, requests, resume=False)
    assert built == []
    resumed = disagg_pools.run_disagg(dep, pools, requests)
    assert len(built) == 1
    np.testing.assert_allclose(resumed.serving.e2e_s, zero.serving.e2e_s, rtol=0, atol=1e-9)
    open_loop = Requests(requests.input_tokens, requests.output_tokens, requests.output_tokens,
                         np.arange(12) * 0.05)  # fmt: skip
    disagg_pools.run_disagg(dep, pools, open_loop)
    assert len(built) == 1


def test_the_aggregated_kv_headroom_at_a_rate_is_the_share_its_run_left_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from typer.testing import CliRunner

    from capcliff.analysis.disagg import compare
    from capcliff.cli import app

    # At an offered rate the aggregated deployment is measured in its steady state
    # (`aggregated_online`); its KV headroom is the share of the KV cache that run never
    # filled: 1 - its peak utilisation, a share in [0, 1).
    peaks: list[float] = []
    real = compare.aggregated_steady

    def steady(*args: Any, **kwargs: Any) -> Any:
        result, state = real(*args, **kwargs)
        peaks.append(result.peak_kv_utilization)
        return result, state

    monkeypatch.setattr(compare, "aggregated_steady", steady)
    out = CliRunner().invoke(app, [
        "plan", "deepseek-r1-distill-llama-8b", "--gpus", "2", "--disagg", "--isl", "512",
        "--osl", "64", "--arrival", "poisson", "--rate", "5", "--num-requests", "24",
        "--slo-ttft", "2", "--slo-tpot", "0.1", "--format", "json", "--jobs", "1",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    headroom = json.loads(out.output)["aggregated"]["kv_headroom"]
    assert len(peaks) == 1 and 0 < peaks[0] < 1
    assert headroom == pytest.approx(1 - peaks[0], abs=1e-9)
    assert 0 < headroom < 1
