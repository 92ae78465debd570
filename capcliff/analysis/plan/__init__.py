"""`capcliff plan`: which layout, which admission cap, how many replicas and dollars.

Owns: the plan's inputs and result types (`inputs`, `types`), the offline batch plan (`batch`)
and its ranking and reasons (`advice`), the online plan (`online`, `online_rows`), fleet sizing
(`fleet`), what would meet an SLO nothing meets (`feasibility`), what prefix caching and offload
are worth (`reuse_advice`, `online_reuse`) and the engine command lines (`commands`).
May import: `capcliff.analysis.sweep`, `capcliff.analysis.evaluate`, the root of
`capcliff.analysis` and below.
"""
