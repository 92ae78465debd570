"""Edges the analysis mutation sample of seed 607 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 607): each value worked out by hand in its comment."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest


def test_a_split_that_misses_is_costed_at_its_own_throughput_even_with_a_rate_offered() -> None:
    from capcliff.analysis.disagg.fleet_reasons import split_row
    from capcliff.analysis.disagg.options import Option
    from capcliff.analysis.disagg.pools import parse_disagg

    spec = parse_disagg("1p:tp1,1d:tp1")
    level = [Option(10.0, "disaggregated", spec.gpus, "h100-sxm", spec)]

    def cost(ok: bool, offered: float | None) -> float | None:
        state = SimpleNamespace(ttft_p99_s=9.0, tpot_p99_s=1.0, output_tok_s=50.0)
        best: Any = SimpleNamespace(spec=spec, state=state)
        return split_row(level, [best], best, ok, "h100-sxm", offered).usd_per_million_output_tokens

    # it meets the SLOs at 100 offered tokens/s: it serves them all, $10 per hour / (100 x 3,600
    # tokens per hour) x 1e6 = $27.78 per million
    assert cost(True, 100.0) == pytest.approx(27.7778)
    # it misses: costed at the 50 tokens/s it does serve, not the 100 offered (which it does not
    # keep up with): $10 / (50 x 3,600) x 1e6 = $55.56 per million. (Seed 607's `ok and offered`
    # -> `ok or offered` costed it at the offered rate, $27.78.)
    assert cost(False, 100.0) == pytest.approx(55.5556)
    # no rate offered (a closed-loop walk): its own throughput either way
    assert cost(True, None) == pytest.approx(55.5556)


def test_a_rate_probe_holds_twenty_turnovers_of_the_requests_a_rate_within_the_slo_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.evaluate import capacity
    from capcliff.analysis.evaluate.rate_search import RateProbes
    from capcliff.analysis.evaluate.solver import Slo

    made: list[Any] = []

    class StopError(Exception):
        pass

    def probes(*args: Any) -> Any:
        made.append(RateProbes(*args))
        raise StopError  # only the probes' sizing is under test, not the search they drive

    monkeypatch.setattr(capacity, "RateProbes", probes)
    state = SimpleNamespace(throughput_rps=5.0)
    point: Any = SimpleNamespace(thrashing=False, requests=2000, state=state, cap=64)
    replica: Any = SimpleNamespace(config=None, run=None, paused=None)
    workload: Any = SimpleNamespace(at_rate=None, mean_output_tokens=lambda: 200.0)
    with pytest.raises(StopError):
        capacity._within_slo(replica, workload, Slo(2.0, 0.05), (point,), point, 64, True)
    # A request within the SLO spends about its TTFT and its 200 output tokens' TPOTs in the
    # system: 2 + 200 x 0.05 = 12 s. At 2 requests/s a replica then holds 2 x 12 = 24 requests
    # (Little's law), and a probe runs HELD_FACTOR = 20 turnovers of them: 480 requests, fewer
    # than the 2,000 asked for. (Seed 607's `200 * 0.05` -> `200 / 0.05` made the cycle 4,002 s,
    # so every probe ran the whole 2,000.) At 0.5 requests/s: 6 held, 120, raised to MIN_FIRST
    # = 200; at 10 requests/s: 120 held, 2,400, capped at the 2,000 asked for.
    assert [made[0].size(2000, rate) for rate in (2.0, 0.5, 10.0)] == [480, 200, 2000]


def test_a_cap_exactly_five_percent_under_the_top_steady_rate_is_within_the_tolerance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.evaluate import sweet_spot

    def spot(rates: dict[int, float]) -> int:
        monkeypatch.setattr(sweet_spot, "_steady_tok_s", lambda p, _open: rates[p.concurrency])
        points: Any = tuple(
            SimpleNamespace(concurrency=c, result=object(), output_tokens_per_s=r)
            for c, r in rates.items()
        )
        return sweet_spot.sweet_spot_result(points, None, True).concurrency

    # the smallest cap within CAP_TOLERANCE = 5 % of the most steady tokens/s, 100: 95 (the 5 %
    # limit itself, (1 - 0.05) x 100 = 95.0 exactly in floating point) is within, 94 is not.
    # (Seed 607's `>=` -> `>` left 95 out and chose 64.)
    assert spot({16: 90.0, 32: 95.0, 64: 100.0}) == 32
    assert spot({16: 90.0, 32: 94.0, 64: 100.0}) == 64
    # nothing served at any cap: every cap has the top rate, 0, and the smallest is chosen (the
    # mutant found no cap at all and raised)
    assert spot({16: 0.0, 32: 0.0}) == 16


def test_a_split_whose_p99_equals_the_slo_serves_the_rate() -> None:
    from capcliff.analysis.disagg.online import serves
    from capcliff.analysis.evaluate.solver import Slo

    def served(ttft: float, tpot: float) -> bool:
        state: Any = SimpleNamespace(saturated=False, ttft_p99_s=ttft, tpot_p99_s=tpot)
        return serves(state, Slo(2.0, 0.05))

    # the SLO is a limit the p99 may reach (`meets_slo`'s `<=`): at 2 s and 50 ms it serves;
    # 1 ms over either limit it does not. (Seed 607's TTFT `<=` -> `<` refused the equal one.)
    assert served(2.0, 0.05)
    assert not served(2.001, 0.05)
    assert not served(2.0, 0.051)


def test_vllm_dotted_speculative_keys_are_read_among_other_flags_with_values() -> None:
    from capcliff.analysis.serve_command import parse_serve_command
    from capcliff.catalog.layout import Layout

    command = parse_serve_command(
        "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 --enable-prefix-caching "
        "--speculative-config.method ngram --max-num-seqs 64 "
        "--speculative-config.num_speculative_tokens 3"
    )
    # the two dotted keys are one `--speculative-config {"method": "ngram",
    # "num_speculative_tokens": 3}`: n-gram speculation of 3 tokens; the other flags are read as
    # they are (TP 2, 64 sequences), whatever their values are as JSON (2 and 64 are numbers,
    # not objects). (Seed 607's `or` -> `and` took the other flags' values for the JSON
    # argument's, met 2, not an object, and dropped the dotted keys as unmodelled flags.)
    assert command.layout == Layout(tp=2)
    assert command.settings["speculative"] == "ngram:3"
    assert command.settings["max_num_seqs"] == 64
    assert command.unmodelled == ()
