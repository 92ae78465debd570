"""Output lengths as a distribution (`--osl lognormal:MEAN:P99[:MAX]`, spec key `osl`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
from capcliff.cli import main
from capcliff.errors import InputError
from capcliff.sim.traffic.length_spec import OutputLengths, histogram_spec, parse_output_lengths
from capcliff.sim.traffic.workload import Empirical, LogNormal
from tests.checktools import check_file


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
        if isinstance(lengths.dist, LogNormal):
            assert 1 <= lengths.dist.mean < lengths.dist.p99 <= lengths.max_tokens
        else:
            assert max(lengths.dist.values) == lengths.max_tokens


HISTOGRAM = "tokens,count\n500,10\n2000,5  # a comment\n\n16000,1\n"


def test_a_histogram_file_reads_into_its_inline_form() -> None:
    spec = histogram_spec(HISTOGRAM, source="h.csv")
    assert spec == "histogram:500*10,2000*5,16000*1"
    lengths = parse_output_lengths(spec)
    assert lengths.max_tokens == 16000
    # (500 x 10 + 2000 x 5 + 16000 x 1) / 16 = 1,937.5
    assert "mean 1,938" in lengths.label


def test_histogram_draws_follow_the_counts() -> None:
    choice = WorkloadChoice(num_requests=32_000, isl=100, osl=(16_000,),
                            output_lengths=histogram_spec(HISTOGRAM, source="h"))  # fmt: skip
    outputs = plan_workloads(choice, seed=1)[1][0][1].output_tokens
    assert set(outputs.tolist()) == {500, 2000, 16000}
    assert float((outputs == 500).mean()) == pytest.approx(10 / 16, abs=0.01)
    assert float((outputs == 16000).mean()) == pytest.approx(1 / 16, abs=0.005)


@pytest.mark.parametrize(
    ("text", "message"),
    [("500,2\n1e3,x\n", "line 2"), ("", "holds no lengths"), ("0,1\n", "tokens must be"),
     ("500,-1\n", "count must be"), ("500,1,2\n", "write tokens[,count]")],
)  # fmt: skip
def test_a_bad_histogram_row_is_named(text: str, message: str) -> None:
    with pytest.raises(InputError, match=r"^osl: h.csv"):
        histogram_spec(text, source="h.csv")
    with pytest.raises(InputError, match=re.escape(message)):
        histogram_spec(text, source="h.csv")


def test_sweep_and_check_read_a_histogram_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "lengths.csv").write_text(HISTOGRAM.replace("16000", "1600"))
    args = ["sweep", "llama-3.1-8b", "--gpus", "1", "--isl", "100", "--osl",
            f"hist:{tmp_path / 'lengths.csv'}", "--num-requests", "40", "--concurrency", "8",
            "--format", "json"]  # fmt: skip
    assert main(args) == 0
    assert "osl histogram of 3 lengths" in json.loads(capsys.readouterr().out)["workload"]
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "h"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        '[scenario.workload]\nisl = 100\nosl = "hist:lengths.csv"\nnum_requests = 40\n'
        "concurrency = 8\n[scenario.expect]\nfits = true\n"
    )
    assert check_file(spec).scenarios[0].assertions[0].passed
    spec.write_text(spec.read_text().replace("lengths.csv", "missing.csv"))
    assert main(["check", str(spec)]) == 2
    assert "scenario[0].workload.osl: cannot read" in capsys.readouterr().err


def test_a_histogram_length_without_a_count_counts_once() -> None:
    # Mutation seed 41 (sim): "100" alone is 100 tokens seen once, next to 300 seen 3 times.
    lengths = parse_output_lengths("histogram:100,300*3")
    assert isinstance(lengths.dist, Empirical)
    assert (lengths.dist.values, lengths.dist.weights) == ((100, 300), (1.0, 3.0))
