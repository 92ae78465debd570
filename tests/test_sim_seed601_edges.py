"""Edges the seed-601 mutation sample (`benchmarks/mutation.py --packages sim --seed 601`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.sim.reuse.prefix_reuse import PrefixReuse
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.length_spec import parse_output_lengths
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model, fixed_batch


def test_an_offload_tier_never_serves_a_prompts_last_token() -> None:
    # One request, an 8-token prompt, 4-token blocks, one DRAM tier of 100 blocks. It releases
    # 8 tokens at t = 0: write-through copies its 8 // 4 = 2 full blocks to the tier, and HBM
    # caches the same 2. Evicting every unreferenced block (free 0) leaves HBM empty.
    # Looked up again with its 8 tokens: the last token is always computed (its logits), so at
    # most (8 - 1) // 4 = 1 block may be reused: HBM hits 0 (revives 0), the tier reaches
    # block 1. Loading it: 1,000 B/token x 4 = 4,000 B at 4e6 B/s = 1 ms, no latency, beats
    # recomputing 4 tokens at 1 ms each (4 ms), so the reach is 1 and admitting it loads 1 ms.
    # (Seed 601's tier limit `(tokens - 1) * block_size` reached both blocks: 2 ms of loads
    # and no token left to compute.)
    dram = KVTier("cpu", 400, read_bytes_per_s=4e6, write_bytes_per_s=4e6, latency_s=0.0)
    reuse = PrefixReuse(
        fixed_batch(1, 8, 2), 4, radix=False, tiers=(dram,), kv_bytes_per_token=1000.0,
        recompute_s_per_token=1e-3,
    )  # fmt: skip
    reuse.release(0, 8, 0.0, finished=False)
    reuse.settle(0, 1.0)
    assert reuse.lookup(0, 8) == (1, 0, 0)
    reuse.admit(0, 8, 2.0, resumed=True)
    assert reuse.take_load_s() == pytest.approx(1e-3)


@pytest.mark.parametrize(("read", "write"), [(1.0, 1.0), (0.5, 0.5), (1.0, 1e9), (1e9, 1.0)])
def test_an_offload_tier_of_any_positive_bandwidth_is_accepted(read: float, write: float) -> None:
    # "bandwidths > 0": a link of 1 B/s or less is absurdly slow, not invalid. The refusals of
    # 0 and below are in test_sim_seed433_edges.
    # (Seed 601's `read_bytes_per_s <= 1` refused a 1 B/s read link.)
    tier = KVTier("cpu", 10, read, write, 0.0)
    assert (tier.read_bytes_per_s, tier.write_bytes_per_s) == (read, write)


@pytest.mark.parametrize("spec", ["histogram:100*0,300*3", "histogram:100*-1,300*3"])
def test_an_inline_histogram_count_of_zero_or_less_is_refused(spec: str) -> None:
    # A length is drawn in proportion to its count: a count must be > 0, as a `hist:FILE` row's
    # must ("count must be a number > 0"). `--osl histogram:...` is typed by hand, so the inline
    # form checks it too, naming the field. (Seed 601's `c >= 0` took the count of 0.)
    with pytest.raises(InputError, match=r"^osl: write histogram:"):
        parse_output_lengths(spec)


def test_a_landed_request_of_one_output_token_is_refused() -> None:
    # A landed request arrives with its prompt's KV and its first token already generated (by
    # the prefill pool): with 1 output token there is nothing left to decode, so a decode
    # replica of landed requests refuses it; 2 tokens (one to decode) are accepted. (The
    # two-pool run sends only outputs > 1 here. Seed 601's `< 1` took the one-token output.)
    config = SimConfig(policy="vllm")

    def landed(outputs: list[int]) -> ReplicaSim:
        out = np.array(outputs)
        requests = Requests(np.array([6, 6]), out, out, np.zeros(2))
        rule = make_policy(config, requests)
        return ReplicaSim(
            requests, constant_model(1e-3), KVCapacity(100, 1), config, rule, landed=True
        )

    assert landed([2, 2]).generated == [1, 1]
    with pytest.raises(InputError, match="landed requests: each needs an output of >= 2 tokens"):
        landed([2, 1])
