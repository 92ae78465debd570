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
