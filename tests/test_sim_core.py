"""The compiled event loop (`capcliff.sim.core`): used only while built from the current source,
and, where it is built, bit-identical to the pure-Python loop."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.pools import parse_disagg, pools_of, run_disagg
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.sim import core
from capcliff.sim.config import PreemptionMode
from capcliff.sim.loop.landed import LandedReplicaSim
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.prefill_pool import PrefillReplicaSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy, simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import POLICIES, PREEMPTING_POLICIES, pressure_case, random_case, toy_model

COMPILED = core.load_compiled()
# CI sets this after building the compiled core: then a missing or stale core fails the tests
# below instead of skipping them (a build that produced nothing must not pass as "both agree").
REQUIRED = os.environ.get("CAPCLIFF_REQUIRE_COMPILED", "") == "1"
NEEDS_CORE = pytest.mark.skipif(
    COMPILED is None and not REQUIRED, reason="no compiled core built from the current source"
)


def test_a_compiled_core_is_there_when_required() -> None:
    if not REQUIRED:
        pytest.skip("CAPCLIFF_REQUIRE_COMPILED is not 1")
    assert COMPILED is not None, (
        "CAPCLIFF_REQUIRE_COMPILED=1 but no compiled core built from the current source "
        "(build it: CAPCLIFF_COMPILE=1 pip install -e '.[dev]', or python hatch_build.py)"
    )


def _fake_core(root: Path, package: str, digest: str) -> None:
    """A stand-in compiled package: a module per core module, each with `SOURCE_SHA256`."""
    folder = root / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for name in core.CORE_MODULES:
        (folder / f"{name}.py").write_text(f"SOURCE_SHA256 = {digest!r}\nReplicaSim = {name!r}\n")


def test_a_stale_core_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Built from other sources (a digest that is not the current one): the loader refuses it,
    # and accepts the same package when the digest matches.
    _fake_core(tmp_path, "stale_core", "0" * 64)
    _fake_core(tmp_path, "fresh_core", core.source_digest())
    monkeypatch.syspath_prepend(str(tmp_path))
    assert core.load_compiled("stale_core") is None
    fresh = core.load_compiled("fresh_core")
    assert fresh is not None and fresh.ReplicaSim == "replica"
    assert core.load_compiled("no_such_core") is None  # never built: no error, no core
    for name in list(sys.modules):
        if name.split(".")[0] in ("stale_core", "fresh_core"):
            del sys.modules[name]


def test_the_digest_follows_every_source(tmp_path: Path) -> None:
    here = Path(core.__file__).parent.parent  # the capcliff package
    copy = tmp_path / "capcliff"
    shutil.copytree(here, copy, ignore=shutil.ignore_patterns("__pycache__", "_core"))
    before = core.source_digest(copy)
    assert before == core.source_digest()
    # one byte more in a core module, or in a module the loop imports: another digest
    edited = [f"sim/loop/{name}.py" for name in core.CORE_MODULES] + ["perf/step_time.py"]
    for rel in edited:
        path = copy / rel
        text = path.read_bytes()
        path.write_bytes(text + b"\n")
        assert core.source_digest(copy) != before, rel
        path.write_bytes(text)
    assert core.source_digest(copy) == before


def test_the_switch_forces_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(core.ENV_SWITCH, "python")
    assert core.core_name() == "python"
    assert core.replica_class() is ReplicaSim
    assert core.landed_class() is LandedReplicaSim
    assert core.prefill_class() is PrefillReplicaSim
    assert core.lockstep_class() is LockstepSim
    monkeypatch.delenv(core.ENV_SWITCH)
    assert core.core_name() == ("python" if COMPILED is None else "compiled")
    # the two-pool classes come from the same core as the replica
    compiled = COMPILED is not None
    assert (core.landed_class() is not LandedReplicaSim) == compiled
    assert (core.lockstep_class() is not LockstepSim) == compiled
    assert issubclass(core.landed_class(), core.replica_class())


def test_the_compiled_group_is_closed() -> None:
    # A module the loop calls with a replica (or a planned step) must be compiled with it: its
    # annotations would name the pure-Python classes, and mypyc rejects the build (which then
    # falls back to pure Python without a word).
    capcliff = Path(core.__file__).parent.parent.parent
    loop = capcliff / Path(*core.CORE_PACKAGE.split("."))
    for name in core.CORE_MODULES:
        text = (loop / f"{name}.py").read_text()
        for imported in re.findall(r"from (capcliff\.sim\.[\w.]+) import", text):
            if imported.rsplit(".", 1)[-1] not in core.CORE_MODULES:
                other = (capcliff / Path(*imported.split("."))).with_suffix(".py").read_text()
                assert "ReplicaSim" not in other and "PlannedStep" not in other, (name, imported)


def _same(a: object, b: object) -> bool:
    """Every field equal, bit for bit (NaN equal to NaN)."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray)
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple)
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and repr(a) == repr(b)


