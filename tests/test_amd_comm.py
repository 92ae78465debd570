"""AMD's xGMI full mesh: a TP ring over fewer GPUs than the domain uses fewer links."""

from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import parse_layout
from capcliff.perf.communication import mesh_link_fraction, tp_pp_communication
from capcliff.units import GB
from tests.conftest import arch_of


@pytest.mark.parametrize(
    ("gpu", "ranks", "fraction"),
    [
        pytest.param("mi300x", 2, 1 / 7, id="mi300x-tp2-one-of-seven-links"),
        pytest.param("mi300x", 4, 3 / 7, id="mi300x-tp4-three-of-seven"),
        pytest.param("mi300x", 8, 1.0, id="mi300x-tp8-all-links"),
        pytest.param("mi355x", 2, 1 / 7, id="mi355x-tp2"),
        pytest.param("h200-sxm", 2, 1.0, id="h200-nvswitch-tp2"),
        pytest.param("mi300x", 1, 1.0, id="mi300x-tp1"),
    ],
)
def test_mesh_link_fraction(gpu: str, ranks: int, fraction: float) -> None:
    assert mesh_link_fraction(get_hardware(gpu), ranks) == pytest.approx(fraction)


def test_tp2_ring_on_mi300x_runs_over_the_pairs_one_link() -> None:
    # No busbw in the catalog: half of 7 links x 128 GB/s bidir = 448 GB/s for 8 ranks; a pair
    # shares one link, 128 / 2 = 64 GB/s one way (RCCL's topology model: 48 after protocol
    # overhead, ROCm/rccl#1210).
    comm = tp_pp_communication(
        arch_of("llama-3.1-70b"), get_hardware("mi300x"), parse_layout("tp2"), 80,
        allreduce_latency_s=0.0, p2p_latency_s=0.0, allreduce_curve=(),
    )  # fmt: skip
    assert comm.allreduce_bandwidth_bytes_per_s == pytest.approx(64 * GB)


def test_tp2_on_h200_keeps_the_full_nvswitch_busbw() -> None:
    comm = tp_pp_communication(
        arch_of("llama-3.1-70b"), get_hardware("h200-sxm"), parse_layout("tp2"), 80,
        allreduce_latency_s=0.0, p2p_latency_s=0.0, allreduce_curve=(),
    )  # fmt: skip
    assert comm.allreduce_bandwidth_bytes_per_s == pytest.approx(470 * GB)
