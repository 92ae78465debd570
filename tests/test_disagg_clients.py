"""Closed-loop clients on two pools (`sim.disagg.closed_loop`): the send times are the fixed
point of the two-pool simulation, which is the closed-loop run itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path as PathLib

import numpy as np
import pytest

from capcliff.cli import main
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.disagg.closed_loop import Round, send_times, simulate_clients
from capcliff.sim.disagg.kv_transfer import Fabric, Path, Placement
from capcliff.sim.disagg.pools import DisaggResult, Pool, simulate_disaggregated
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model

FABRIC = Fabric(Path("nvlink", 100e9, 1e-6), Path("rdma", 50e9, 5e-6), domain_gpus=8,
                overhead_s=1e-3)  # fmt: skip
PLACEMENT = Placement((range(0, 4),), (range(4, 8), range(8, 16)))


def _pool(replicas: int = 1) -> Pool:
    return Pool(
        model=constant_model(0.01), capacity=KVCapacity(blocks=100, block_size=4),
        config=SimConfig(policy="vllm", max_num_seqs=8, max_num_batched_tokens=64),
        replicas=replicas, gpus_per_replica=4,
    )  # fmt: skip


def _pools(*, decode: Pool, placement: Placement | None = None) -> Callable[..., DisaggResult]:
    """The two-pool simulation of timed requests, 1 GB of KV each."""

    def run(timed: Requests, _round: Round | None = None) -> DisaggResult:
        return simulate_disaggregated(
            timed, np.full(len(timed), 1e9), prefill=_pool(), decode=decode, fabric=FABRIC,
            placement=placement,
        )  # fmt: skip

    return run


def _clients(n: int, clients: int, think_s: float) -> Requests:
    first = np.where(np.arange(n) < clients, 0.0, np.nan)
    return Requests(
        np.full(n, 10, dtype=np.int64), np.full(n, 3, dtype=np.int64),
        np.full(n, 3, dtype=np.int64), first, (np.arange(n) % clients).astype(np.int64),
        closed_loop=True, think_time_s=think_s,
    )  # fmt: skip


def test_one_client_sends_each_request_a_think_time_after_the_last_one_ends() -> None:
    # Alone, a 10-token prompt with 3 output tokens takes 33.501 ms end to end on these pools
    # (tests/test_disagg.py, test_one_request_by_hand: 10 ms prefill, 3.501 ms transfer, two
    # 10 ms decode steps). One client with 100 ms of think time sends request k at
    # k x 133.501 ms, and each takes 33.501 ms again (one decode replica, on the prefill's node,
    # so every transfer takes the same NVLink path).
    result = simulate_clients(_clients(3, 1, 0.1), _pools(decode=_pool()))
    assert result.serving.arrival_s.tolist() == pytest.approx([0.0, 0.133501, 0.267002])
    assert result.serving.e2e_s.tolist() == pytest.approx([0.033501] * 3)


@pytest.mark.parametrize("clients", [2, 4, 8])
def test_each_client_waits_for_its_last_request(clients: int) -> None:
    # Contention: requests of several clients share the pools; the result is a fixed point,
    # every client's next request sent exactly when its previous one finished (no think time).
    requests = _clients(6 * clients, clients, 0.0)
    result = simulate_clients(requests, _pools(decode=_pool(2), placement=PLACEMENT))
    sent = result.serving.arrival_s
    finish = sent + result.serving.e2e_s
    for c in range(clients):
        mine = np.flatnonzero(requests.client == c)
        np.testing.assert_allclose(sent[mine[1:]], finish[mine[:-1]], rtol=0, atol=1e-9)
    assert (result.serving.e2e_s >= 0.033501 - 1e-9).all()  # never faster than alone


def test_send_times_follow_waves() -> None:
    # Client 0 sends 0 (at 0), then 1 and 2 together once 0 is done (think 0.5), then 3 once both
    # 1 and 2 are done; client 1 sends 4 at 0.2 and 5 a think after it.
    requests = Requests(
        np.full(6, 10, dtype=np.int64), np.full(6, 3, dtype=np.int64),
        np.full(6, 3, dtype=np.int64), np.array([0.0, np.nan, np.nan, np.nan, 0.2, np.nan]),
        np.array([0, 0, 0, 0, 1, 1], dtype=np.int64), closed_loop=True,
        think_s=np.full(6, 0.5), joins_previous=np.array([False, False, True, False, False, False]),
    )  # fmt: skip
    finish = np.array([1.0, 3.0, 4.0, 9.0, 2.0, 5.0])
    assert send_times(requests, finish).tolist() == [0.0, 1.5, 1.5, 4.5, 0.2, 2.5]


def test_sessions_run_on_two_pools(capsys: pytest.CaptureFixture[str]) -> None:
    # Multi-turn sessions arriving at a rate: each turn leaves a think time after the previous
    # one ends (the client loop replayed over the finishes); the run settles and serves them all.
    args = ["sweep", "llama-3.1-8b", "--disagg", "1p:tp1,1d:tp1", "--workload",
            "multiturn-chat", "--rate", "2", "--num-requests", "60", "--concurrency", "16",
            "--format", "json"]  # fmt: skip
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["disaggregated"]["kv_transfer"]["transfers"] == 60


def test_a_check_spec_runs_clients_on_two_pools(tmp_path: PathLib) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "d"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\n'
        'disagg = "1p:tp1,1d:tp1"\n[scenario.workload]\nisl = 500\nosl = "lognormal:200:800"\n'
        'arrival = "clients"\nclients = 8\nnum_requests = 100\nconcurrency = 8\n'
        "[scenario.expect]\ntpot_p99_max_s = 1.0\n"
    )
    assert main(["check", str(spec)]) == 0


def test_a_one_token_output_finishes_at_its_prefill_in_every_per_request_array() -> None:
    # Request 0 (one output token) ends with its 10 ms prefill and is never transferred;
    # request 1, sent at 1 s, takes 33.501 ms as above (10 ms prefill, 3.501 ms transfer, two
    # 10 ms decode steps). Every per-request array has both, in input order (a steady-state
    # window indexes them together).
    timed = Requests(
        np.full(2, 10, dtype=np.int64), np.array([1, 3]), np.array([1, 3]), np.array([0.0, 1.0])
    )
    serving = _pools(decode=_pool())(timed).serving
    assert serving.arrival_s.tolist() == [0.0, 1.0]
    assert serving.finish_s.tolist() == pytest.approx([0.01, 1.033501])
    assert len(serving.output_tokens) == len(serving.finish_s) == 2