@NEEDS_CORE
def test_compiled_and_pure_python_agree_bit_for_bit() -> None:
    assert COMPILED is not None
    compiled = COMPILED.ReplicaSim
    modes = (PreemptionMode.RECOMPUTE, PreemptionMode.SWAP)
    cases = []
    for seed in range(3):
        for mode in modes:
            for policy in POLICIES:
                for arrival in ("batch", "poisson", "clients"):
                    requests, capacity, config = random_case(seed, policy, mode, arrival)
                    cases.append((requests, capacity, config, make_policy(config, requests)))
            cases += [pressure_case(seed, policy, mode) for policy in PREEMPTING_POLICIES]
    for requests, capacity, config, rule in cases:
        pure = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
        fast = compiled(requests, toy_model(), capacity, config, rule).run()
        assert _same(pure, fast), (config, len(requests))


def _both_cores(
    monkeypatch: pytest.MonkeyPatch, work: Callable[[], object]
) -> tuple[object, object]:
    """(`work()` on the pure-Python classes, `work()` on the compiled ones)."""
    monkeypatch.setenv(core.ENV_SWITCH, "python")
    pure = work()
    monkeypatch.delenv(core.ENV_SWITCH)
    assert core.core_name() == "compiled"
    return pure, work()


def _landed_runs() -> list[object]:
    """Decode-pool replicas on the small random cases (each output one token longer: a landed
    request has its first token already) and on pressure cases with a third fewer blocks."""
    landed = core.landed_class()
    out: list[object] = []
    cases = [
        random_case(seed, p, PreemptionMode.RECOMPUTE, "poisson")
        for seed in range(2)
        for p in POLICIES
    ]
    cases += [
        random_case(seed, p, PreemptionMode.SWAP, "batch") for seed in range(2) for p in POLICIES
    ]
    for seed in range(2):
        for p in PREEMPTING_POLICIES:
            requests, capacity, config, _ = pressure_case(seed, p, PreemptionMode.RECOMPUTE)
            longest = int((requests.input_tokens + requests.max_output_tokens).max())
            blocks = max(capacity.blocks * 2 // 3, -(-longest // capacity.block_size))
            cases.append((requests, dataclasses.replace(capacity, blocks=blocks), config))
    for requests, capacity, config in cases:
        requests = dataclasses.replace(
            requests,
            output_tokens=requests.output_tokens + 1,
            max_output_tokens=requests.max_output_tokens + 1,
        )
        capacity = dataclasses.replace(capacity, blocks=capacity.blocks + 1)
        rule = make_policy(config, requests)
        out.append(landed(requests, toy_model(), capacity, config, rule).run())
    return out


def _prefill_runs() -> list[object]:
    """Prefill-pool replicas (every output one token) on the small random cases, also with as
    few blocks as the longest prompt needs."""
    prefill = core.prefill_class()
    out: list[object] = []
    for seed in range(2):
        for p in POLICIES:
            requests, capacity, config = random_case(seed, p, PreemptionMode.RECOMPUTE, "poisson")
            ones = np.ones(len(requests), dtype=np.int64)
            requests = dataclasses.replace(requests, output_tokens=ones, max_output_tokens=ones)
            fits = -(-int(requests.input_tokens.max()) // capacity.block_size)
            for blocks in (capacity.blocks, fits):
                tight = dataclasses.replace(capacity, blocks=blocks)
                out.append(
                    prefill(
                        requests, toy_model(), tight, config, make_policy(config, requests)
                    ).run()
                )
    return out


def _lockstep_runs() -> list[object]:
    """Two attention-DP ranks in lockstep (qwen3-30b-a3b dp2-ep2, a small KV cache, so that
    they preempt), ranks that fold landings and plain ranks, under every policy."""
    dep = resolve(get_model("qwen3-30b-a3b"), get_hardware("h200-sxm"), DeploymentSettings())
    pool = pools_of(dep, parse_disagg("1p:tp1,1d:dp2-ep2"), 1024)[1].pool
    landed, plain, lockstep = core.landed_class(), core.replica_class(), core.lockstep_class()
    out: list[object] = []
    for p in POLICIES:
        rng = np.random.default_rng(3)
        n = int(rng.integers(8, 30))
        outputs = rng.integers(2, 300, n)
        arrivals = np.cumsum(rng.exponential(0.02, n))
        requests = Requests(rng.integers(16, 400, n), outputs, outputs, arrivals)
        capacity = dataclasses.replace(pool.capacity, blocks=int(rng.integers(40, 120)))
        config = dataclasses.replace(pool.config, policy=p)
        rule = make_policy(config, requests)
        owners = [np.flatnonzero(np.arange(n) % 2 == r) for r in range(2)]
        local = pool.model.local
        for kind in ("fold", "landed", "plain"):
            ranks = [
                landed(requests.subset(idx), local, capacity, config, rule, in_lockstep=True)
                if kind == "fold"
                else plain(
                    requests.subset(idx), local, capacity, config, rule, landed=kind == "landed"
                )
                for idx in owners
            ]
            out.append(lockstep(ranks, pool.model, group=2).run())
    return out


def _deployment_runs() -> list[object]:
    """Two-pool runs of the 8B (1p:tp1,2d:tp1) and DeepSeek-R1 (1p:dp8-ep8,1d:dp8-ep8), as a
    batch and as Poisson arrivals, and R1's aggregated dp16-ep16 run (ranks in lockstep)."""
    out: list[object] = []
    for model_id, n, split, aggregated in (
        ("deepseek-r1-distill-llama-8b", 200, "1p:tp1,2d:tp1", None),
        ("deepseek-r1", 64, "1p:dp8-ep8,1d:dp8-ep8", "dp16-ep16"),
    ):
        dep = resolve(get_model(model_id), get_hardware("h200-sxm"), DeploymentSettings())
        batch = plan_workloads(WorkloadChoice(num_requests=n, isl=2048, osl=(512,)), 0)[1][0][1]
        length = dep.context_length(batch)
        arrivals = np.cumsum(np.random.default_rng(0).exponential(1 / 4.0, n))  # 4 req/s
        traffic = (batch, dataclasses.replace(batch, arrival_s=arrivals))
        pools = pools_of(dep, parse_disagg(split), length)
        out += [run_disagg(dep, pools, requests) for requests in traffic]
        if aggregated is not None:
            layout = parse_layout(aggregated)
            capacity, steps = replica_models(dep, dep.memory(layout, length))
            config = dep.sim_config(length)
            out += [simulate(r, steps, capacity, config, dp=layout.dp) for r in traffic]
    return out


@NEEDS_CORE
@pytest.mark.parametrize(
    "work",
    [_landed_runs, _prefill_runs, _lockstep_runs, _deployment_runs],
    ids=["landed", "prefill", "lockstep", "two-pool"],
)
def test_compiled_two_pool_classes_agree_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch, work: Callable[[], list[object]]
) -> None:
    pure, fast = _both_cores(monkeypatch, work)
    assert isinstance(pure, list) and isinstance(fast, list) and len(pure) == len(fast)
    for k, (a, b) in enumerate(zip(pure, fast, strict=True)):
        assert _same(a, b), k
