"""KV transfer queueing and paths (capcliff/sim/disagg/kv_transfer.py), worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.disagg.kv_transfer import (
    Fabric,
    Path,
    Placement,
    link_utilization,
    schedule_transfers,
)

NVLINK = Path("nvlink", 100e9, 1e-6)
RDMA = Path("rdma", 50e9, 5e-6)
FABRIC = Fabric(NVLINK, RDMA, domain_gpus=8, overhead_s=1e-3)
# One prefill replica on GPUs 0-3; decode replica 0 on GPUs 4-7 (same 8-GPU domain: NVLink),
# decode replica 1 on GPUs 8-15 (the next domain: RDMA).
PLACEMENT = Placement((range(0, 4),), (range(4, 8), range(8, 16)))


def _three() -> tuple[np.ndarray, np.ndarray]:
    # ready 0, 0.005, 0.001 s; 4 GB, 4 GB, 2 GB; to decode replicas 0, 0, 1.
    t = schedule_transfers(
        np.array([0.0, 0.005, 0.001]), np.array([4e9, 4e9, 2e9]),
        np.array([0, 0, 0]), np.array([0, 0, 1]), fabric=FABRIC, placement=PLACEMENT,
    )  # fmt: skip
    return t.start_s, t.end_s


def test_transfers_queue_on_the_prefill_side_in_ready_order() -> None:
    # Lanes min(4, 4) = 4 and min(4, 8) = 4.
    # #0 NVLink: 1e-6 + 1e-3 + 4e9 / (4 x 100e9) = 0.011001 s -> [0, 0.011001].
    # #2 (ready 0.001, next in ready order) RDMA: 5e-6 + 1e-3 + 2e9 / (4 x 50e9) = 0.011005;
    #    the send side is busy until 0.011001 -> [0.011001, 0.022006].
    # #1 (ready 0.005) waits for the send side -> [0.022006, 0.033007].
    start, end = _three()
    assert start.tolist() == pytest.approx([0.0, 0.022006, 0.011001])
    assert end.tolist() == pytest.approx([0.011001, 0.033007, 0.022006])


def test_link_utilisation_of_back_to_back_transfers_is_one() -> None:
    # The three transfers above keep the one send side busy from 0 to 0.033007 s.
    t = schedule_transfers(
        np.array([0.0, 0.005, 0.001]), np.array([4e9, 4e9, 2e9]),
        np.array([0, 0, 0]), np.array([0, 0, 1]), fabric=FABRIC, placement=PLACEMENT,
    )  # fmt: skip
    assert link_utilization(t, links=1, horizon_s=0.033007) == pytest.approx(1.0)


def test_link_utilisation_of_an_empty_horizon_is_zero() -> None:
    t = schedule_transfers(
        np.array([0.0]), np.array([1e9]), np.array([0]), np.array([0]),
        fabric=FABRIC, placement=PLACEMENT,
    )  # fmt: skip
    assert link_utilization(t, links=1, horizon_s=0.0) == 0.0


def test_the_last_gpu_of_a_domain_is_still_inside_it() -> None:
    # GPU 7 // 8 = 0 = GPU 0 // 8: NVLink; GPU 8 is in domain 1: RDMA.
    assert FABRIC.path(range(0, 1), range(7, 8)) is NVLINK
    assert FABRIC.path(range(0, 1), range(8, 9)) is RDMA


def test_a_path_may_have_zero_latency() -> None:
    assert Path("ideal", 1e9, 0.0).latency_s == 0.0


def test_a_path_needs_bandwidth() -> None:
    with pytest.raises(InputError, match="bandwidth > 0"):
        Path("broken", 0.0, 0.0)


def test_packed_placement_puts_decode_after_prefill() -> None:
    # 2 prefill replicas of 4 GPUs (0-3, 4-7), then 1 decode replica of 8 (8-15).
    p = Placement.packed(2, 4, 1, 8)
    assert (p.prefill, p.decode) == ((range(0, 4), range(4, 8)), (range(8, 16),))
