"""The continuous-batching simulator: workloads in, per-request timings and KV traces out.

Owns: workloads (arrivals, lengths, presets, traces), admission and preemption policies named for
each engine, the event-driven replica loop with its closed-form decode segments, DP routing, and
the result types. Pure: no printing, no file I/O, randomness passed in.
May import: `capcliff.perf`, `capcliff.memory`, `capcliff.catalog` and the top-level modules.
"""
