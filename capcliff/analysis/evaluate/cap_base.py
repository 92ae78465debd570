"""The base of the saturation search's cap grid, and when a session sample stops saturating.

- `steady_cliff`: the requests that fill the KV cache in steady state (modeled);
- `reserved_cliff`: the requests whose whole reservations fill it, the most a policy that
  reserves prompt + max output at admission (TensorRT-LLM GUARANTEED_NO_EVICT) runs at once;
- `throughput_knee`: the decode batch past which more concurrency adds latency, not throughput
  (the step-time model);
- `users_end`: when the users of a session saturation sample can no longer keep the cap busy.
"""

from __future__ import annotations

import numpy as np

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity
from capcliff.sim.traffic.workload import FloatArray, IntArray, Requests

KNEE_SHARE = 0.9  # set: the knee is where decode reaches 90 % of its best tokens/s


def held_tokens(requests: Requests) -> float:
    """E_w[I + O/2]: the mean KV tokens a running request holds (see `steady_cliff`)."""
    outputs = requests.output_tokens.astype(float)
    return float((outputs * (requests.input_tokens + outputs / 2)).sum() / outputs.sum())


def throughput_knee(steps: StepTimeModel, context_tokens: float, limit: int) -> int:
    """The smallest decode batch B <= limit whose tokens/s, B / step time at B sequences of
    `context_tokens` each, reaches KNEE_SHARE of the best up to `limit`. Past it the step turns
    compute-bound: more concurrency adds latency, not throughput. Modeled (the step-time model)."""
    batches = sorted({max(1, round(limit / 1.19**k)) for k in range(64)})

    def rate(b: int) -> float:
        return b / steps.step_time_s(b, b, b * context_tokens, b * context_tokens)

    rates = [rate(b) for b in batches]
    top = max(rates)
    return next(b for b, r in zip(batches, rates, strict=True) if r >= KNEE_SHARE * top)


def steady_cliff(requests: Requests, capacity: KVCapacity) -> int:
    """Blocks x B / (E_w[I + O/2] + B/2): requests that fill the KV cache in steady state.

    A running request holds its prompt plus what it has generated, I + g tokens, for the O steps
    it decodes, so its time-averaged KV is I + O/2; a long request is in the running set longer,
    in proportion to O, so the running set's mean is weighted by O: E_w[x] = sum(O x) / sum(O).
    Half a block per request is lost to rounding. Modeled; the simulation finds the real cliff.
    """
    per_request = held_tokens(requests) + capacity.block_size / 2
    return max(1, int(capacity.tokens // per_request))


def reserved_cliff(requests: Requests, capacity: KVCapacity) -> int:
    """Blocks / E[ceil((I + O_max) / B)]: requests whose reservations fill the KV cache.

    A policy that admits a request only when the blocks of its prompt plus its max output are
    free beside every running request's (TensorRT-LLM GUARANTEED_NO_EVICT,
    cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp, `getRemainingBlocksToCompletion`)
    holds at most this many requests whatever the cap, and never preempts: this is where its
    admission blocks, the steady-state cliff of such a policy (2026-12-08, h-user3: at the
    reasoning preset's 32,768-token max output, `steady_cliff`'s 461 for Qwen3-235B tp4-pp2 on
    TensorRT-LLM, where no more than 101 ever ran, put every cap of the grid past it).
    """
    size = capacity.block_size
    per_request = -(-(requests.input_tokens + requests.max_output_tokens) // size)
    return max(1, int(capacity.blocks // float(per_request.mean())))


def users_end(client: IntArray, finish_s: FloatArray, cap: int) -> float | None:
    """When the users of a session saturation sample can no longer keep `cap` requests running:
    each user sends its next request as its last ends, so while more than `cap` users have work
    the queue is not empty. That ends at the last finish of the (users - cap)-th user to run out
    of requests (None: never more users than `cap`). With sessions handed from a shared pool
    (sim/loop/clients.py) the labels say where each session started, not who ran it; users run
    out together when the pool empties, so this end is an approximation from the labels."""
    users = np.unique(client)
    if len(users) <= cap:
        return None
    last = np.full(int(users.max()) + 1, -np.inf)
    np.maximum.at(last, client, finish_s)
    ends = np.sort(last[users])
    return float(ends[len(users) - cap - 1])
