"""One evaluation of a deployment under a load, shared by `sweep`, `plan`, `check` and the fleet.

Owns: a layout's replica models (KV capacity, step times: `replica_models`), simulation points
and the analytic and simulated cliff (`solver`), the steady state of a run with its confidence
and the stopping rule (`steady_state`, `steady_point`), the online load at any size (`online_load`,
`session_load`), what one replica carries (`capacity`, `cap_base`, `rate_search`) and all of a
layout's DP replicas together (`dp_group`), every layout's capacity (`layout_capacity`) and the
sweet spot (`sweet_spot`).
May import: the root of `capcliff.analysis` and the packages below analysis.
"""
