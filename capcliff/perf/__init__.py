"""Step times: how long one engine step takes for a batch on a layout.

Owns: the roofline step-time model (HBM bytes and FLOPs against efficiencies), communication
(all-reduce, pipeline sends), per-step overheads.
May import: `capcliff.memory`, `capcliff.catalog` and the top-level modules.
"""
