"""max_model_len: the one rule for it.

`context_length` is max_model_len given, or the longest request rounded up; never shorter than a
request, never past the model's context unless allowed (`check_model_context`, as vLLM refuses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.errors import InputError
from capcliff.units import round_up

if TYPE_CHECKING:
    from capcliff.sim.traffic.workload import Requests


# A max_model_len derived from the workload is its longest request rounded up to whole KiB tokens.
CONTEXT_ROUNDING = 1024


def check_model_context(
    max_model_len: int | None, model_context: int | None, *, allow_long: bool
) -> None:
    """Refuse a max_model_len past the model's context, as vLLM does (it starts only with
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; vllm/config: `_get_and_verify_max_len`)."""
    if max_model_len is None or model_context is None or allow_long:
        return
    if max_model_len > model_context:
        raise InputError(
            f"max_model_len: {max_model_len} is longer than the model's context "
            f"({model_context} tokens, from config.json's context keys); pass "
            "--allow-long-max-model-len (allow_long_max_model_len) to plan it anyway"
        )


def context_length(
    given: int | None,
    requests: Requests,
    *,
    model_context: int | None,
    allow_long: bool,
    bound: int | None = None,
) -> int:
    """max_model_len: `given`, else the longest request rounded up to CONTEXT_ROUNDING (at most
    the model's context). A request longer than it is refused, with the numbers: an engine
    would reject it. `bound` (tokens; None: the sample is the whole workload) is the longest
    request any sample of the workload can hold: a session preset's context limit. The online
    stopping rule draws larger samples than `requests`, so without a length given it counts
    too (at most the model's context), and the answer does not depend on the sample's size."""
    lengths = requests.input_tokens + requests.max_output_tokens
    import numpy as np  # only where a workload is sized: `capcliff memory` never needs it

    index = int(np.argmax(lengths))
    longest = int(lengths[index])
    request = (
        f"the longest request ({longest} tokens: {int(requests.input_tokens[index])} input + "
        f"{int(requests.max_output_tokens[index])} output)"
    )
    reach = 0
    if bound is not None:
        reach = bound if model_context is None or allow_long else min(bound, model_context)
    if given is not None:
        check_model_context(given, model_context, allow_long=allow_long)
        if longest > given:
            raise InputError(
                f"max_model_len: {given} is shorter than {request}; give at least {longest} or "
                "leave it unset"
            )
        if reach > given:  # a larger sample would hold a request the engine refuses
            raise InputError(
                f"max_model_len: {given} is shorter than the workload's sessions grow "
                f"({reach} tokens, their context limit); give at least {reach} or leave it unset"
            )
        return given
    longest = max(longest, reach)
    if model_context is None or allow_long:
        return round_up(longest, CONTEXT_ROUNDING)
    if longest > model_context:
        raise InputError(
            f"workload: {request} is longer than the model's context ({model_context} tokens); "
            "shorten it or pass --allow-long-max-model-len"
        )
    return min(round_up(longest, CONTEXT_ROUNDING), model_context)
