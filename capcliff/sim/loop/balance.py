"""TensorRT-LLM's attention-DP balance: context requests wait until every rank has one.

With `attention_dp_config.enable_balance`, TensorRT-LLM's executor calls `_balance_adp_requests`
in every iteration's `_schedule` (tensorrt_llm/_torch/pyexecutor/py_executor.py, releases
1.1-1.2; later releases keep the same counters in the scheduler's `balance_adp_requests`). From
the counts all-gathered over the attention-DP ranks, each iteration:

- every rank has a free seat (generation requests < max_batch_size) and a context request: the
  wait counter restarts; if every rank also has a generation request, the context requests wait
  until a second counter has counted `batching_wait_iters` iterations (then it restarts), else
  they run now;
- otherwise the wait counter goes up by one (in iterations without any context request too) and
  the context requests wait, unless it has reached `timeout_iters` or some rank has no
  generation request: then it restarts and they run.

Every rank reaches the same verdict (the counts are all-gathered), so all wait or all run. A rank
with no request at all runs a dummy generation request (`_pad_attention_dp_dummy_request`:
expected_num_active_requests is at least the busiest rank's count), so an idle rank counts as
having one; a whole group idle runs no iteration (the executor waits for a request), so nothing
is counted then.

In the simulator a rank has a context request when its queue is not empty (a request its KV
cache would refuse counts too), and a generation request when it decodes one or holds nothing at
all. A rank that waits admits nobody that step; a prefill already under way goes on (TensorRT-LLM
would hold its next chunk too; its PyTorch backend chunks no prefill unless asked).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState

# A verdict that stands while nothing happens has no bound of its own on a run of decode steps.
UNBOUNDED = 2**62

# The branches of `_balance_adp_requests` a verdict was taken in (`BalanceGate.advance`).
_BATCHING = 0  # all have a seat, a context and a generation request: wait for the batching count
_RUN_ALL = 1  # all have a seat and a context request: they run, both counters restart
_RUN_NO_GEN = 2  # all have a seat and a context request, some rank no generation: they run
_NO_GEN = 3  # otherwise, some rank without a generation request: they run, the count restarts
_TIMEOUT = 4  # otherwise, the count reaches timeout_iters: they run, the count restarts
_COUNT = 5  # otherwise: the count goes up by one; the context requests wait


class BalanceGate:
    """The two counters of `_balance_adp_requests` for one attention-DP group of `group` ranks
    (ranks given no request included) and the verdict for the next iteration.

    `decide` gives the verdict for the group's next step and how many steps it stands for while
    no rank's queue, decoding count or seats change (a run of identical decode steps); `advance`
    counts the steps run under it.
    """

    def __init__(self, timeout_iters: int, batching_wait_iters: int, group: int) -> None:
        self.timeout, self.batching, self.group = timeout_iters, batching_wait_iters, group
        self.waited = 0  # adp_ctx_waiting_iters_count
        self.batched = 0  # adp_ctx_batching_wait_iters_count
        self.branch = _COUNT

    def decide(self, ranks: Sequence[ReplicaState]) -> tuple[bool, int]:
        """(whether the context requests wait in the next step, the steps this verdict stands
        for, at least 1)."""
        ctx = [bool(r.waiting) for r in ranks]
        gen = [r.cohort.count > 0 or not (r.running or r.waiting) for r in ranks]
        seats = all(r.cohort.count < r.config.max_num_seqs for r in ranks)
        all_gen = all(gen)  # ranks given no request are idle: a dummy generation request each
        if seats and all(ctx) and len(ranks) == self.group:
            if all_gen and self.batched < self.batching:
                self.branch = _BATCHING
                return True, self.batching - self.batched
            self.branch = _RUN_ALL if all_gen else _RUN_NO_GEN
            # once the batching count restarts, a context request still queued waits again
            return False, 1 if all_gen and self.batching > 0 else UNBOUNDED
        if not all_gen:
            self.branch = _NO_GEN
            return False, UNBOUNDED
        if not any(ctx):  # nothing to hold: the count runs on (and restarts at the timeout)
            self.branch = _COUNT
            return False, UNBOUNDED
        if self.waited + 1 >= self.timeout:
            self.branch = _TIMEOUT
            return False, 1
        self.branch = _COUNT
        return True, self.timeout - 1 - self.waited

    def advance(self, steps: int) -> None:
        """`steps` steps ran under the latest verdict (no more than it stands for)."""
        branch = self.branch
        if branch == _BATCHING:
            self.waited, self.batched = 0, self.batched + steps
        elif branch == _RUN_ALL:
            self.waited, self.batched = 0, 0
        elif branch in (_RUN_NO_GEN, _NO_GEN, _TIMEOUT):
            self.waited = 0
        else:  # _COUNT: +1 a step, back to 0 on reaching the timeout
            self.waited = (self.waited + steps) % max(self.timeout, 1)
