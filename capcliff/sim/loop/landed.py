"""A decode replica whose requests land with their prompt's KV: admissions folded into decode runs.

A request whose KV was computed by a prefill pool lands with its prompt's KV (b tokens) and its
first token. Its admission step computes one token after b (`ReplicaSim(landed=True)` admits it
like a swap-in that costs nothing to move), so the step prices exactly as a decode step with one
more sequence: `step_load` gives a 1-token chunk after b tokens 1 token, 1 sequence, b + 1
context and b + 1 attention pairs, which is what a decoding member of context b adds. Its
blocks also match: the admission takes ceil((b + 1) / B), a member holding ceil(b / B) takes one
more in that step exactly when b is a multiple of B.

So when the next step would be such a step (no request part way through its prefill, no
preemption, only landed requests admitted and the queue empty after them, no prefix cache),
`LandedReplicaSim` admits them as the engine would (the policy decides, as in `begin_step`) and
then adds them to the decode cohort at that step instead of running it alone: the step becomes
the first step of the next run of identical decode steps. Per landing this saves one event (the
admission step, its step-time call and its timeline record); every request's timings, block
counts, preemptions and step count stay those of the exact step (tests/test_disagg.py compares
with the step-by-step reference under every policy). When the queue is not empty after the
admissions (KV, the token budget or the seat limit refused the next one), the step is finished
exactly instead, as `ReplicaSim.run_step` would.

Attention-DP ranks in lockstep (`LockstepSim`) price each step together, so a rank cannot finish
an admission step on its own: there `fold_landing` folds only what it can decide before changing
anything, the one landed request waiting when the policy admits it (a refusal of the only candidate
changes nothing); the group's clock then gives the end of that first step,
the request's first token (`first_tokens_at`).
"""

from __future__ import annotations

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.fast_forward import fast_forward
from capcliff.sim.loop.prefill_pool import FITS_RULES
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.step_plan import PlannedStep, step_load
from capcliff.sim.loop.thrash import decode_run
from capcliff.sim.policies import Policy, VictimOrder
from capcliff.sim.traffic.workload import Requests


