"""Answers built from simulations: sweeps, cliffs, sweet spots, layout plans, engine flags.

Owns: resolving a deployment into simulator inputs, the analytic and simulated cliff, the sweet
spot, the `sweep` and `plan` result types, the layout ranking and recommendation, and the engine
command lines.
May import: `capcliff.sim`, `capcliff.calibrate`, `capcliff.perf`, `capcliff.memory`,
`capcliff.catalog` and the top-level modules.
"""
