"""Catalogs and their inputs: model cards, hardware specs, HF configs, and the layouts of a GPU set.

Owns: the pydantic specs of catalog files, `config.json` -> `Architecture`, loading and
validating the shipped catalogs, and `Layout` (DP x TP x PP x EP) naming, enumeration and validity.
May import: `capcliff.units`, `capcliff.errors`, `capcliff.files`.
"""
