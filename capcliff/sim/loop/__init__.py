"""The event loop of one replica: `ReplicaSim` and the parts it calls each step (admission,
victim choice, prefill-only steps, fast-forwarding over decode runs and thrash cycles), the
classes built on it for disaggregated pools and attention-DP ranks, and the per-step recorder.
The modules named in `capcliff.sim.core.CORE_MODULES` are compiled as a group when asked for;
the sources here are the reference. Imports `capcliff.sim.traffic`, `capcliff.sim.reuse` and the
engine rules of `capcliff.sim.policies` and `capcliff.sim.config`."""
