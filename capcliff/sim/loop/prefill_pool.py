"""A prefill pool's replica: prompts that leave at their first token, steps decided in locals.

A prefill replica of a disaggregated deployment serves each request's prompt and first token,
then lets it go
(`capcliff.sim.disagg.pools`): every output is one token, so nobody decodes there, the
decode cohort stays empty, and every step is a prefill step (the chunk of the request part way
through its prefill, then admissions FCFS). Under a rule that admits the head of the queue when the
blocks of its first chunk fit (vLLM V1, TensorRT-LLM MAX_UTILIZATION), `PrefillReplicaSim`
decides such a step with the replica's lists in local variables (`admit_step`'s admission loop),
without a `Candidate` and an `AdmissionView` per request, and prices it (its time and the bytes
it reads) once per distinct load (equal prompts make equal steps; `StepTimeModel.step_time_s` and
`hbm_bytes` are pure functions of the load).
The step is the one `ReplicaSim.begin_step` decides, to the bit: the same chunk, admissions,
blocks and load. Anything else takes the general path before changing anything: a step that needs
a victim, a head refused while the replica is idle (an idle replica admits it whatever its
blocks), another rule, a prefix cache, vLLM V0's prefill-only steps, a non-empty cohort.
"""

from __future__ import annotations

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.admit_step import _admit as admit_fitting
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.step_plan import Load, PlannedStep, step_load
from capcliff.sim.policies import (
    Policy,
    trtllm_max_util_admit,
    vllm_admit,
    vllm_first_chunk_admit,
)
from capcliff.sim.traffic.workload import Requests

# Admission rules whose verdict is "the blocks of the first chunk fit" (the rules `admit_step`
# decides in locals).
FITS_RULES = (vllm_admit, vllm_first_chunk_admit, trtllm_max_util_admit)


class PrefillReplicaSim(ReplicaSim):
    """`ReplicaSim` of a prefill pool (outputs of one token), its steps decided in locals."""

    RECEIVES_EVERY_STEP = True  # its prompts come from the router, not a receive interval

    def __init__(
        self,
        requests: Requests,
        model: StepTimeModel,
        capacity: KVCapacity,
        config: SimConfig,
        rule: Policy,
    ) -> None:
        """As `ReplicaSim` (not landed)."""
        super().__init__(requests, model, capacity, config, rule)
        self.exclusive_prefill = False  # nobody decodes here to wait out a prefill step
        self.fast = (
            rule.admit in FITS_RULES
            and not rule.event_triggered
            and self.reuse is None
            and not self.prefill_only
        )
        # step_time_s and hbm_bytes by load (pure functions of it)
        self.step_s: dict[Load, float] = {}
        self.bytes_read: dict[Load, float] = {}

    def run_step(self) -> None:
        """One engine step, exactly (priced once per distinct load)."""
        planned = self.begin_step()
        compute_s = self.step_s.get(planned.load)
        if compute_s is None:
            compute_s = self.step_s[planned.load] = self.model.step_time_s(*planned.load)
        self.finish_step(planned, compute_s)

    def step_bytes(self, load: Load) -> float:
        """`ReplicaSim.step_bytes`, once per distinct load (also in lockstep, where
        `LockstepSim` prices the step)."""
        read = self.bytes_read.get(load)
        if read is None:
            read = self.bytes_read[load] = super().step_bytes(load)
        return read

    def begin_step(self) -> PlannedStep:
        """`ReplicaSim.begin_step`, in locals when the cohort is empty and the rule fits."""
        planned = self._prefill_step() if self.fast and not self.cohort.count else None
        return super().begin_step() if planned is None else planned

    def _prefill_step(self) -> PlannedStep | None:
        """The next step with nobody decoding, or None (nothing changed) if it needs a victim or
        the rule would refuse the head of an idle replica's queue."""
        budget, x, idle = self.config.max_num_batched_tokens, self.partial, not self.running
        chunk_x = need_x = 0
        if x is not None:
            chunk_x, need_x = self._partial_plan(budget)
            if need_x > self.free:
                return None  # a victim first (resolve_exhaustion)
        admitted, blocked, free, swap_in = admit_fitting(self, budget - chunk_x, self.free - need_x)
        if idle and blocked and not admitted:
            return None  # an idle replica admits its head whatever its blocks
        self.free = free
        self.swap_out_tokens, self.swap_in_tokens = 0, swap_in
        prefills = admitted
        if x is not None:
            self.held[x] += need_x
            if chunk_x:
                prefills = [*admitted, (x, self.context[x], chunk_x)]
        load = step_load(0, self.cohort.context_sum(self.step), prefills)
        swap_s = self.capacity.swap_seconds(swap_in) if swap_in else 0.0
        return PlannedStep(chunk_x, admitted, False, blocked, load, swap_s + 0.0)
