"""`sweep --speculative`: each point against the same point without speculation, and the
concurrency from which speculation stops paying (analysis/sweep/speculation_gain.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from capcliff.analysis.sweep.speculation_gain import compare_point, speculation_gain
from capcliff.cli import app

runner = CliRunner()


@dataclass(frozen=True)
class _P:
    concurrency: int
    output_throughput_tok_s: float
    tpot_mean_s: float


def _gain(with_spec: list[_P], without: list[_P]):  # type: ignore[no-untyped-def]
    return speculation_gain(
        with_spec, without, method="mtp", num_speculative_tokens=3, tokens_per_step=2.86
    )


def test_per_user_gain_is_the_inverse_tpot_ratio() -> None:
    # TPOT 20 ms with, 30 ms without: 1/0.020 / (1/0.030) - 1 = +50 % per user; 1,200 over
    # 1,000 tok/s: +20 %
    point = compare_point(_P(8, 1200.0, 0.020), _P(8, 1000.0, 0.030))
    assert point.per_user_gain == pytest.approx(0.5)
    assert point.throughput_gain == pytest.approx(0.2)
    assert point.pays


def test_a_higher_total_throughput_does_not_pay_when_each_user_is_slower() -> None:
    assert not compare_point(_P(8, 1100.0, 0.031), _P(8, 1000.0, 0.030)).pays


def test_crossover_is_the_start_of_the_trailing_run_of_losses() -> None:
    # pays at 4, loses at 8, pays at 16, loses at 32 and 64: the crossover is 32, not 8
    speeds = {4: 1.5, 8: 0.9, 16: 1.2, 32: 0.95, 64: 0.8}
    with_spec = [_P(c, 100.0 * s, 0.01 / s) for c, s in speeds.items()]
    without = [_P(c, 100.0, 0.01) for c in speeds]
    gain = _gain(with_spec, without)
    assert (gain.pays_up_to, gain.loses_from) == (16, 32)
    assert gain.extra_points == 5


def test_no_crossover_when_speculation_pays_at_the_largest_concurrency() -> None:
    gain = _gain([_P(c, 150.0, 0.01) for c in (4, 8)], [_P(c, 100.0, 0.015) for c in (4, 8)])
    assert (gain.pays_up_to, gain.loses_from) == (8, None)


def test_losing_everywhere_has_nothing_that_pays() -> None:
    gain = _gain([_P(c, 90.0, 0.02) for c in (4, 8)], [_P(c, 100.0, 0.015) for c in (4, 8)])
    assert (gain.pays_up_to, gain.loses_from) == (None, 4)


R1_H200 = [
    "sweep", "deepseek-r1", "--gpus", "8", "--gpu", "h200-sxm", "--layout", "tp8",
    "--engine", "sglang", "--isl", "32", "--osl", "32", "--num-requests", "3072",
    "--concurrency", "1024,3072", "--format", "json",
]  # fmt: skip


def _series(*extra: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*R1_H200, *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["series"][0]  # type: ignore[no-any-return]


def test_mtp_on_r1_8xh200_stops_paying_between_1024_and_3072_requests() -> None:
    """DeepSeek-R1 FP8, 8 x H200, TP8, SGLang, mtp:3; 32-token prompts and outputs, so the KV
    read and attention are small and a decode step of b sequences is, by perf/step_time.py:

    without speculation (memory-bound below b = M / f = 2,900):
        t0(b) = M + g b                     (+ c, the step's fixed part)
    with it, per generated token (verification of K + 1 = 4 tokens per sequence, compute-bound
    above b = M / (4 f) = 730):
        t1(b) = (4 b (f + g)) / E           (+ c / E; the draft passes, one over the 4 tokens
                                             and two over one, add ~4 %, neglected)

    M: the weights one GPU reads: routed experts 256 x 58 layers x 3 x 7168 x 2048 x 1 B (FP8)
       / 8 GPUs = 81.7 GB, plus ~3.2 GB dense = 84.9 GB, at 4.8 TB/s x MBU 0.55 = 2.64 TB/s:
       M = 32.2 ms.
    f: FLOPs per token per GPU at 1,979 TFLOP/s (FP8) x MFU 0.5 = 989 TFLOP/s: 2 x 37e9 active
       / 8 = 9.25 GFLOP (+ lm_head 2 x 129,280 x 7,168 / 8 = 0.23): f = 9.6 us (capcliff's
       exact count, with MLA's projections, 11.0 GFLOP: 11.1 us).
    g: TP all-reduces, 2 per layer x 61 layers, 7,168 x 2 B x 2 x 7/8 per token, at 470 GB/s:
       g = 122 x 25,088 / 470e9 = 6.5 us per token.
    E = 1 + 0.75 + 0.75 x 0.645 + 0.75 x 0.645 x 0.5547 = 2.50 (the default MTP acceptance).

    t1 = t0  <=>  b* = E M / (4 (f + g) - E g):
        f = 11.1 us: 2.50 x 32.2 ms / (4 x 17.6 - 2.50 x 6.5) us = 80.5 / 54.2 = 1,490;
        f = 9.6 us:  80.5 / (4 x 16.1 - 16.3) = 80.5 / 48.2 = 1,670;
    the fixed part c (~5.7 ms: all-reduce latency and the step overhead) is divided by E with
    speculation and raises b* by (E - 1) c / denominator = 1.50 x 5.7 / 54.2 ms/us ~ 160, the
    draft passes lower it by ~4 %; SGLang's non-overlapped speculative worker adds 1.1 ms of
    host time per speculative step, 0.44 ms per token, which lowers b* by 0.44 ms / (4 (f + g)
    / E - g) = 0.44 ms / 21.7 us ~ 20. So b* lies in 1,550-1,850: speculation pays at 1,024
    concurrent requests (three waves of the 3,072 requests) and loses at 3,072 (one wave).
    --max-num-seqs lifts SGLang's own cap of 48 running requests with speculation."""
    gain = _series("--speculative", "mtp:3", "--max-num-seqs", "3072")["speculation"]
    assert gain["tokens_per_step"] == pytest.approx(2.50, abs=0.01)
    assert (gain["pays_up_to"], gain["loses_from"]) == (1024, 3072)
    at = {p["concurrency"]: p for p in gain["points"]}
    assert at[1024]["pays"] and not at[3072]["pays"]


def test_without_speculation_a_series_has_no_comparison() -> None:
    assert _series()["speculation"] is None
