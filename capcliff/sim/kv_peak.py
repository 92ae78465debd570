"""The kv-aware rule's projected peak of the running set plus one candidate, from a table of the
running set built once.

`policies.projected_peak_blocks` sorts the decoding requests by remaining steps r (descending,
stable) and takes the largest T_i = sum_{k <= i} c_k + (i + 1)(r_i + B - 1) over positions i,
over B. The rule asks it of the running set with one candidate added, once per candidate, and a
running set is asked about more than once (every candidate of a step, the jump's look-ahead and
the step itself), so the sort and the sums are done once per running set here and each
candidate costs a binary search.

Adding one decoding candidate (context c, remaining r) to n sorted requests puts it after the j
requests with r_k >= r (the stable sort keeps the running set's ties first). Positions before j
keep their T; the candidate's is sum_{k < j} c_k + c + (j + 1)(r + B - 1); each later position i
gains c + r_i + B - 1 (one more sum term and one more request alive). So the largest T is the
largest of: the prefix maximum of T up to j - 1, the candidate's T, and the suffix maximum of
T_i + r_i from j plus c + B - 1. All in integers, which the float sums of
`projected_peak_blocks` hold exactly (every figure is far below 2^53): the same peak, bit for bit.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PeakTable:
    """A running set's decoding requests, sorted for `peak_with` (token counts)."""

    neg_remaining: list[int]  # -r_k in ascending order (r_k descending, ties in set order)
    cum_context: list[int]  # sum of c_k up to each position
    prefix_max: list[int]  # max of T up to each position
    suffix_max: list[int]  # max of T_i + r_i from each position on
    block_size: int

    @classmethod
    def of(cls, context: IntArray, remaining: IntArray, block_size: int) -> PeakTable:
        """The table of requests with `context` tokens of KV and `remaining` steps to go."""
        order = np.argsort(-remaining, kind="stable")
        r = remaining[order].astype(np.int64)
        cum = np.cumsum(context[order].astype(np.int64))
        tokens = cum + np.arange(1, len(r) + 1, dtype=np.int64) * (r + block_size - 1)
        suffix = np.maximum.accumulate((tokens + r)[::-1])[::-1]
        return cls(
            (-r).tolist(), cum.tolist(), np.maximum.accumulate(tokens).tolist(),
            suffix.tolist(), block_size,
        )  # fmt: skip

    def peak(self) -> int:
        """max T over the set alone (0 when empty), tokens."""
        return self.prefix_max[-1] if self.prefix_max else 0

    def peak_with(self, context: int, remaining: int) -> int:
        """max T over the set and one more decoding request, tokens."""
        j = bisect_right(self.neg_remaining, -remaining)  # requests with r_k >= remaining
        size = self.block_size
        best = (self.cum_context[j - 1] if j else 0) + context + (j + 1) * (remaining + size - 1)
        if j:
            best = max(best, self.prefix_max[j - 1])
        if j < len(self.suffix_max):
            best = max(best, self.suffix_max[j] + context + size - 1)
        return best
