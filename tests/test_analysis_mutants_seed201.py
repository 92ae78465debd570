"""Edges the seed-201 mutation sample (`benchmarks/mutation.py --packages analysis --seed 201`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

import capcliff.analysis.sweep.report as report
from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.replica_models import deployment_profile, replica_models
from capcliff.analysis.evaluate.solver import sweep
from capcliff.analysis.sweep.failure import past_cliff
from capcliff.analysis.sweep.report import SweepPlan, _grown
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.traffic.workload import Arrival, Fixed, Requests, WorkloadSpec, generate_requests
from tests.simtools import toy_model


def _r1_on_b200(backend: str | None) -> Any:
    settings = settings_of({"engine": "trtllm", "moe_backend": backend})
    return resolve(get_model("deepseek-r1"), get_hardware("b200"), settings)


def test_the_moe_backend_given_is_the_profiles_and_none_leaves_the_engines_default() -> None:
    # --moe-backend CUTLASS is stored lower-cased and priced by the profile; without it the
    # profile keeps its own default (no backend named)
    assert deployment_profile(_r1_on_b200("CUTLASS"), {})[0].moe_backend == "cutlass"
    assert deployment_profile(_r1_on_b200(None), {})[0].moe_backend is None


def test_a_moe_backend_without_measured_rows_prices_the_moe_layers_by_the_fitted_lines() -> None:
    # TensorRT-LLM on Blackwell reads the trtllm-gen rows by default; CUTLASS has no measured
    # rows there, so its replica's steps carry no MoE table (the fitted lines price the layer)
    for backend, has_table in ((None, True), ("CUTLASS", False)):
        dep = _r1_on_b200(backend)
        memory = dep.memory(parse_layout("tp8"), 8192)
        assert memory.fits
        steps = replica_models(dep, memory)[1]
        assert (steps.moe_table is not None) is has_table


def test_past_cliff_mean_wait_is_littles_law_below_one_request_a_second() -> None:
    # samples at 0..4 s wait 0, 4, 4, 2, 0 requests: mean 2.0; 2 requests finishing over the
    # 4 s makespan are 0.5/s, so by Little's law each waits 2.0 / 0.5 = 4.0 s
    waiting = dict(time_s=np.arange(5.0), waiting=np.array([0.0, 4.0, 4.0, 2.0, 0.0]))
    figures = dict(requests_per_s=0.5, scheduled_tokens=1_000, total_recomputed_tokens=0)
    run = SimpleNamespace(
        first_saturation=(0, 1.0), e2e_s=np.ones(2), series=SimpleNamespace(**waiting),
        makespan_s=4.0, reuse=None, total_preemptions=0, blocked_s=0.0, **figures,
    )  # fmt: skip
    found = past_cliff(cast(SimResult, run))
    assert found is not None
    assert found.mean_wait_s == 4.0


def _poisson(n: int) -> Requests:
    spec = WorkloadSpec(
        num_requests=n, input=Fixed(32), output=Fixed(8), arrival=Arrival.POISSON,
        rate_per_s=50.0,
    )  # fmt: skip
    return generate_requests(spec, np.random.default_rng(3))


def test_one_replicas_extended_run_reads_its_first_checkpoint_at_the_first_doubling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the first sample of 100 requests did not settle, so reading the extended run at 100
    # finished requests again would repeat it: the first checkpoint is the first doubling's,
    # 2 x 100 = 200, on the largest sample, 100 x 2^3 = 800
    monkeypatch.setattr(report, "needs_more", lambda result, *, open_loop: True)
    firsts: list[tuple[int, int]] = []

    def extended(run: Any, sample: Requests, first: int, *, open_loop: bool) -> Any:
        firsts.append((first, len(sample)))
        return run.advance(len(sample)).result

    monkeypatch.setattr(report, "_extended", extended)
    capacity = KVCapacity(
        blocks=400, block_size=16, kv_bytes_per_token=1000, host_link_bytes_per_s=1e9,
        host_kv_tokens=0,
    )  # fmt: skip
    config = SimConfig(max_num_seqs=8, max_num_batched_tokens=512)
    plan = SweepPlan(
        layouts=(), workloads=(("x", _poisson(100)),), concurrencies=(4,), workload_label="x",
        seed=3, redraw=lambda n: (("x", _poisson(n)),),
    )  # fmt: skip
    first = sweep(plan.workloads[0][1], toy_model(), capacity, config, (4,), dp=1)
    _grown(first, plan.workloads[0][1], "x", plan, (toy_model(), capacity, config, 1))
    assert firsts == [(200, 800)]


@pytest.mark.parametrize(
    ("engine", "dp", "flags"),
    [
        # vLLM: the size over the replica's ranks, in GiB
        ("vllm", 1, ["--enable-prefix-caching", "--kv-offloading-backend native",
                     "--kv-offloading-size 128"]),
        # SGLang at dp 2 on 4 GPUs: 2 ranks a replica, 128 GiB / 2 / 1e9 = 68.7 -> 69 GB a rank
        ("sglang", 2, ["--enable-hierarchical-cache", "--hicache-size 69"]),
    ],
)  # fmt: skip
def test_the_advice_reports_the_recommended_sizes_own_hit_rate_and_ttft(
    monkeypatch: pytest.MonkeyPatch, engine: str, dp: int, flags: list[str]
) -> None:
    from capcliff.analysis.evaluate import replica_models as models
    from capcliff.analysis.plan import reuse_advice as module
    from capcliff.memory.budget import EngineName
    from capcliff.sim.config import PREFIX_CACHING_POLICIES
    from capcliff.units import GIB

    # (HBM hit rate, TTFT p99) by offload size; caching off hits nothing
    figures = {0: (0.4, 2.0), 64 * GIB: (0.5, 1.8), 128 * GIB: (0.61, 1.45), 256 * GIB: (0.62, 1.4)}

    def simulate(requests: Any, model: Any, cap: Any, config: Any, dp: int) -> Any:
        hit, ttft = figures[cap.tiers[0] if cap.tiers else 0]
        return SimpleNamespace(
            reuse=None, prefix_cache_hit_rate=hit if config.prefix_caching else None,
            ttft=SimpleNamespace(p99=ttft if config.prefix_caching else 3.0),
            output_tokens_per_s=100.0, total_preemptions=0,
        )  # fmt: skip

    def merged(obj: Any, **changes: Any) -> Any:
        return SimpleNamespace(**{**vars(obj), **changes})

    monkeypatch.setattr(models, "replica_models", lambda dep, memory: (SimpleNamespace(), None))
    monkeypatch.setattr(module, "replace", merged)
    monkeypatch.setattr(module, "simulate", simulate)
    monkeypatch.setattr(
        module, "offload_sizes", lambda dep, memory: [64 * GIB, 128 * GIB, 256 * GIB]
    )
    ranks: list[int] = []

    def tiers(sizes: dict[str, int], *args: Any, gpus_per_replica: int, **kw: Any) -> Any:
        ranks.append(gpus_per_replica)
        return (sizes["cpu"],)

    monkeypatch.setattr(module, "offload_tiers", tiers)
    # the stand-in requests share content: every size is simulated
    monkeypatch.setattr(module, "content_is_private", lambda requests: False)
    dep: Any = SimpleNamespace(settings=SimpleNamespace(engine=EngineName(engine)), hardware=None)
    memory: Any = SimpleNamespace(
        layout=SimpleNamespace(dp=dp, gpus=2 * dp), kv_bytes_per_token_per_gpu=1000
    )
    config: Any = SimpleNamespace(policy=next(iter(PREFIX_CACHING_POLICIES)))
    advice = module.reuse_advice(dep, memory, SimpleNamespace(has_content=True), config)  # type: ignore[arg-type]
    assert advice is not None
    # the best size gains 0.62 - 0.4 = 0.22; 95 % of it is 0.209: 128 GiB (0.21, TTFT 1.45 s
    # within 10 % of 1.4 s) is the smallest size that reaches it, 64 GiB (0.1) is not
    assert advice.recommended_offload_bytes == 128 * GIB
    assert advice.hit_rate_without == 0.4
    assert advice.hit_rate_with == 0.61
    # 1.45 / 2.0 - 1 = -27.5 %
    assert advice.ttft_p99_change == pytest.approx(-0.275)
    assert advice.flags == flags
    # each offload size's tiers are sized for a replica's 2 GPUs
    assert ranks == [2, 2, 2]


def cap_point(cap: int, rps: float, requests: int = 100) -> Any:
    """A cap that saturates at `rps` requests/s on `requests` requests, without preempting."""
    from capcliff.analysis.evaluate.capacity import CapPoint

    result = SimpleNamespace(total_preemptions=0, finish_s=np.ones(requests))
    return CapPoint(
        cap, cast(Any, SimpleNamespace(throughput_rps=rps)), cast(Any, result), requests
    )


def within_slo(points: tuple[Any, ...]) -> Any:
    """`_within_slo` over `points` (the last the top cap), TTFT 0.5 s and TPOT 10 ms limits."""
    from capcliff.analysis.evaluate.capacity import _within_slo
    from capcliff.analysis.evaluate.solver import Slo

    workload: Any = SimpleNamespace(at_rate=None, mean_output_tokens=lambda: 100.0)
    replica: Any = SimpleNamespace(config=None, run=None, paused=None)
    return _within_slo(replica, workload, Slo(ttft_s=0.5, tpot_s=0.01), points, points[-1], 0, True)


def _searched_caps(monkeypatch: pytest.MonkeyPatch, tpot_at_cap4: float) -> Any:
    """`_within_slo` over caps 8 (10/s at saturation, searched first) and 4 (6/s), whose light
    loads have TTFT p99 1 s and 2 s and TPOT p99 50 ms and `tpot_at_cap4`; no rate passes."""
    from capcliff.analysis.evaluate import capacity
    from capcliff.analysis.evaluate.rate_search import RatePoint

    states = {8: (1.0, 0.05), 4: (2.0, tpot_at_cap4)}

    def highest_rate(probes: Any, cap: int, sat: float, size: int) -> Any:
        ttft, tpot = states[cap]
        light = SimpleNamespace(ttft_p99_s=ttft, tpot_p99_s=tpot)
        return None, RatePoint(cap, 0.1 * sat, cast(Any, light), False)

    monkeypatch.setattr(capacity, "highest_rate", highest_rate)
    return within_slo((cap_point(4, 6.0), cap_point(8, 10.0)))


def test_the_least_latency_reported_is_the_light_load_with_the_lowest_tpot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # cap 4's light load decodes faster (40 ms < 50 ms): its TTFT (2 s) and TPOT are reported
    got = _searched_caps(monkeypatch, 0.04)
    assert (got.best_ttft_p99_s, got.best_tpot_p99_s) == (2.0, 0.04)
    assert got.sustained_rps == 0.0


def test_a_tie_in_light_load_tpot_keeps_the_cap_searched_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # both light loads decode at 50 ms: the first searched (cap 8, the higher saturation
    # throughput) keeps its figures; a later cap replaces them only with a strictly lower TPOT
    got = _searched_caps(monkeypatch, 0.05)
    assert (got.best_ttft_p99_s, got.best_tpot_p99_s) == (1.0, 0.05)
