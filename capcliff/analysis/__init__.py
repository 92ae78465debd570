"""Answers built from simulations, in four layers that read top-down.

- `disagg`: prefill and decode on separate pools: the notation, the two-pool sweep, the split
  search, the comparison with aggregated serving and the cheapest cluster.
- `plan`: `capcliff plan`: the batch and online plans, the layout ranking and recommendation,
  fleet sizing, what prefix caching and offload are worth, and the engine command lines.
- `sweep`: `capcliff sweep`: every concurrency of every layout and output length, and the fit of
  step-time terms to a benchmark sweep.
- `evaluate`: the one steady-state evaluation of a deployment under a load that every command
  shares: the replica's models, the simulation points, the steady state and its stopping rule,
  the capacity of a replica and of each layout, the cliff and the sweet spot.

At the root, below all four: the deployment (user settings resolved against a model and a GPU:
the settings, what they refuse, a calibration applied to them, the max_model_len rule),
the workload choice, the engine flags, offload tiers and the process pool.
Each layer imports only the layers below it and the root.
May import: `capcliff.sim`, `capcliff.calibrate`, `capcliff.perf`, `capcliff.memory`,
`capcliff.catalog` and the top-level modules.
"""
