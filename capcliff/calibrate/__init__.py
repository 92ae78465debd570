"""Calibration: engine start-up logs -> fitted overhead terms, and the calibration file.

Owns: start-up log parsers (vLLM V0/V1, SGLang, TensorRT-LLM), the comparison of a log with
capcliff's prediction, and reading and writing calibration files.
May import: `capcliff.memory`, `capcliff.catalog` and the top-level modules.
"""
