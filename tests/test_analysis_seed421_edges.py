"""Edges the analysis mutation sample of seed 421 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 421): each value worked out by hand in its comment."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.plan.fleet import Unit, replicas_for
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.weights import WeightScheme
from capcliff.units import KVDType, WeightDType


def test_a_fleet_with_no_headroom_carries_the_load_at_full_rate() -> None:
    # one tp1 replica sustains 4 requests/s; 10 requests/s with no headroom need
    # ceil(10 / 4) = 3 replicas, with 20 % headroom ceil(10 / 3.2) = 4; a headroom of 1 leaves
    # nothing and is refused
    unit = Unit(Layout(), 1, 4.0, 64, 2.0)
    assert replicas_for(unit, offered_rps=10.0, clients=None, headroom=0.0) == 3
    assert replicas_for(unit, offered_rps=10.0, clients=None, headroom=0.2) == 4
    with pytest.raises(InputError, match=r"headroom: must be in \[0, 1\), got 1"):
        replicas_for(unit, offered_rps=10.0, clients=None, headroom=1.0)


class _Dep:
    """A deployment whose weights fit one GPU in FP8 and none in BF16 (8-GPU nodes, FP8 KV)."""

    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)

    def memory(self, gpus: int, length: int) -> Any:
        fits = self.scheme.linear is WeightDType.FP8  # type: ignore[attr-defined]
        return SimpleNamespace(fits=fits, valid=False, layout=SimpleNamespace(name=f"tp{gpus}"))


def test_fp8_weights_are_offered_only_to_a_model_planned_in_another_dtype(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis import what_fits

    monkeypatch.setattr(what_fits, "enumerate_layouts", lambda gpus, arch: [gpus])
    monkeypatch.setattr(
        what_fits, "replace", lambda dep, **changes: _Dep(**{**vars(dep), **changes})
    )
    monkeypatch.setattr(
        WeightScheme,
        "planned",
        staticmethod(lambda arch, dtype: SimpleNamespace(linear=dtype)),
    )
    # shipped in BF16, from which the engines quantize to FP8 while loading
    shipped = SimpleNamespace(linear=WeightDType.BF16)
    monkeypatch.setattr(WeightScheme, "as_shipped", staticmethod(lambda arch: shipped))
    monkeypatch.setattr(what_fits, "engines_load", lambda dep: True)

    def dep(linear: WeightDType) -> Any:
        return _Dep(
            model=SimpleNamespace(arch=None), scheme=SimpleNamespace(linear=linear),
            kv_dtype=KVDType.FP8, hardware=SimpleNamespace(gpus_per_node=8),
            settings=SimpleNamespace(offload=None),
        )  # fmt: skip

    # planned in BF16 it fits nowhere, in FP8 on one GPU: that is the fix
    assert what_fits.fit_fixes(dep(WeightDType.BF16), 1, 8192) == [
        "FP8 weights (--weight-dtype fp8) fit as tp1"
    ]


def test_kv_aware_admission_is_tried_at_the_largest_cap_swept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.plan import batch
    from capcliff.sim import simulate as simulate_module
    from capcliff.sim.config import SimConfig

    seen: list[SimConfig] = []

    def simulate(requests: Any, steps: Any, capacity: Any, config: SimConfig, dp: int) -> Any:
        seen.append(config)
        return SimpleNamespace(makespan_s=80.0)

    monkeypatch.setattr(simulate_module, "simulate", simulate)
    points = [SimpleNamespace(concurrency=c) for c in (8, 64, 16)]
    ev: Any = SimpleNamespace(
        memory=SimpleNamespace(layout=Layout()), points=points, steps=None, capacity=None,
        sweet=SimpleNamespace(makespan_s=100.0),
    )  # fmt: skip
    inputs: Any = SimpleNamespace(config=SimConfig(), requests=None)
    # the generous cap is the largest swept, 64; 80 s against the sweet spot's 100 s: 20 % gain
    makespan, gain = batch.kv_aware_gain(ev, inputs)
    assert makespan == 80.0 and gain == pytest.approx(0.2)
    assert [(c.policy, c.max_num_seqs) for c in seen] == [("kv-aware", 64)]


def test_the_lookahead_reserve_counts_no_more_sequences_than_the_pool_has_blocks() -> None:
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.catalog.catalogs import get_hardware, get_model

    # n-gram K = 3 on vLLM at max_num_seqs 100 with 16-token blocks: from 200 blocks the reserve
    # is ceil(100 x 3 / 16) = 19 and 181 are left; a pool of 50 blocks runs at most 50 sequences
    # (each holds a block), ceil(50 x 3 / 16) = 10 reserved, 40 left; of 10, ceil(10 x 3 / 16)
    # = 2 reserved, 8 left (it kept max(1, 10 - 19) = 1, so a request of 2 blocks was refused)
    settings = DeploymentSettings(max_num_seqs=100, speculative="ngram:3", spec_accept_length=2.0)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    memory: Any = SimpleNamespace(max_model_len=4096)

    def left(blocks: int) -> int:
        capacity: Any = SimpleNamespace(blocks=blocks, block_size=16)
        return dep._speculative_blocks(capacity, memory)

    assert (left(200), left(50), left(10)) == (181, 40, 8)