class LandedReplicaSim(ReplicaSim):
    """`ReplicaSim(landed=True)` whose landing admissions join the decode run they start."""

    def __init__(
        self,
        requests: Requests,
        model: StepTimeModel,
        capacity: KVCapacity,
        config: SimConfig,
        rule: Policy,
        *,
        in_lockstep: bool = False,
    ) -> None:
        """`requests` land with their prompt's KV and first token; `in_lockstep`: a
        `LockstepSim` runs this rank (its clock gives the folded requests' first tokens)."""
        super().__init__(requests, model, capacity, config, rule, landed=True)
        self.in_lockstep = in_lockstep
        self.folded: list[int] | None = None  # joined the run starting now (first token pending)
        # admits the head when its blocks fit, nothing else (vLLM V1, TensorRT-LLM MAX_UTILIZATION)
        self.fits_rule = rule.admit in FITS_RULES and not rule.event_triggered

    def take_arrivals(self, seen: float | None = None) -> None:
        """Queue what has arrived; a lone landing that the next step would admit joins the decode
        run at once (alone, this replica's own clock gives its first token)."""
        super().take_arrivals(seen)
        if not self.in_lockstep and self.fold_single_landing():
            self._first_tokens_now()

    def _first_tokens_now(self) -> None:
        """The first tokens of the requests folded into the run starting now: the end of its
        first step (the admission step, which emits token 2), on this replica's decode line."""
        cohort, folded = self.cohort, self.folded or []
        count = cohort.count
        # the decode line's step_s(0), to the bit, from the replica's table of its terms
        first_s = self.now_s + decode_run(self, count, cohort.context_sum(self.step) + count, 1)[2]
        for i in folded:
            self.first_token_s[i] = first_s
        self.folded = None

    def run_step(self) -> None:
        """One engine step; an admission of landed KV only is folded into the decode run."""
        if self.partial is not None or self.reuse is not None or not self.waiting:
            super().run_step()
            return
        cohort = self.cohort
        needs = cohort.needs_at(self.step)
        if needs > self.free or len(self.running) != cohort.count:
            super().run_step()  # victims first, or a request in prefill: the exact step
            return
        # begin_step with no request in prefill and no victim
        self.swap_out_tokens = self.swap_in_tokens = 0
        decoders = cohort.count
        self.free -= needs
        admitted, blocked = self._admit(self.config.max_num_batched_tokens - decoders, False)
        prompt, generated = self.prompt, self.generated
        landed_only = self.swap_in_tokens == 0 and all(
            chunk == 1 and before == prompt[i] + generated[i] - 1 for i, before, chunk in admitted
        )
        if self.waiting or blocked or not admitted or not landed_only:
            load = step_load(decoders, cohort.context_sum(self.step) + decoders, admitted)
            swap_s = self.capacity.swap_seconds(self.swap_in_tokens) if self.swap_in_tokens else 0.0
            planned = PlannedStep(0, admitted, False, blocked, load, swap_s)
            self.finish_step(planned, self.model.step_time_s(*load))
            return
        self.free += needs  # the run allocates this step's blocks, the new members' included
        self._join_cohort(admitted)
        self.folded = [i for i, _, _ in admitted]
        self._first_tokens_now()
        ran = fast_forward(self)
        assert ran, "a decode run starts at a folded admission"

    def fold_single_landing(self) -> bool:
        """Fold the admission of the one landed request waiting, if the next step would admit it
        and do nothing else; True if folded (its first token waits for `first_tokens_at`)."""
        cohort, waiting = self.cohort, self.waiting
        if (
            len(waiting) != 1
            or waiting[0] not in self.landed
            or self.partial is not None
            or self.reuse is not None
            or len(self.running) != cohort.count
        ):
            return False
        needs = cohort.needs_at(self.step)
        if needs > self.free:
            return False
        # as begin_step decides it: the one candidate is admitted, or nothing changes (a refusal
        # only marks the queue as decided, as head_verdict would)
        self.swap_out_tokens = self.swap_in_tokens = 0
        if self.fits_rule and self.running:
            admitted = self._admit_landing(needs)
        else:
            self.free -= needs
            admitted, _ = self._admit(self.config.max_num_batched_tokens - cohort.count, False)
            self.free += needs
        if not admitted:
            return False
        self._join_cohort(admitted)
        self.folded = [admitted[0][0]]
        return True

    def _admit_landing(self, needs: int) -> list[tuple[int, int, int]]:
        """`_admit` of the one landed request waiting, with others running, under a rule that
        admits it when its blocks fit after the step's `needs` decode blocks (`fits_rule`): one
        comparison instead of a `Candidate` and an `AdmissionView`. [(request, KV, 1)] or []."""
        if (
            self.config.max_num_batched_tokens <= self.cohort.count
            or len(self.running) >= self.max_num_seqs
        ):
            return []  # no token budget or no seat: nobody is asked
        i = self.waiting[0]
        kv = self.host_kv[i]  # its prompt's KV; the step computes one token after it
        blocks = -(-(kv + 1) // self.block_size)
        if blocks > self.free - needs:
            return []
        self.waiting.popleft()
        self.free -= blocks
        self.running[i] = None
        self.seq += 1
        self.admit_seq[i], self.held[i], self.context[i] = self.seq, blocks, kv
        self.landed.discard(i)
        return [(i, kv, 1)]

    def _join_cohort(self, admitted: list[tuple[int, int, int]]) -> None:
        """Make the requests just admitted decoding members from this step on (as `_end_step`
        and `_advance_all` would at its end), handing back the block each took for the token the
        step writes: the cohort allocates it."""
        size, step, cohort = self.block_size, self.step, self.cohort
        for i, before, _ in admitted:
            self.free += self.held[i] - -(-before // size)
            self.full_blocks_sum += -(-(self.prompt[i] + self.max_output[i]) // size)
            self.max_output_sum += self.max_output[i]
            self.host_kv[i] = 0
            cohort.add(
                i, context=before, generated=self.generated[i], output=self.output[i], step=step
            )
            if self.rule.victim_order is VictimOrder.FEWEST_GENERATED:
                cohort.track_victims(i, prompt=self.prompt[i], admit_seq=self.admit_seq[i])
        self.dirty = True


def fold_landing(sim: ReplicaSim) -> bool:
    """For `LockstepSim`: fold a lone landing into the decode run starting now (a
    `LandedReplicaSim` only); True if folded."""
    return isinstance(sim, LandedReplicaSim) and sim.fold_single_landing()


def folds_landings(sim: ReplicaSim) -> bool:
    """For `LockstepSim`: whether `sim` may fold landings (`first_tokens_at` then has work)."""
    return isinstance(sim, LandedReplicaSim)


def first_tokens_at(sim: ReplicaSim, end_s: float) -> None:
    """For `LockstepSim`: the first step of the run `sim` just settled ended at `end_s`: the
    first token of the landing folded into it."""
    if isinstance(sim, LandedReplicaSim) and sim.folded:
        for i in sim.folded:
            sim.first_token_s[i] = end_s
        sim.folded = None
