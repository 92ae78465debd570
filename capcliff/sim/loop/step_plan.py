"""One exact engine step as a replica decides it, before its duration is known: what it runs and
the load (tokens, sequences, context read, attention pairs) the step-time model prices."""

from __future__ import annotations

Load = tuple[int, int, int, int]  # tokens, sequences, context tokens read, attention pairs


class PlannedStep:
    """One exact step as `ReplicaSim.begin_step` decided it. (A plain class, not a NamedTuple:
    the compiled loop builds one without calling into the interpreter.)"""

    def __init__(
        self,
        chunk_x: int,
        admitted: list[tuple[int, int, int]],
        preempted: bool,
        blocked: bool,
        load: Load,
        swap_s: float,
    ) -> None:
        self.chunk_x = chunk_x  # tokens of the request part way through its prefill
        self.admitted = admitted  # (request, context before, chunk)
        self.preempted = preempted
        self.blocked = blocked  # the policy refused the head of the queue for KV
        self.load = load
        self.swap_s = swap_s  # host-link transfers of swapped KV in the step, seconds


def step_load(decoders: int, decode_context: int, prefills: list[tuple[int, int, int]]) -> Load:
    """The load of a step with `decoders` decoding requests reading `decode_context` tokens of KV
    (each counting the token it writes) and prefill chunks `(request, context before, chunk)`:
    a chunk of c tokens after b tokens reads b + c and computes c b + c (c + 1) / 2 pairs."""
    tokens, seqs, ctx, pairs = decoders, decoders, decode_context, decode_context
    for _, before, chunk in prefills:
        tokens += chunk
        seqs += 1
        ctx += before + chunk
        pairs += chunk * before + chunk * (chunk + 1) // 2
    return tokens, seqs, ctx, pairs
