"""The fleet table's GPU types carry their held-out throughput error, and two types whose cost
per token differs by less than it are said to be a tie the model cannot resolve."""

from __future__ import annotations

from capcliff.analysis.plan.fleet import fleet_tie_note
from capcliff.analysis.plan.types import FleetEntry


def _line(gpu: str, usd_per_mtok: float, error: float | None) -> FleetEntry:
    return FleetEntry(
        gpu=gpu, layout="tp1", max_num_seqs=64, replicas=4, gpus=4, nodes=1,
        usd_per_gpu_hour=2.0, usd_per_hour=8.0, usd_per_million_output_tokens=usd_per_mtok,
        sustained_rps_per_replica=30.0, ttft_p99_s=None, tpot_p99_s=None, meets_slo=None,
        throughput_error=error,
    )  # fmt: skip


def test_two_types_closer_than_the_wider_error_tie() -> None:
    # $0.88 against $1.00: 1 - 0.88 / 1.00 = 12 % apart; the wider error is 31 % -> a tie
    note = fleet_tie_note([_line("mi300x", 0.88, 0.31), _line("b200", 1.00, 0.15)])
    assert note is not None
    assert "mi300x and b200 are 12% apart" in note and "31% held-out" in note
    assert "calibrate each" in note


def test_two_types_further_apart_than_either_error_do_not_tie() -> None:
    # $0.60 against $1.00: 40 % apart, past both 31 % and 15 %
    assert fleet_tie_note([_line("mi300x", 0.60, 0.31), _line("b200", 1.00, 0.15)]) is None
    # 20 % apart: inside the MI300X's 31 %, so the order matters not, the wider error does
    assert fleet_tie_note([_line("b200", 0.80, 0.15), _line("mi300x", 1.00, 0.31)]) is not None


def test_no_tie_is_claimed_without_a_measured_error_or_a_second_type() -> None:
    assert fleet_tie_note([_line("h200-sxm", 1.0, 0.15)]) is None
    assert fleet_tie_note([_line("h200-sxm", 0.99, None), _line("b200", 1.0, 0.15)]) is None


def test_types_exactly_the_wider_error_apart_are_resolved() -> None:
    # $0.75 against $1.00: 1 - 0.75 / 1.00 = 25 % apart (exact in binary), at a 25 % error: the
    # gap is not less than the error, so no tie; at $0.76 (24 % apart) it is one
    assert fleet_tie_note([_line("mi300x", 0.75, 0.25), _line("b200", 1.00, 0.15)]) is None
    assert fleet_tie_note([_line("mi300x", 0.76, 0.25), _line("b200", 1.00, 0.15)]) is not None
