"""Edges the analysis mutation sample of seed 627 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 627). Every expected value is worked out by hand in the
comments."""

from __future__ import annotations

import pytest

from capcliff.analysis.engine_yaml import read_mapping
from capcliff.analysis.evaluate import rate_search
from capcliff.analysis.evaluate.rate_search import MIN_FIRST, early_miss
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import settled_part
from capcliff.errors import InputError
from tests.test_early_miss import _lazy
from tests.test_rate_search import _poisson


def test_a_closing_brace_alone_is_plain_text_and_an_unclosed_flow_mapping_is_refused() -> None:
    # PyYAML (yaml.safe_load) reads `key: abc}` in block context as the plain scalar "abc}": a
    # flow indicator ends nothing outside a flow collection. Only a value both opened by `{` and
    # closed by `}` is a flow mapping; `{dtype: fp8` with no `}` on its line continues on the next
    # line (PyYAML: a ParserError at the end of the document here), outside the subset read.
    assert read_mapping("key: abc}\n") == {"key": "abc}"}
    with pytest.raises(InputError, match="line 1: a flow collection over several lines"):
        read_mapping("kv_cache_config: {dtype: fp8\n")


@pytest.mark.parametrize(("size", "stops"), [(MIN_FIRST, True), (MIN_FIRST - 1, False)])
def test_a_settled_part_of_exactly_the_smallest_sample_is_read(
    size: int, stops: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The toy replica finishes about 25 requests/s; offered 10/s nothing queues, but its decode
    # steps (some ms a token) are far over a 1 ms TPOT limit, so any settled part with a
    # half-width estimated misses it surely. Each reading's settled part is cut to its first
    # `size` requests (still requests the rest of the run cannot change). 200 requests: 20 %
    # warm-up leaves 160 inside the window, and at 10/s all but the last few finish inside it,
    # over the 100 measured needed. A part of MIN_FIRST (200) requests is the smallest sample
    # read, so the run stops at its first reading (2,000 x 0.25 = 500 requests advanced) with a
    # part of exactly 200; with 199 at every reading nothing is read and the run goes to the end.
    def cut(*args: object, **kwargs: object) -> object:
        return settled_part(*args, **kwargs)[:size]  # type: ignore[arg-type]

    monkeypatch.setattr(rate_search, "settled_part", cut)
    sample = _poisson(2000, 10.0, 0)
    early = early_miss(_lazy(sample), sample, Slo(ttft_s=2.0, tpot_s=0.001), 160.0)
    assert (early is not None) is stops
    if early is not None:
        assert len(early.result.finish_s) == MIN_FIRST
        assert early.state.tpot_p99_s * (1 - early.state.tpot_p99_half_width) > 0.001


def test_a_negative_sexagesimal_yaml_integer_is_read_whole() -> None:
    # YAML 1.1 (PyYAML's resolver) reads 1:30 as base 60: 1 x 60 + 30 = 90, and -1:30 as -90;
    # the sign belongs to the whole number, not to its first part (-1 x 60 + 30 = -30 is wrong).
    assert read_mapping("x: -1:30\ny: 1:30\nz: +2:00:01\n") == {"x": -90, "y": 90, "z": 7201}


@pytest.mark.parametrize(
    ("caching", "flag"), [("on", "--enable-prefix-caching"), ("off", "--no-enable-prefix-caching")]
)
def test_the_vllm_line_says_the_prefix_caching_simulated(
    capsys: pytest.CaptureFixture[str], caching: str, flag: str
) -> None:
    # `--prefix-caching on` is vLLM V1's --enable-prefix-caching, off its negation
    # (BooleanOptionalAction, vllm/engine/arg_utils.py): the line must carry the one simulated.
    import json

    from capcliff.cli import main

    argv = ["plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--rate", "2",
            "--isl", "256", "--osl", "64", "--prefix-caching", caching,
            "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    words = json.loads(capsys.readouterr().out)["engine_flags"]["vllm"].split()
    assert flag in words
    other = "--no-enable-prefix-caching" if caching == "on" else "--enable-prefix-caching"
    assert other not in words
