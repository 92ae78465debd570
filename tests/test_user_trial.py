"""An expert user's trial (2026-12-07, h-user): figures a first-time user read wrongly."""

from __future__ import annotations

from types import SimpleNamespace

import pytest


def _no_slo_layout() -> SimpleNamespace:
    """A 2-replica layout sustaining 1.74 requests/s (its saturation: no SLO), at cap 476."""
    points = (SimpleNamespace(cap=476, state=SimpleNamespace(throughput_rps=0.87)),)
    at = SimpleNamespace(
        ttft_p99_s=0.12, tpot_p99_s=0.033, ttft_p99_half_width=0.07, tpot_p99_half_width=0.76
    )
    capacity = SimpleNamespace(
        cap=476, points=points, saturation_rps=0.87, at_sustained=at, simulated_cliff=None
    )
    layout = SimpleNamespace(name="dpa2", dp=2, tp=1, pp=1)
    return SimpleNamespace(
        memory=SimpleNamespace(layout=layout), capacity=capacity, sustained_rps=1.74,
        saturation_rps=1.74, refined=True,
    )  # fmt: skip


def test_without_an_slo_the_latencies_are_said_to_be_at_the_headroom_below_saturation() -> None:
    # Without an SLO `at_sustained` is the run at (1 - headroom) x saturation (capacity.py), so
    # the TTFT beside "sustains 1.74 ... saturation 1.74" was read as the saturation's.
    # At the default 20 % headroom: 0.8 x 1.74 = 1.392 -> "1.39 requests/s".
    from capcliff.analysis.plan.online_rows import recommendation_reasons_online

    line = recommendation_reasons_online(_no_slo_layout(), {}, 0.2)[0]  # type: ignore[arg-type]
    assert "saturation 1.74; at the 20% headroom below it (1.39 requests/s) TTFT p99 0.12 s" in line
    assert "; there TTFT" not in line
    # within an SLO the run is at the sustained rate itself: "there"
    line = recommendation_reasons_online(_no_slo_layout(), {})[0]  # type: ignore[arg-type]
    assert "saturation 1.74; there TTFT p99 0.12 s" in line


def _memory(per_replica: int, dp: int) -> SimpleNamespace:
    return SimpleNamespace(
        layout=SimpleNamespace(dp=dp),
        kv_capacity_tokens_per_replica=per_replica,
        kv_capacity_tokens_total=per_replica * dp,
    )


def test_the_cap_memory_note_is_per_replica_like_the_cap_and_the_table() -> None:
    # Qwen3-32B FP8 KV dp4-tp2 on 8 x H200: the table's KV tok/rep 1,446,144 and cap 168 per
    # replica, and the note printed the four replicas' 6,111,552 vs 5,784,576. Per replica:
    # 6,111,552 / 4 = 1,527,888 and 5,784,576 / 4 = 1,446,144; 1,527,888 / 1,446,144 - 1 = +5.7 %.
    from capcliff.analysis.plan.commands import _cap_memory_note

    capped = _memory(1_527_888, 4)
    settings = SimpleNamespace(max_num_seqs=None, model_copy=lambda update: settings)
    dep = SimpleNamespace(
        settings=settings,
        hardware=None,
        on=lambda hw, s: SimpleNamespace(memory=lambda layout, length: capped),
    )
    (note,) = _cap_memory_note(dep, _memory(1_446_144, 4), 168, 33_792)  # type: ignore[arg-type]
    assert "holds 1,527,888 KV tokens per replica, not 1,446,144 (+5.7%)" in note
    (note,) = _cap_memory_note(dep, _memory(1_446_144, 1), 168, 33_792)  # type: ignore[arg-type]
    assert "holds 1,527,888 KV tokens, not 1,446,144 (+5.7%)" in note


