"""A benchmark point whose prompts share their leading tokens (a chat template's system
message, `BenchmarkPoint.shared_prefix_tokens`): `point_requests` makes that prefix one content
node every request forks from, so a prefix cache holds its full blocks once."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from capcliff.analysis.sweep.step_fit import point_requests
from capcliff.calibrate.benchmarks import BenchmarkPoint
from capcliff.errors import InputError

BURST = BenchmarkPoint("X", concurrency=4, input_len=80, output_len=3, num_requests=4)


def test_the_shared_prefix_is_one_content_node_every_request_forks_from() -> None:
    requests = point_requests(replace(BURST, shared_prefix_tokens=66))
    assert requests.content_node.tolist() == [1, 2, 3, 4]
    assert requests.content_parent.tolist() == [-1, 0, 0, 0, 0]
    assert requests.content_fork_tokens.tolist() == [0, 66, 66, 66, 66]
    np.testing.assert_array_equal(requests.input_tokens, [80, 80, 80, 80])


def test_no_shared_prefix_leaves_the_prompts_unrelated() -> None:
    assert not point_requests(BURST).has_content


def test_a_prefix_longer_than_a_prompt_is_refused() -> None:
    with pytest.raises(InputError, match="shared_prefix_tokens: 81 is longer"):
        point_requests(replace(BURST, shared_prefix_tokens=81))
