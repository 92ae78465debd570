"""Disaggregated serving: prefill and decode on separate pools of GPUs.

Owns: the `--disagg` notation and pools (`pools`), the two-pool report (`report`) and sweep
(`sweep`), the split search (`plan`), the aggregated side of the comparison and the winner
(`compare`), the steady state at a rate (`online`), the engine settings (`flags`), the options
on each GPU type with their prices (`options`) and the cheapest cluster (`fleet`,
`fleet_reasons`). Dollars come from `plan.fleet`, not a second cost formula.
May import: `capcliff.analysis.plan`, `capcliff.analysis.sweep`, `capcliff.analysis.evaluate`,
the root of `capcliff.analysis` and below.
"""
