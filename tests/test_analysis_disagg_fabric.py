"""`analysis.disagg.pools.fabric_of`: the KV-transfer paths of a hardware file, in SI units.
Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.disagg.pools import fabric_of
from capcliff.errors import InputError
from capcliff.sim.disagg.kv_transfer import DEFAULT_TRANSFER_OVERHEAD_S


def _hardware(**changes: Any) -> Any:
    spec = {
        "id": "fake",
        "scaleup_fabric": "NVLink",
        "scaleup_bw_gb_s_bidir": 900.0,  # one way: 450 GB/s
        "scaleup_latency_us": 2.0,
        "scaleout_fabric": "InfiniBand",
        "scaleout_bw_gb_s_per_gpu": 50.0,
        "scaleout_latency_us": 5.0,
        "scaleup_domain_gpus": 8,
    }
    return SimpleNamespace(**(spec | changes))


def test_the_paths_in_bytes_per_second_and_seconds() -> None:
    fabric = fabric_of(_hardware(), overhead_ms=3.0)
    up, out = fabric.scaleup, fabric.scaleout
    assert (up.name, up.bytes_per_s_per_gpu) == ("NVLink", 450e9)
    assert up.latency_s == pytest.approx(2e-6)  # 2 us
    assert (out.name, out.bytes_per_s_per_gpu) == ("InfiniBand", 50e9)
    assert out.latency_s == pytest.approx(5e-6)  # 5 us
    assert fabric.domain_gpus == 8
    assert fabric.overhead_s == pytest.approx(0.003)  # 3 ms


def test_defaults_when_the_file_leaves_figures_out() -> None:
    bare = _hardware(scaleup_latency_us=None, scaleout_latency_us=None, scaleout_fabric=None)
    fabric = fabric_of(bare)
    assert fabric.scaleup.latency_s == fabric.scaleout.latency_s == 0.0
    assert fabric.scaleout.name == "RDMA"
    assert fabric.overhead_s == DEFAULT_TRANSFER_OVERHEAD_S
    assert fabric_of(bare, overhead_ms=0.0).overhead_s == 0.0
    with pytest.raises(InputError, match="fake has no scaleout_bw_gb_s_per_gpu"):
        fabric_of(_hardware(scaleout_bw_gb_s_per_gpu=None))
