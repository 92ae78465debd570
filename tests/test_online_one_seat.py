"""An online plan at `--max-num-seqs 1`: one request in the engine at a time.

Every factor of the saturation sweep's cap grid rounds to the same cap of 1, so the grid holds a
single cap. The plan used to simulate none of it and fail with a traceback (found by a random
combination of valid options). The answer is checked against queueing by hand: one request at a
time, each in service for its prefill plus (osl - 1) decode steps, so the saturation rate is one
over that service time.
"""

from __future__ import annotations

import json

import pytest

from capcliff.cli.main import main

OSL = 500


def test_one_seat_saturates_at_one_over_a_requests_service_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "100", "--osl", str(OSL), "--jobs", "1",
         "--max-num-seqs", "1", "--format", "json"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    assert report["recommended"]["max_num_seqs"] == 1
    capacity = report["layouts"][0]["capacity"]
    assert [c["max_num_seqs"] for c in capacity["caps"]] == [1]
    # Alone in the engine every decode step is the same one-sequence step, so TPOT is the same
    # for every request, and a request's service is its 100-token prefill plus OSL - 1 of those
    # steps. Requests follow one another: saturation = 1 / service, and the prefill adds a
    # little to the service, so saturation x (OSL - 1) x TPOT is just under 1 (within 3 %).
    product = capacity["saturation_rps"] * (OSL - 1) * capacity["tpot_p99_s"]
    assert 0.97 <= product <= 1.0
