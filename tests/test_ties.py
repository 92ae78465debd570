"""The tie rule: layouts within the band of the best are a tie, decided for the simplest."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from capcliff.analysis.plan.ties import TIE_BAND, Option, decide, tie_reason


def test_a_pipeline_layout_ahead_by_less_than_the_band_gives_way_to_the_simpler_one() -> None:
    # the default plan's figures, seed 0: tp4-pp2 1.60, dp2-tp4 1.53 requests/s (4.4 % apart)
    pp = Option("tp4-pp2", 1.60, tp=4, pp=2)
    dp = Option("dp2-tp4", 1.53, tp=4, pp=1)
    far = Option("tp2-pp4", 1.37, tp=2, pp=4)  # 14 % below: not a tie
    chosen, tied, fastest = decide([pp, dp, far])
    assert chosen is dp and tied == [pp] and fastest is pp
    assert "runner-up tp4-pp2" in tie_reason(chosen, tied, fastest)


def test_a_lead_past_the_band_wins() -> None:
    pp = Option("tp4-pp2", 1.60, tp=4, pp=2)
    dp = Option("dp8", 1.60 * (1 - TIE_BAND) - 0.01, tp=1, pp=1)
    assert decide([pp, dp]) == (pp, [], None)


def test_sampling_noise_wider_than_the_band_widens_the_tie() -> None:
    a = Option("tp8", 1.0, tp=8, pp=1, half_width=0.08)
    b = Option("dp8", 0.85, tp=1, pp=1, half_width=0.08)  # 15 % below, within 8 % + 8 %
    assert decide([a, b])[0] is b


def test_among_ties_fewer_gpus_per_replica_wins() -> None:
    options = [Option("tp8", 1.0, 8, 1), Option("dp2-tp4", 0.97, 4, 1), Option("dp8", 0.95, 1, 1)]
    assert decide(options)[0].name == "dp8"


@given(st.lists(st.tuples(st.floats(0.01, 100), st.sampled_from([1, 2, 4, 8]),
                          st.sampled_from([1, 2, 4])), min_size=1, max_size=8))  # fmt: skip
def test_the_choice_is_never_worse_than_the_band_and_never_depends_on_order(
    rows: list[tuple[float, int, int]],
) -> None:
    options = [Option(f"l{i}", v, tp, pp) for i, (v, tp, pp) in enumerate(rows)]
    chosen = decide(options)[0]
    best = max(o.value for o in options)
    assert chosen.value >= best * (1 - TIE_BAND)
    assert decide(options[::-1])[0].value == chosen.value
