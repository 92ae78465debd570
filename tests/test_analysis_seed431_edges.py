"""Edges the analysis mutation sample of seed 431 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 431): each value worked out by hand in its comment."""

from __future__ import annotations

import pytest

from capcliff.analysis.deployment_settings import settings_of
from capcliff.errors import InputError


@pytest.mark.parametrize(
    ("values", "named"),
    [
        # declared order: gpu_memory_utilization, then max_num_seqs, then block_size
        ({"block_size": 0, "max_num_seqs": 0}, "--max-num-seqs: "),
        ({"max_num_seqs": 0, "gpu_memory_utilization": 2.0}, "--gpu-memory-utilization: "),
    ],
)
def test_of_several_bad_settings_the_first_declared_is_named(
    values: dict[str, object], named: str
) -> None:
    # one line, one field: the first of the model's fields that fails, whatever the order given
    with pytest.raises(InputError) as caught:
        settings_of(values)
    assert str(caught.value).startswith(named)
