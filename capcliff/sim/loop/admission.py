"""What an admission rule sees of a replica, at a given step with a given number of free blocks.

The replica asks its policy about the head of the queue in two situations: while running a step
exactly (the state is the replica's own, as it stands), and while planning a jump over identical
decode steps
(`capcliff.sim.loop.fast_forward`), where the question is "would the head be admitted at
the start of step s if f blocks were free?". Both go through `AdmissionView`, which reads the
replica but never changes it, so asking "what if" needs no mutate-and-restore.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from capcliff.sim.policies import Candidate, RunningState

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState


class AdmissionView:
    """The `ReplicaView` of `sim` at the start of `step` with `free` free blocks (after that
    step's allocations so far)."""

    __slots__ = ("_free", "_sim", "_step")

    def __init__(self, sim: ReplicaState, *, step: int, free: int) -> None:
        self._sim, self._step, self._free = sim, step, free

    @property
    def free_blocks(self) -> int:
        """Free blocks at the moment of the decision."""
        return self._free

    @property
    def total_blocks(self) -> int:
        """Blocks of the replica's KV cache."""
        return self._sim.total

    @property
    def block_size(self) -> int:
        """Tokens per block."""
        return self._sim.block_size

    @property
    def new_token_ratio(self) -> float:
        """SGLang's new-token ratio now (0 for other policies): `ReplicaState.new_token_ratio`,
        read once per candidate SGLang's rule is asked about."""
        sim = self._sim
        ratio = sim.rule.ratio
        return ratio.value(sim.ratio_base, sim.ratio_steps) if ratio else 0.0

    def full_length_blocks(self) -> int:
        """Sum of ceil((prompt + max_output) / B) over running requests admitted before this
        step."""
        return self._sim.full_blocks_sum

    def running_state(self) -> RunningState:
        """Decoding requests (as of `step`) and the one in prefill, as arrays."""
        return running_state(self._sim, self._step)

    def future_tokens(self, clip: int) -> int:
        """Sum of min(max_output - generated, clip) over `running_state`. Where no request of
        the replica may generate more than `clip` tokens, no term is clipped (generated >= 0),
        and the sum is the running set's max outputs less its generated tokens, both kept as
        requests come and go (`ReplicaState._decoding_sums`' sums): no arrays. SGLang's rule
        asks it for every request a step admits and every run of decode steps. Where some may
        generate more, the cohort keeps which members are still clipped
        (`DecodeCohort.clipped_future`), and the request part way through its prefill is added
        on its own: no arrays either."""
        sim = self._sim
        x = sim.partial
        if sim.max_output_top > clip:
            total = sim.cohort.clipped_future(self._step, clip, sim.max_output)
            if x is None:
                return total
            return total + min(sim.max_output[x] - sim.generated[x], clip)
        generated = sim.cohort.generated_sum(self._step)
        return sim.max_output_sum - (generated if x is None else generated + sim.generated[x])


def running_state(sim: ReplicaState, step: int) -> RunningState:
    """The running set of `sim` at the start of `step`: the cohort advanced to `step`, then the
    request part way through its prefill (flagged `prefilling`). Kept while neither the step,
    the cohort (`DecodeCohort.changes`) nor the partial request changes: SGLang's rule reads it
    once for every request a step admits (837,389 builds for 119,836 steps of a short-request
    plan, 60 % of its time), and the arrays are read, never written."""
    partial = sim.partial
    key = (
        (step, sim.cohort.changes, -1, 0)
        if partial is None
        else (step, sim.cohort.changes, partial, sim.generated[partial])
    )
    memo = sim.running_memo
    if memo is not None and memo[0] == key:
        return memo[1]
    state = _running_state(sim, step)
    sim.running_memo = (key, state)
    return state


def _running_state(sim: ReplicaState, step: int) -> RunningState:
    members = sim.cohort.members()
    generated = sim.cohort.generated_base[members] + step
    partial = sim.partial
    prefilling = np.zeros(len(members) + (partial is not None), dtype=bool)
    if partial is not None:
        members = np.append(members, partial)
        generated = np.append(generated, sim.generated[partial])
        prefilling[-1] = True
    req = sim.requests
    state = RunningState(
        req.input_tokens[members],
        generated.astype(np.int64),
        req.output_tokens[members],
        req.max_output_tokens[members],
        prefilling,
    )
    for array in (state.prompt_tokens, state.generated_tokens, state.output_tokens,
                  state.max_output_tokens, state.prefilling):  # fmt: skip
        array.flags.writeable = False  # kept for the step's other readers (`running_state`)
    return state


def candidate(sim: ReplicaState, i: int, budget: int, *, free: int) -> Candidate:
    """Waiting request i as the admission rule sees it, with `budget` tokens left in the step
    and `free` blocks free (counting cached unreferenced ones).

    A swapped-out request comes back with its KV (one decode token, the blocks of kv + 1 tokens);
    otherwise it needs a prefill of prompt + generated tokens, of which `budget` fit this step.
    With a prefix cache, the cached blocks it hits are skipped (they cost a block each only if
    no running request references them); the cache is first settled to `free`, a level the
    replica reaches in any case before it admits (the step's decode blocks are allocated
    first).
    """
    kv, prompt, generated = sim.host_kv[i], sim.prompt[i], sim.generated[i]
    size = sim.block_size
    if kv:
        return Candidate(
            prompt, generated, sim.output[i], sim.max_output[i], kv, 1, -(-(kv + 1) // size)
        )
    todo = prompt + generated
    reuse = sim.reuse
    if reuse is None:
        cached = retained_tokens(sim, i, todo, free) if sim.preemptions[i] else 0
        chunk = min(todo - cached, budget)
        blocks = -(-(todo if sim.whole_prompt_blocks else cached + chunk) // size)
        return Candidate(
            prompt, generated, sim.output[i], sim.max_output[i], 0, chunk, blocks, cached
        )
    reuse.settle(free, sim.now_s)
    reach, hit, revive = reuse.lookup(i, todo)
    cached = reach * size  # HBM hits and blocks loaded from offload tiers
    chunk = min(todo - cached, budget)
    blocks = -(-(cached + chunk) // size) - hit + revive
    return Candidate(prompt, generated, sim.output[i], sim.max_output[i], 0, chunk, blocks, cached)


def retained_tokens(sim: ReplicaState, i: int, todo: int, free: int) -> int:
    """Tokens of waiting request i's KV (of `todo` to prefill) its recompute skips with `free`
    blocks free: its blocks still cached since it was preempted (`RetainedKV`), else 0."""
    retained = sim.retained
    if retained is None:
        return 0
    return retained.hit_blocks(i, todo, free) * sim.block_size


def head_admissible(
    sim: ReplicaState, cand: Candidate, admitted: list[Candidate], *, step: int, free: int
) -> bool:
    """The policy's verdict on the head of the queue at the start of `step` with `free` free
    blocks (an idle replica always admits). Reads the replica without changing it, except that an
    event-triggered policy's refusal is remembered until the running set or the queue changes
    (`dirty`)."""
    if not sim.running:
        return True
    if sim.rule.event_triggered and not sim.dirty:
        return False
    ok = sim.rule.admit(AdmissionView(sim, step=step, free=free), cand, admitted)
    if not ok:
        sim.dirty = False
    return ok
