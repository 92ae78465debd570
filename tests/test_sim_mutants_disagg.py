"""The two-pool result's per-request figures, by hand (a mutation survivor of
`benchmarks/mutation.py --packages sim`, seed 3: capcliff/sim/disagg/pools.py `_end_to_end`)."""

from __future__ import annotations

import numpy as np

from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.disagg.kv_transfer import Fabric, Path, Placement
from capcliff.sim.disagg.pools import Pool, simulate_disaggregated
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model


def test_a_request_that_never_reaches_a_decode_replica_has_none() -> None:
    # Two 10-token prompts, outputs 1 and 5, both at 0 s. The first ends with its prefill (its
    # only token) and moves nothing: decode replica -1. The second moves to decode replica 0
    # (the first in round-robin order).
    pool = Pool(
        model=constant_model(0.01),
        capacity=KVCapacity(blocks=100, block_size=4),
        config=SimConfig(policy="vllm", max_num_seqs=8, max_num_batched_tokens=64),
        replicas=1,
        gpus_per_replica=4,
    )
    decode = Pool(pool.model, pool.capacity, pool.config, replicas=2, gpus_per_replica=4)
    requests = Requests(
        np.array([10, 10]), np.array([1, 5]), np.array([1, 5]), np.array([0.0, 0.0])
    )
    result = simulate_disaggregated(
        requests,
        np.array([1e9, 1e9]),
        prefill=pool,
        decode=decode,
        fabric=Fabric(Path("nvlink", 100e9, 1e-6), Path("rdma", 50e9, 5e-6), domain_gpus=8),
        placement=Placement((range(0, 4),), (range(4, 8), range(8, 16))),
    )
    assert result.transferred.tolist() == [1]
    assert result.serving.replica.tolist() == [-1, 0]
