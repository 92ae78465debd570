"""Output lengths as a distribution (`--osl lognormal:MEAN:P99[:MAX]`, spec key `osl`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
from capcliff.check.runner import check_file
from capcliff.cli import main
from capcliff.errors import InputError
from capcliff.sim.traffic.length_spec import OutputLengths, parse_output_lengths


def test_the_spec_names_mean_p99_and_the_cut() -> None:
    given = parse_output_lengths("lognormal:8000:30000")
    assert (given.dist.mean, given.dist.p99, given.max_tokens) == (8000, 30000, 60000)
    assert parse_output_lengths("lognormal:8000:30000:40000").max_tokens == 40000


@pytest.mark.parametrize(
    "text",
    ["lognormal:8000", "lognormal:a:b", "lognormal:30000:8000", "lognormal:100:20000",
     "lognormal:8000:30000:20000", "lognormal:8000:nan", "normal:1:2", "lognormal:0:10"],
)  # fmt: skip
def test_a_bad_spec_is_one_error_naming_osl(text: str) -> None:
    with pytest.raises(InputError, match=r"^osl: "):
        parse_output_lengths(text)


def test_drawn_outputs_have_the_named_mean_and_p99() -> None:
    # 40,000 draws: the sample p99 within 3 % of 30,000 and the mean within 2 % of 8,000 (the cut
    # at 60,000, past the p99.9, moves the mean by well under 1 %).
    choice = WorkloadChoice(num_requests=40_000, isl=100, osl=(60_000,),
                            output_lengths="lognormal:8000:30000")  # fmt: skip
    _, series = plan_workloads(choice, seed=3)
    outputs = series[0][1].output_tokens
    assert float(np.percentile(outputs, 99)) == pytest.approx(30_000, rel=0.03)
    assert float(outputs.mean()) == pytest.approx(8_000, rel=0.02)
    assert outputs.max() <= 60_000 and outputs.min() >= 1
    assert (series[0][1].max_output_tokens == 60_000).all()


def test_sweep_labels_the_distribution_and_plan_takes_one_length(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["sweep", "llama-3.1-8b", "--gpus", "1", "--isl", "100", "--osl",
            "lognormal:300:1200", "--num-requests", "50", "--concurrency", "16", "--format",
            "json"]  # fmt: skip
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert "osl lognormal mean 300, p99 1,200, cut at 2,400" in out["workload"]
    assert main(["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "100", "--osl", "100,200"]) == 2
    assert "plan takes one output length" in capsys.readouterr().err


def test_a_check_spec_takes_the_distribution(tmp_path: Path) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "tail"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        '[scenario.workload]\nisl = 100\nosl = "lognormal:300:1200"\nnum_requests = 50\n'
        "concurrency = 16\n[scenario.expect]\nfits = true\n"
    )
    report = check_file(spec)
    assert report.scenarios[0].assertions[0].passed
    spec.write_text(spec.read_text().replace("lognormal:300:1200", "lognormal:1200:300"))
    assert main(["check", str(spec)]) == 2


@given(
    st.text(max_size=40)
    | st.builds(
        lambda parts: "lognormal:" + ":".join(parts), st.lists(st.text(max_size=12), max_size=5)
    )
)
def test_any_text_is_a_distribution_or_one_error_naming_osl(text: str) -> None:
    try:
        lengths = parse_output_lengths(text)
    except InputError as exc:
        assert str(exc).startswith("osl: ") and "\n" not in str(exc)
    else:
        assert isinstance(lengths, OutputLengths)
        assert 1 <= lengths.dist.mean < lengths.dist.p99 <= lengths.max_tokens
