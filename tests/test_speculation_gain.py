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


def test_mtp_on_r1_8xh200_does_not_pay_at_1024_or_3072_requests() -> None:
    """DeepSeek-R1 FP8, 8 x H200, TP8, SGLang, mtp:3; 32-token prompts and outputs, so the KV
    read and attention are small. Per perf/step_time.py a decode step of b sequences costs, apart
    from its fixed part, the 58 MoE layers at their measured time T (perf/moe_tables.py: H200,
    SGLang, fp8_block, MoE TP 8: T(1024) = 538.5 us, T(3072) = 1,219.6 us, T(4096) = 1,150.6 us,
    T(12288) = 2,897.2 us) + the dense part, max(dense weight read ~1 ms, dense FLOPs) + the TP
    all-reduces. Dense FLOPs per token per GPU: 11.0 GFLOP in all less the experts' 58 x 8 x 2 x
    3 x 7168 x 2048 / 8 = 5.1 GFLOP = 5.9 GFLOP, at the block-FP8 GEMM line's ~0.6 x 1,979
    TFLOP/s: d = 5.0 us per token. All-reduces: 2 per layer x 61 x 7,168 x 2 B x 2 x 7/8 per token
    at 470 GB/s: g = 6.5 us per token. E = 2.50 tokens per step (the default MTP acceptance);
    with speculation the verification runs 4 b tokens and is divided by E.

    b = 1,024: without, 58 x 0.539 + 1,024 x 5.0 us + 1,024 x 6.5 us = 31.2 + 5.1 + 6.7 = 43.0 ms
    per token; with, (58 x 1.151 + 4,096 x 5.0 us + 4,096 x 6.5 us) / 2.5 = (66.7 + 20.5 + 26.6)
    / 2.5 = 45.5 ms, plus the draft passes (~1 ms) and SGLang's non-overlapped speculative host
    time (0.44 ms per token): 47 ms. Speculation loses by ~9 %.
    b = 3,072: without 58 x 1.220 + 3,072 x 11.5 us = 70.7 + 35.3 = 106 ms; with (58 x 2.897 +
    12,288 x 11.5 us) / 2.5 = (168.0 + 141.3) / 2.5 = 124 ms: it loses by ~17 %.
    (With the fitted MoE line in place of R1's measured rows, the MoE layers over 4,096 tokens
    were cheaper than these and speculation paid at 1,024.) --max-num-seqs lifts SGLang's own
    cap of 48 running requests with speculation."""
    gain = _series("--speculative", "mtp:3", "--max-num-seqs", "3072")["speculation"]
    assert gain["tokens_per_step"] == pytest.approx(2.50, abs=0.01)
    assert (gain["pays_up_to"], gain["loses_from"]) == (None, 1024)
    at = {p["concurrency"]: p for p in gain["points"]}
    assert not at[1024]["pays"] and not at[3072]["pays"]


def test_without_speculation_a_series_has_no_comparison() -> None:
    assert _series()["speculation"] is None
