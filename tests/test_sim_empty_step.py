"""`thrash.empty_step`: the step a replica takes when every running request was given up (no
mutation sample's tests reached it: sim seed 433). Each value below follows from its docstring:
a step that computes nothing and takes no time."""

from __future__ import annotations

from capcliff.sim.config import PreemptionMode
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.thrash import empty_step
from capcliff.sim.simulate import make_policy
from tests.simtools import random_case, toy_model


def _waiting_replica(recv_every: int) -> ReplicaSim:
    requests, capacity, config = random_case(0, "vllm", PreemptionMode.RECOMPUTE, "batch")
    sim = ReplicaSim(requests, toy_model(), capacity, config, make_policy(config, requests))
    sim.take_arrivals(0.0)  # a batch: every request arrived at 0 s and waits
    sim.now_s, sim.step, sim.recv_every = 2.5, 7, recv_every
    return sim


def test_an_empty_step_is_one_step_of_no_time_at_now_with_nobody_running() -> None:
    sim = _waiting_replica(recv_every=1)
    waiting = len(sim.waiting)
    assert waiting > 0
    empty_step(sim)
    rec = sim.rec
    assert (sim.step, sim.last_start_s, sim.now_s) == (8, 2.5, 2.5)
    assert (rec.steps, rec.busy_s, rec.scheduled_tokens, rec.events) == (1, 0.0, 0, 1)
    times, used, running, queued, hbm = (list(s) for s in rec.series)
    assert (times, used, running, queued, hbm) == ([2.5], [0.0], [0.0], [float(waiting)], [0.0])
    assert rec.first_saturation == (7, 2.5)  # the KV ran out in step 7, which ended at 2.5 s


def test_an_empty_step_counts_towards_the_receive_interval_as_a_decode_step() -> None:
    plain, every = _waiting_replica(recv_every=1), _waiting_replica(recv_every=4)
    plain.recv_counter = every.recv_counter = 2
    empty_step(plain)
    empty_step(every)
    assert plain.recv_counter == 2  # no receive interval: nothing counted
    assert every.recv_counter == 3  # one step without a prefill counts 1
