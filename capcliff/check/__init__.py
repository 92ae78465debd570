"""Sizing checks for CI: a TOML spec of scenarios -> assertions -> a report.

Owns: the spec model and its validation, running each scenario through `analysis`, the report
type, JUnit XML and Markdown output, baselines.
May import: `capcliff.analysis` and every package below it.
"""
