"""`capcliff sweep`: each layout and output length simulated across concurrency (`report`), the
KV and hit-rate timelines (`timelines`), and the fit of step-time terms to a benchmark's points
(`step_fit`).
May import: `capcliff.analysis.evaluate`, the root of `capcliff.analysis` and below.
"""
