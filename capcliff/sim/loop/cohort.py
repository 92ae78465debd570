"""The decoding requests of a replica, advanced lazily: every member gains one token per step.

A member added at step s0 with context c0 and g0 generated tokens has, at the start of step s,
context c0 + (s - s0) and g0 + (s - s0) generated. So the cohort stores c0 - s0 and g0 - s0 and
never touches a member between events. A member needs a new block in step s when its context at
the start of s is a multiple of the block size B, i.e. when s = s0 - c0 (mod B): its phase. The
phase histogram gives the blocks the cohort needs over any k steps in O(B):
N(k) = (k // B) x n + (blocks needed in the first k mod B steps).

A step in which the members do not decode (vLLM V0's prefill-only step, `hold`) delays every one
of them by a step. The cohort counts those steps (`_lag`) and stores everything on its own clock,
t = step - lag, so a hold costs O(B): only the phase histogram, which callers index by step,
rotates.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from heapq import heapify, heappop, heappush  # names, not module attributes: cheaper
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from capcliff.sim.policies import victim_key

IntArray = npt.NDArray[np.int64]
_Key = TypeVar("_Key")  # a heap entry's sort key: (key, request, version)


class DecodeCohort:
    """Decoding requests (indexed 0 .. size-1) with lazily advancing context and output."""

    def __init__(self, size: int, block_size: int) -> None:
        self.block_size = block_size
        self.count = 0
        self.phase_counts = [0] * block_size
        self._generated_base = np.zeros(size, dtype=np.int64)  # g0 - s0 (see generated_base)
        self._unwritten: dict[int, int] = {}  # generated bases not yet in the array
        self._members: dict[int, None] = {}  # the running set, not a scan over all requests
        self._context_bases = [0] * size  # the same bases as Python ints, for scalar reads
        self._generated_bases = [0] * size
        self._context_base_sum = 0
        self._generated_base_sum = 0
        self._version = [0] * size
        # (last step) x size + request, one int per entry: ints compare faster than tuples, and
        # the order is the (last step, request) order. An entry is live while it is its
        # request's `_finish_key` (-1: none); a removed member's entry goes stale in place.
        self._size = size
        self._finish_key = [-1] * size
        self._finish_heap: list[int] = []
        self._victim_heap: list[tuple[tuple[int, int, int], int, int]] = []
        # SGLang's retraction order is kept as a heap only from the first question on
        # (`fewest_generated`): most runs never retract, and a push per admission cost more than
        # the rest of it. Until then a tracked member's prompt and admission number are kept,
        # with the version it was tracked at (-1: never).
        self._victims_built = False
        self._victim_prompt = [0] * size
        self._victim_seq = [0] * size
        self._tracked = [-1] * size
        self._prefix_phase = -1  # the phase whose prefix sums are cached (-1: none)
        self._prefix_sums: list[int] = []
        self._lag = 0  # steps held so far; the bases and heaps count t = step - lag
        # bumped by add, remove and hold: the members and their counts as of a step are the same
        # while it and the step are (`admission.running_state` keeps its arrays for that long)
        self.changes = 0
        # SGLang's clipped remaining outputs (`clipped_future`), kept from the first question
        # on (clip -1: not yet asked). A member with d = max_output - (g0 - s0) has d - t left at
        # cohort time t, clipped while t < d - clip (its crossing time T). The members split at
        # `_clip_t` into those with T > _clip_t ("above": clip each, counted) and the rest
        # ("below": d - t each, their d summed); a question at another time moves the members
        # whose T lies between (two heaps of T x size + i, one negated, stale entries skipped).
        self._clip = -1
        self._clip_t = 0
        self._clip_max: list[int] = []  # every request's max output (the replica's list)
        self._clip_side = [0] * size  # 1 above, 2 below, 0 not a member
        self._clip_cross = [0] * size  # T x size + i of a member
        self._above: list[int] = []  # min-heap of T x size + i
        self._below: list[int] = []  # min-heap of -(T x size + i): the latest T first
        self._above_count = self._below_count = self._below_sum = 0
        # every member's T x size + i, ascending: the members crossing the clip over a run of
        # steps are a slice of it (`clip_crossings`), where the heaps would be popped and pushed
        # back
        self._crossings: list[int] = []

    def add(self, i: int, context: int, generated: int, output: int, step: int) -> None:
        """Start decoding request i at `step` with `context` KV tokens and `generated` tokens (of
        `output`). Positional arguments: a call per admission, where keywords cost more."""
        lag = self._lag
        t = step - lag
        base_c, base_g = context - t, generated - t
        self._unwritten[i] = base_g
        self._context_bases[i], self._generated_bases[i] = base_c, base_g
        self._members[i] = None
        self.count += 1
        self.changes += 1
        self.phase_counts[(lag - base_c) % self.block_size] += 1
        self._prefix_phase = -1
        self._context_base_sum += base_c
        self._generated_base_sum += base_g
        self._version[i] += 1
        heap = self._finish_heap
        if len(heap) > 2 * self.count + 64:  # mostly stale entries: keep the heap small
            heap = self._finish_heap = self._live_finishes(heap)
        key = (t + output - generated - 1) * self._size + i
        self._finish_key[i] = key
        heappush(heap, key)
        if self._clip >= 0:
            self._clip_join(i)

    def track_victims(self, i: int, *, prompt: int, admit_seq: int) -> None:
        """Also keep i in the fewest-generated retraction order (SGLang)."""
        if not self._victims_built:
            self._victim_prompt[i], self._victim_seq[i] = prompt, admit_seq
            self._tracked[i] = self._version[i]
            return
        key = victim_key(self._generated_bases[i], prompt, admit_seq)
        heap = self._victim_heap
        if len(heap) > 2 * self.count + 64:
            heap = self._victim_heap = self._live(heap)
        heappush(heap, (key, i, self._version[i]))

    def _live_finishes(self, heap: list[int]) -> list[int]:
        """The finish heap's live entries, as a heap (which live entry comes first depends only
        on the entries, so compacting changes no result)."""
        live, size = self._finish_key, self._size
        kept = [key for key in heap if live[key % size] == key]
        heapify(kept)
        return kept

    def _live(self, heap: list[tuple[_Key, int, int]]) -> list[tuple[_Key, int, int]]:
        """The heap's entries for current members (stale ones dropped), as a heap. Which live
        entry comes first depends only on the entries, so compacting changes no result."""
        version = self._version
        live = [e for e in heap if e[2] == version[e[1]]]
        heapify(live)
        return live

    def remove(self, i: int, step: int) -> tuple[int, int]:
        """Take i out at the start of `step`; returns its (context, generated) then."""
        base_c, base_g = self._context_bases[i], self._generated_bases[i]
        lag = self._lag
        del self._members[i]
        self.count -= 1
        self.changes += 1
        self.phase_counts[(lag - base_c) % self.block_size] -= 1
        self._prefix_phase = -1
        self._context_base_sum -= base_c
        self._generated_base_sum -= base_g
        self._version[i] += 1
        self._finish_key[i] = -1
        if self._clip >= 0:  # `clipped_future` asked: i leaves its side
            side = self._clip_side[i]
            if side == 1:
                self._above_count -= 1
            elif side == 2:
                self._below_count -= 1
                self._below_sum -= self._clip_max[i] - base_g
            self._clip_side[i] = 0
            crossings = self._crossings
            del crossings[bisect_left(crossings, self._clip_cross[i])]
        t = step - lag
        return base_c + t, base_g + t

    def hold(self) -> None:
        """A step in which the members do not decode (vLLM V0's prefill-only step): at the start
        of the next step each still has its context and output, so every phase and every last
        step moves one step later. O(B)."""
        self._lag += 1
        self.changes += 1
        counts = self.phase_counts
        self.phase_counts = [counts[-1], *counts[:-1]]  # phase lag - base_c mod B rises by one
        self._prefix_phase = -1

    @property
    def generated_base(self) -> IntArray:
        """g0 - s0 of every request as an array (valid for members). Written lazily: only the
        token-ratio and kv-aware rules read it, and one numpy write per add would cost more
        than the rest of the add."""
        if self._unwritten:
            arr, pending = self._generated_base, self._unwritten
            arr[np.fromiter(pending, np.int64, len(pending))] = np.fromiter(
                pending.values(), np.int64, len(pending)
            )
            pending.clear()
        if self._lag:  # stored on the cohort's clock
            shifted: IntArray = self._generated_base - self._lag
            return shifted
        return self._generated_base

    def __contains__(self, i: int) -> bool:
        return i in self._members

    def members(self) -> IntArray:
        """The members' indices, ascending: O(members), never a scan over every request."""
        return np.sort(np.fromiter(self._members, dtype=np.int64, count=self.count))

    def context(self, i: int, step: int) -> int:
        """Context tokens of member i at the start of `step`."""
        return self._context_bases[i] + step - self._lag

    def context_sum(self, step: int) -> int:
        """Sum of the members' contexts at the start of `step`."""
        return self._context_base_sum + self.count * (step - self._lag)

    def generated_sum(self, step: int) -> int:
        """Sum of the members' generated tokens at the start of `step`."""
        return self._generated_base_sum + self.count * (step - self._lag)

    def clipped_future(self, step: int, clip: int, max_output: list[int]) -> int:
        """Sum over the members of min(max_output - generated, clip) tokens at the start of
        `step` (SGLang's clipped remaining outputs; `max_output`: every request's, the same list
        at every call). The first call, or one with another clip, sorts the members; later ones
        move only the members whose remaining output crossed the clip between the two steps."""
        if clip != self._clip or max_output is not self._clip_max:
            self._build_clip(clip, max_output, step - self._lag)
        t = step - self._lag
        size = self._size
        side, max_out, bases = self._clip_side, self._clip_max, self._generated_bases
        if t > self._clip_t:  # members with T <= t now have fewer than clip tokens left
            heap, cross = self._above, self._clip_cross
            while heap and heap[0] // size <= t:
                key = heappop(heap)
                i = key % size
                if side[i] == 1 and cross[i] == key:
                    side[i] = 2
                    self._above_count -= 1
                    self._below_count += 1
                    self._below_sum += max_out[i] - bases[i]
                    heappush(self._below, -key)
        elif t < self._clip_t:  # members with T > t still had more than clip left
            heap, cross = self._below, self._clip_cross
            while heap and (-heap[0]) // size > t:
                key = -heappop(heap)
                i = key % size
                if side[i] == 2 and cross[i] == key:
                    side[i] = 1
                    self._below_count -= 1
                    self._below_sum -= max_out[i] - bases[i]
                    self._above_count += 1
                    heappush(self._above, key)
        self._clip_t = t
        return clip * self._above_count + self._below_sum - self._below_count * t

    def clip_crossings(
        self, step: int, clip: int, max_output: list[int], k: int
    ) -> tuple[int, int, list[int]]:
        """(`clipped_future` at `step`; members with at most `clip` tokens left then; for each
        member whose remaining output falls to `clip` in step + j, 0 < j < k, that j,
        ascending). Over steps step .. step + k - 1 the sum falls by the members with at most
        `clip` left before each step: from step + j to step + j + 1, by the second answer plus
        the crossings <= j (min(r - 1, clip) = min(r, clip) - 1 exactly when r <= clip)."""
        total = self.clipped_future(step, clip, max_output)
        t, size, crossings = step - self._lag, self._size, self._crossings
        first = bisect_right(crossings, t * size + size - 1)  # T > t
        last = bisect_right(crossings, (t + k - 1) * size + size - 1, first)  # T < t + k
        return total, self._below_count, [key // size - t for key in crossings[first:last]]

    def _build_clip(self, clip: int, max_output: list[int], t: int) -> None:
        """`clipped_future`'s split of the members at cohort time t, from scratch."""
        self._clip, self._clip_max, self._clip_t = clip, max_output, t
        self._above, self._below, self._crossings = [], [], []
        self._above_count = self._below_count = self._below_sum = 0
        for i in self._members:
            self._clip_join(i)
        heapify(self._above)
        heapify(self._below)
        self._crossings.sort()

    def _clip_join(self, i: int) -> None:
        """Put member i on its side of `_clip_t` (`clipped_future`)."""
        d = self._clip_max[i] - self._generated_bases[i]
        key = (d - self._clip) * self._size + i
        self._clip_cross[i] = key
        insort(self._crossings, key)
        if d - self._clip > self._clip_t:
            self._clip_side[i] = 1
            self._above_count += 1
            heap = self._above
            if len(heap) > 2 * self.count + 64:  # mostly stale entries: keep the heap small
                heap = self._above = self._live_clip(heap, 1, 1)
            heappush(heap, key)
        else:
            self._clip_side[i] = 2
            self._below_count += 1
            self._below_sum += d
            heap = self._below
            if len(heap) > 2 * self.count + 64:
                heap = self._below = self._live_clip(heap, 2, -1)
            heappush(heap, -key)

    def _live_clip(self, heap: list[int], side: int, sign: int) -> list[int]:
        """A clip heap's live entries (members on that side, at their key), as a heap."""
        on, cross, size = self._clip_side, self._clip_cross, self._size
        kept = [
            e
            for e in heap
            if on[(sign * e) % size] == side and cross[(sign * e) % size] == sign * e
        ]
        heapify(kept)
        return kept

    def needs_at(self, step: int) -> int:
        """Members that need a new block in `step`."""
        return self.phase_counts[step % self.block_size]

    def _prefix(self, step: int) -> list[int]:
        """pre[j]: blocks needed over steps step .. step + j - 1, for j = 0 .. B (cached until the
        membership changes)."""
        r = step % self.block_size
        if r == self._prefix_phase:
            return self._prefix_sums
        counts, cached, total = self.phase_counts, [0], 0
        # the phases from r on, then those before r (plain loops: native when compiled, and
        # as fast as itertools.accumulate in Python)
        for n in counts[r:]:
            total += n
            cached.append(total)
        for n in counts[:r]:
            total += n
            cached.append(total)
        self._prefix_phase, self._prefix_sums = r, cached
        return cached

    def blocks_needed(self, step: int, k: int) -> int:
        """N(k): new blocks the members need over steps step .. step + k - 1."""
        size = self.block_size
        r, j = step % size, k % size
        if r == self._prefix_phase:
            return (k // size) * self.count + self._prefix_sums[j]
        # the same sum from the histogram's slices: building the prefix sums costs more where
        # the membership changes between two calls (most runs end in a finish)
        counts = self.phase_counts
        end = r + j
        if j == 1:  # a run of one step (or of B + 1, ...): about a third of the runs
            part = counts[r]
        else:
            part = (
                sum(counts[r:end]) if end <= size else sum(counts[r:]) + sum(counts[: end - size])
            )
        return (k // size) * self.count + part

    def blocks_needed_by_step(self, step: int, k: int, first: int = 0) -> IntArray:
        """N(first + 1) .. N(k) as an array."""
        pre = np.asarray(self._prefix(step), dtype=np.int64)
        j = np.arange(first + 1, k + 1, dtype=np.int64)
        needed: IntArray = (j // self.block_size) * self.count + pre[j % self.block_size]
        return needed

    def first_step_needing(self, step: int, blocks: int, *, strictly_more: bool) -> int | None:
        """Smallest k >= 1 with N(k) > blocks (or >= blocks), None if the cohort is empty."""
        if self.count == 0:
            return None
        target = blocks + 1 if strictly_more else blocks
        if target <= 0:
            return 1
        count, size = self.count, self.block_size
        cycles = (target - 1) // count  # N(cycles x B) = cycles x n < target
        pre = self._prefix_sums if step % size == self._prefix_phase else self._prefix(step)
        return cycles * size + bisect_left(pre, target - cycles * count, 1)

    def next_finish_step(self) -> int | None:
        """The step in which the next member generates its last token."""
        heap, live, size = self._finish_heap, self._finish_key, self._size
        while heap and live[heap[0] % size] != heap[0]:
            heappop(heap)
        return heap[0] // size + self._lag if heap else None

    def pop_finishing(self, step: int) -> list[int]:
        """Members whose last token is generated in `step` (they stay members until removed)."""
        done: list[int] = []
        heap, live, size = self._finish_heap, self._finish_key, self._size
        first = (step - self._lag) * size  # the keys of `step`: first .. first + size - 1
        end = first + size
        while heap:
            key = heap[0]
            i = key % size
            if live[i] != key:
                heappop(heap)  # stale
            elif first <= key < end:
                done.append(i)
                heappop(heap)
                live[i] = -1  # taken: a stale copy of the same key (re-added alike) is skipped
            else:
                break
        return done

    def fewest_generated(self) -> tuple[tuple[int, int, int], int] | None:
        """(key, request) of the member SGLang would retract first; key uses generated - step."""
        if not self._victims_built:
            self._build_victims()
        heap = self._victim_heap
        while heap and heap[0][2] != self._version[heap[0][1]]:
            heappop(heap)
        if not heap:
            return None
        if self._lag:  # stored on the cohort's clock
            (g, prompt, admit), i = heap[0][0], heap[0][1]
            return (g - self._lag, prompt, admit), i
        return heap[0][0], heap[0][1]

    def _build_victims(self) -> None:
        """The retraction heap of the members tracked so far (`track_victims`), as pushing each
        when it was tracked would have left it less its stale entries (its first entry depends
        only on the live ones); tracked members are pushed from now on."""
        version, tracked, bases = self._version, self._tracked, self._generated_bases
        prompt, seq = self._victim_prompt, self._victim_seq
        heap = [
            (victim_key(bases[i], prompt[i], seq[i]), i, version[i])
            for i in self._members
            if tracked[i] == version[i]
        ]
        heapify(heap)
        self._victim_heap, self._victims_built = heap, True
