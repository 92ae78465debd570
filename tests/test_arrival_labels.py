"""Headers say how the requests arrive: a Poisson check scenario read "isl 500, osl 200, 30
requests, concurrency 30", as if 30 requests ran at once (fuzz_random seeds 36-41, left)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from capcliff.analysis.workloads import WorkloadChoice, with_arrival
from capcliff.cli.app import app
from capcliff.sim.traffic.workload import Arrival


def test_each_arrival_is_named() -> None:
    fixed = dict(num_requests=30, isl=500, osl=(200,))
    poisson = WorkloadChoice(**fixed, arrival=Arrival.POISSON, rate_per_s=2.0)
    clients = WorkloadChoice(**fixed, arrival=Arrival.CLIENTS, clients=1)
    batch = WorkloadChoice(**fixed)
    assert with_arrival("w", poisson) == "w, Poisson arrivals at 2 requests/s"
    assert with_arrival("w", clients) == "w, 1 closed-loop client"
    assert with_arrival("w", batch) == "w, every request queued at t = 0 (batch)"


def test_session_users_are_counted_and_a_trace_keeps_its_own_label() -> None:
    users = WorkloadChoice(num_requests=30, preset_name="multiturn-chat", clients=8,
                           arrival=Arrival.CLIENTS)  # fmt: skip
    assert with_arrival("multiturn-chat (...)", users) == "multiturn-chat (...), 8 users"
    trace = WorkloadChoice(num_requests=1, trace_lines=('{"input_tokens": 5, "output_tokens": 5}',))
    assert with_arrival("trace", trace) == "trace"


def test_a_poisson_check_scenario_says_so_and_its_cap(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[[scenario]]\nname = "p"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\ngpus = 1\n'
        '[scenario.workload]\nisl = 500\nosl = 200\narrival = "poisson"\nrate = 2\n'
        "num_requests = 30\n[scenario.expect]\nfits = true\n"
    )
    out = CliRunner().invoke(app, ["check", str(spec)]).output
    assert (
        "isl 500, osl 200, Poisson arrivals at 2 requests/s, 30 requests, at most 30 running" in out
    )


def test_one_request_per_second_is_singular() -> None:
    one = WorkloadChoice(num_requests=30, isl=5, osl=(5,), arrival=Arrival.POISSON, rate_per_s=1.0)
    assert with_arrival("w", one) == "w, Poisson arrivals at 1 request/s"


def test_a_count_of_one_reads_in_the_singular() -> None:
    from capcliff.check.output import format_value

    assert format_value(1, "replicas") == "1 replica"
    assert format_value(2, "replicas") == "2 replicas"
    assert format_value(1, "preemptions") == "1 preemption"
    assert format_value(0, "preemptions") == "0 preemptions"
    assert format_value(1.0, "s") == "1 s"


def test_counted_is_singular_for_exactly_one() -> None:
    from capcliff.units import counted

    assert counted(1, "GPU") == "1 GPU"
    assert counted(1_024, "request") == "1,024 requests"
    assert counted(1_024, "request", "") == "1024 requests"
    assert counted(2.54, "turn", "g") == "2.54 turns"
    assert counted(1.0, "turn", "g") == "1 turn"