def test_calibrate_to_tighten_is_said_only_where_a_calibration_tightened_the_band() -> None:
    # error_bands.json (benchmarks/fidelity.py): SGLang on H200, uncalibrated throughput 0.0486,
    # TPOT 0.0550; calibrated wider (0.1139, 0.1536 when the trial ran; 0.1353, 0.1822 after
    # the checkpoint's KV dtype), and the plan printed "±5 %, ±6 % (uncalibrated; calibrate to
    # tighten)" then the wider band after a calibration. SGLang on B200: narrower calibrated:
    # the advice stands.
    import json
    from importlib import resources

    from capcliff.perf.error_band import error_band

    data = json.loads(resources.files("capcliff.perf").joinpath("error_bands.json").read_text())
    cal = data["engines"]["sglang"]["h200"]["calibrated"]
    h200 = error_band("sglang", "h200-sxm", calibrated=False).describe()
    assert "throughput ±5 %, TPOT ±6 %" in h200
    assert "calibrate to tighten" not in h200
    said = f"throughput ±{cal['throughput'] * 100:.0f} %, TPOT ±{cal['tpot'] * 100:.0f} %"
    assert f"did not tighten it in validation: {said}" in h200
    b200 = error_band("sglang", "b200", calibrated=False).describe()
    assert "(uncalibrated; calibrate to tighten; sglang on b200" in b200


def test_an_offload_given_that_the_advice_would_drop_is_said_beside_the_engine_lines() -> None:
    # Qwen3-32B tp2, multiturn-chat, 64 users, --offload cpu:256GiB: "recommended host offload:
    # none (it would not pay)" above engine lines carrying --kv-offloading-size 256.
    from capcliff.analysis.plan.reuse_advice import given_offload_note

    def dep(offload: str | None) -> SimpleNamespace:
        return SimpleNamespace(settings=SimpleNamespace(offload=offload))

    def advice(size: int) -> SimpleNamespace:
        return SimpleNamespace(recommended_offload_bytes=size)

    gib = 2**30
    (note,) = given_offload_note(dep("cpu:256GiB"), advice(0))  # type: ignore[arg-type]
    assert note == (
        "--offload: the engine lines carry the cpu tier given (256 GiB per replica), the "
        "deployment simulated; the reuse advice recommends none"
    )
    (note,) = given_offload_note(dep("cpu:256GiB"), advice(64 * gib))  # type: ignore[arg-type]
    assert note.endswith("the reuse advice recommends 64 GiB")
    assert given_offload_note(dep("cpu:256GiB"), advice(256 * gib)) == []  # type: ignore[arg-type]
    assert given_offload_note(dep(None), advice(64 * gib)) == []  # type: ignore[arg-type]
    assert given_offload_note(dep("cpu:256GiB"), None) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (4_311.7, "4,310"),  # printed "4.31e+03" beside "504" (llama-3.1-70b --disagg, isl 16000)
        (504.2, "504"),
        (12.345, "12.3"),
        (123_456.0, "123,000"),
    ],
)
def test_a_disagg_makespan_prints_three_figures_without_an_exponent(
    seconds: float, text: str
) -> None:
    from capcliff.analysis.disagg.compare import _seconds

    assert _seconds(seconds) == text


def test_the_online_reuse_ttft_is_the_steady_states_not_the_first_waves(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # llama-3.1-8b on 1 x H200, multiturn-chat, 32 users: the whole-run TTFT p99 was 0.25 s with
    # caching off and on alike, set by the 32 first turns sent at t = 0 (nothing cached yet).
    # In the steady state 82 % of the prompt tokens hit the cache, so the prefill work of each
    # request is about 1 - 0.82 = 18 % of caching off's: its TTFT p99 must fall well below
    # (less than half; simulated 0.243 -> 0.085 s).
    import json

    from capcliff.cli import main

    args = ["plan", "llama-3.1-8b", "--gpus", "1", "--workload", "multiturn-chat"]
    assert main([*args, "--clients", "32", "--format", "json"]) == 0
    points = {p["label"]: p for p in json.loads(capsys.readouterr().out)["reuse"]["points"]}
    off, on = points["caching off"], points["caching on"]
    assert on["prefix_cache_hit_rate"] > 0.8
    assert on["ttft_p99_s"] < 0.5 * off["ttft_p99_s"]
