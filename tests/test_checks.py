"""`capcliff check`: spec validation, every assertion kind, exit codes, outputs, baselines and the
examples (the CI workflow's and the pre-commit hook's command lines run as written)."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from capcliff.catalog.catalogs import model_catalog
from capcliff.check.output import baseline_json, check_json, check_junit, check_markdown, check_text
from capcliff.check.report import (
    AssertionResult,
    CheckReport,
    ExitCode,
    ScenarioResult,
    load_baseline,
    parse_baseline,
)
from capcliff.check.runner import run_checks
from capcliff.check.spec import CheckSpec, CheckWorkload, Expectations, Scenario, parse_spec
from capcliff.cli import main
from capcliff.errors import CatalogError, InputError
from capcliff.files import write_text_atomic
from capcliff.perf.error_band import error_band
from capcliff.units import ceil_div
from tests.checktools import check_file

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "checks"
PASS_SPEC = FIXTURES / "pass.toml"
FAIL_SPEC = FIXTURES / "fail.toml"
H200_HBM_BANDWIDTH_BYTES_PER_S = 4.8e12
LLAMA_8B_WEIGHT_BYTES = 16_060_522_496  # 8,030,261,248 parameters x 2 bytes (bf16)
LLAMA_8B_KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # K and V x layers x KV heads x dim x bf16


@pytest.fixture(scope="module")
def passing() -> CheckReport:
    return check_file(PASS_SPEC)


@pytest.fixture(scope="module")
def failing() -> CheckReport:
    return check_file(FAIL_SPEC)


def _scenario(report: CheckReport, name: str) -> ScenarioResult:
    return next(s for s in report.scenarios if s.name == name)


def _assertion(report: CheckReport, scenario: str, name: str) -> AssertionResult:
    return next(a for a in _scenario(report, scenario).assertions if a.name == name)


MINIMAL = """
[[scenario]]
name = "small"
model = "llama-3.1-8b"
gpu = "h200-sxm"
layout = "tp1"
[scenario.workload]
isl = 128
osl = 256
num_requests = 64
concurrency = 32
[scenario.expect]
fits = true
"""


def _problems(text: str, tmp_path: Path) -> list[str]:
    with pytest.raises(CatalogError) as caught:
        parse_spec(text, path=tmp_path / "capcliff.toml")
    return str(caught.value).splitlines()


# Exit codes


def test_a_passing_spec_exits_0(passing: CheckReport) -> None:
    assert passing.exit_code is ExitCode.OK
    assert passing.failures == 0


def test_a_failing_spec_exits_1(failing: CheckReport) -> None:
    assert failing.exit_code is ExitCode.FAILED


def test_an_invalid_spec_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(MINIMAL.replace("isl = 128", "isl = 0"))
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "isl" in err
    assert "Traceback" not in err


def test_a_crash_exits_4_not_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A real internal error deep in the core (the replica loop), through the real entry point:
    # a bug must never read as a failed check (1) or as bad input (2).
    def broken(self: object) -> None:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr("capcliff.sim.loop.replica.ReplicaSim.run", broken)
    monkeypatch.setenv("CAPCLIFF_SIM_CORE", "python")  # the loop planted in, not its compiled copy
    assert main(["check", str(PASS_SPEC)]) == 4
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "ZeroDivisionError: planted" in err


def test_a_missing_spec_file_is_invalid(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^spec: cannot read"):
        check_file(tmp_path / "nothing.toml")


# Spec validation: one line per problem, `path: field: message`


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        ("fits = true", "kv_headrom_min = 0.1",
         "scenario[0].expect.kv_headrom_min: unknown key; did you mean kv_headroom_min?"),
        ("osl = 256", "osl_tokens = 256",
         "scenario[0].workload.osl_tokens: unknown key; did you mean osl?"),
        ('layout = "tp1"', 'layout = "tp1"\nengien = "vllm"',
         "scenario[0].engien: unknown key; did you mean engine?"),
        ("[[scenario]]", "[[scenarios]]", "scenarios: unknown key; did you mean scenario?"),
    ],
    ids=["expect", "workload", "scenario", "top-level"],
)  # fmt: skip
def test_unknown_keys_name_the_nearest_valid_key(
    old: str, new: str, line: str, tmp_path: Path
) -> None:
    assert f"{tmp_path / 'capcliff.toml'}: {line}" in _problems(MINIMAL.replace(old, new), tmp_path)


def test_every_problem_is_reported_at_once_one_line_each(tmp_path: Path) -> None:
    text = (
        MINIMAL.replace('gpu = "h200-sxm"', 'gpu = "h20"')
        .replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8"')
        .replace("fits = true", "fits = true\nttft_p99_max_s = -1")
    )
    lines = _problems(text, tmp_path)
    assert len(lines) == 1  # shape problems come first; references are checked on a valid shape
    assert lines[0].endswith("scenario[0].expect.ttft_p99_max_s: Input should be greater than 0")
    lines = _problems(text.replace("ttft_p99_max_s = -1", ""), tmp_path)
    assert [line.split(": ")[1] for line in lines] == ["scenario[0].gpu", "scenario[0].model"]
    assert "did you mean llama-3.1-8b" in lines[1]
    assert all(re.match(r"^\S+: [\w.\[\]]+: \S", line) for line in lines)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("concurrency = 32", "concurrency = 65", "scenario[0].workload.concurrency"),
        ('layout = "tp1"', 'layout = "tp1"\ngpus = 2', "scenario[0].gpus"),
        ('layout = "tp1"', 'layout = "auto"', "scenario[0].gpus"),
        ('layout = "tp1"', 'layout = "tp-one"', "scenario[0].layout"),
        ("isl = 128\n", "", "scenario[0].workload.isl"),
        ("isl = 128", 'isl = 128\npreset = "chat"', "scenario[0].workload"),
        ("concurrency = 32", 'arrival = "clients"', "scenario[0].workload.clients"),
        ("concurrency = 32", 'arrival = "poisson"', "scenario[0].workload.rate"),
    ],
    ids=[
        "concurrency-over-requests", "gpus-vs-layout", "auto-needs-gpus", "bad-layout",
        "osl-without-isl", "two-workloads", "clients-need-a-count", "poisson-needs-a-rate",
    ],
)  # fmt: skip
def test_invalid_fields_are_named(old: str, new: str, field: str, tmp_path: Path) -> None:
    lines = _problems(MINIMAL.replace(old, new), tmp_path)
    assert any(line.split(": ")[1] == field for line in lines), lines


def test_the_minimal_spec_is_valid(tmp_path: Path) -> None:
    assert parse_spec(MINIMAL, path=tmp_path / "capcliff.toml").spec.scenario[0].name == "small"


def test_duplicate_scenario_names_are_invalid(tmp_path: Path) -> None:
    lines = _problems(MINIMAL + MINIMAL, tmp_path)
    assert lines == [f"{tmp_path / 'capcliff.toml'}: scenario[1].name: duplicate 'small'"]


def test_toml_syntax_errors_name_the_file(tmp_path: Path) -> None:
    assert _problems("[[scenario]\n", tmp_path)[0].startswith(
        f"{tmp_path / 'capcliff.toml'}: (toml):"
    )


def test_a_request_longer_than_max_model_len_is_invalid(tmp_path: Path) -> None:
    spec = parse_spec(MINIMAL.replace('layout = "tp1"', 'layout = "tp1"\nmax_model_len = 300'),
                      path=tmp_path / "capcliff.toml")  # fmt: skip
    with pytest.raises(InputError, match=r"scenario\[0\]\.max_model_len: 300 is shorter"):
        run_checks(spec)


# Traces


def test_trace_paths_are_relative_to_the_spec_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "deploy"
    folder.mkdir()
    rows = [{"input_tokens": 100, "output_tokens": 200, "arrival_s": i * 0.5} for i in range(20)]
    (folder / "traffic.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    text = MINIMAL.replace("isl = 128\nosl = 256\nnum_requests = 64\nconcurrency = 32",
                           'trace = "traffic.jsonl"\nconcurrency = 8')  # fmt: skip
    (folder / "capcliff.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    report = check_file(Path("deploy/capcliff.toml"))
    assert report.scenarios[0].num_requests == 20
    assert report.scenarios[0].workload == "trace"


def test_a_config_path_is_relative_to_the_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passing: CheckReport
) -> None:
    folder = tmp_path / "deploy" / "llama"
    folder.mkdir(parents=True)
    config = model_catalog()["llama-3.1-8b"].config
    (folder / "config.json").write_text(json.dumps(config))
    text = MINIMAL.replace('model = "llama-3.1-8b"', 'model = "llama/config.json"')
    (tmp_path / "deploy" / "capcliff.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    report = check_file(Path("deploy/capcliff.toml"))
    same = _scenario(passing, "llama-3.1-8b, short batch, 1 x H200").figures
    assert report.scenarios[0].figures.kv_capacity_tokens_per_replica == (
        same.kv_capacity_tokens_per_replica
    )


def test_a_missing_trace_is_invalid(tmp_path: Path) -> None:
    text = MINIMAL.replace("isl = 128\nosl = 256\nnum_requests = 64", 'trace = "nope.jsonl"')
    lines = _problems(text, tmp_path)
    assert lines[0].startswith(f"{tmp_path / 'capcliff.toml'}: scenario[0].workload.trace: ")


def test_the_fixture_trace_replays_its_arrivals(passing: CheckReport) -> None:
    trace = _scenario(passing, "replayed trace")
    assert trace.num_requests == len((FIXTURES / "traces" / "short.jsonl").read_text().splitlines())


# Every assertion kind, with expected values worked out by hand


def test_fits_false_holds_for_405b_on_one_h200(passing: CheckReport) -> None:
    # 405,853,388,800 parameters x 2 bytes = 811.7 GB of bf16 weights > 141 GB of HBM.
    result = _assertion(passing, "llama-3.1-405b does not fit one H200", "fits")
    assert result.passed and result.actual is False
    assert "811.7 GB" in result.detail


def test_kv_headroom_is_one_minus_the_hand_computed_peak(passing: CheckReport) -> None:
    # 64 requests of 128 + 512 tokens peak at ceil(639 / 16) = 40 blocks = 640 tokens each.
    scenario = _scenario(passing, "llama-3.1-8b, short batch, 1 x H200")
    capacity = scenario.figures.kv_capacity_tokens_per_replica
    assert capacity is not None
    peak = 64 * ceil_div(128 + 512 - 1, 16) * 16 / capacity
    result = _assertion(passing, scenario.name, "kv_headroom_min")
    assert result.actual == pytest.approx(1 - peak, abs=1e-4)
    assert result.margin == pytest.approx(1 - peak - 0.9, abs=1e-4)


def test_a_full_kv_cache_leaves_no_headroom(failing: CheckReport) -> None:
    # 128 x 17,408 tokens = 2.2 M tokens of peak KV against ~0.89 M: the cache fills.
    result = _assertion(failing, "llama-3.1-8b, 16k answers past the cliff", "kv_headroom_min")
    assert result.actual == 0.0 and not result.passed


def test_no_preemption_at_fails_past_the_cliff(failing: CheckReport) -> None:
    result = _assertion(failing, "llama-3.1-8b, 16k answers past the cliff", "no_preemption_at")
    assert not result.passed
    assert isinstance(result.actual, int) and result.actual > 0


def test_no_preemption_at_holds_below_the_cliff(passing: CheckReport) -> None:
    result = _assertion(passing, "llama-3.1-8b, short batch, 1 x H200", "no_preemption_at")
    assert result.passed and result.actual == 0


def test_no_cliff_within_the_sweep_passes_and_says_so(passing: CheckReport) -> None:
    result = _assertion(passing, "llama-3.1-8b, short batch, 1 x H200", "cliff_concurrency_min")
    assert result.passed and result.actual is None
    assert result.detail == "no cliff up to 128 running requests"


def test_the_cliff_is_below_the_analytic_bound_plus_one_grid_step(failing: CheckReport) -> None:
    # A request peaks at 1024 + 16384 - 1 tokens = 1,088 blocks of 16; about 51 fit in the cache,
    # so of the grid 16, 32, 64, 128 the first to run short is 64.
    scenario = _scenario(failing, "llama-3.1-8b, 16k answers past the cliff")
    capacity = scenario.figures.kv_capacity_tokens_per_replica
    assert capacity is not None
    assert scenario.figures.analytic_cliff_concurrency == capacity // (1088 * 16)
    result = _assertion(failing, scenario.name, "cliff_concurrency_min")
    assert result.actual == 64 and result.margin == 64 - 100 and not result.passed


def _cliff_report(minimum: int, tmp_path: Path) -> AssertionResult:
    text = "[[scenario]]" + (FIXTURES / "fail.toml").read_text().split("[[scenario]]")[1]
    text = re.sub(r"(?m)^cliff_concurrency_min = .*$", f"cliff_concurrency_min = {minimum}", text)
    (tmp_path / "capcliff.toml").write_text(text)
    report = check_file(tmp_path / "capcliff.toml")
    return next(a for a in report.assertions if a.name == "cliff_concurrency_min")


def test_the_cliff_check_is_exact_between_grid_points(tmp_path: Path) -> None:
    # The grid's first cliff is 64. The cache holds ~0.86 M tokens (862,512 on one H200), so 50
    # requests x 17,408 tokens = 870,400 run short: a minimum of 60 fails at 59 and one of 51 at
    # 50; 49 requests x 17,408 = 852,992 tokens fit, so a minimum of 50 holds.
    assert _cliff_report(60, tmp_path).actual == 59
    assert not _cliff_report(60, tmp_path).passed
    assert _cliff_report(51, tmp_path).actual == 50
    assert _cliff_report(50, tmp_path).passed


def test_tpot_is_at_least_the_weights_read_time(passing: CheckReport, failing: CheckReport) -> None:
    # A decode step reads 16.06 GB of weights at 4.8 TB/s: >= 3.35 ms per output token.
    floor_s = LLAMA_8B_WEIGHT_BYTES / H200_HBM_BANDWIDTH_BYTES_PER_S
    ok = _assertion(passing, "llama-3.1-8b, short batch, 1 x H200", "tpot_p99_max_s")
    assert isinstance(ok.actual, float) and ok.actual >= floor_s and ok.passed
    too_fast = _assertion(failing, "llama-3.1-8b, 16k answers past the cliff", "tpot_p99_max_s")
    assert not too_fast.passed


def test_throughput_is_bounded_by_concurrency_over_the_step_floor(failing: CheckReport) -> None:
    # At most 128 tokens per step of >= 3.35 ms: <= 38,200 tokens/s, so 50,000 cannot hold.
    bound = 128 * H200_HBM_BANDWIDTH_BYTES_PER_S / LLAMA_8B_WEIGHT_BYTES
    name = "output_throughput_min_tok_s"
    result = _assertion(failing, "llama-3.1-8b, 16k answers past the cliff", name)
    assert isinstance(result.actual, float) and result.actual < bound < 50_000
    assert not result.passed


def test_ttft_holds_with_room_and_fails_when_nothing_is_simulated(
    passing: CheckReport, failing: CheckReport
) -> None:
    ok = _assertion(passing, "llama-3.1-8b, short batch, 1 x H200", "ttft_p99_max_s")
    assert ok.passed and isinstance(ok.margin, float) and ok.margin > 0
    unsimulated = _assertion(failing, "llama-3.1-405b expected to fit one H200", "ttft_p99_max_s")
    assert not unsimulated.passed and unsimulated.detail.startswith("not simulated: does not fit")


def test_the_only_layout_of_one_gpu_is_recommended(
    passing: CheckReport, failing: CheckReport
) -> None:
    assert _assertion(passing, "plan on one GPU", "recommended_layout").actual == "tp1"
    assert _scenario(passing, "plan on one GPU").layout_source == "plan"
    wrong = _assertion(failing, "two GPUs recommended on one", "recommended_layout")
    assert wrong.actual == "tp1" and not wrong.passed


def test_max_model_len_fits_compares_one_requests_kv_with_the_cache(
    passing: CheckReport, failing: CheckReport
) -> None:
    # 131,072 tokens x 131,072 B = 17.2 GB fits; 2,000,000 x 131,072 B = 262 GB > 141 GB of HBM.
    assert LLAMA_8B_KV_BYTES_PER_TOKEN == 131_072
    assert _assertion(passing, "llama-3.1-8b, short batch, 1 x H200", "max_model_len_fits").passed
    big = _assertion(failing, "llama-3.1-8b, 16k answers past the cliff", "max_model_len_fits")
    assert not big.passed and "262.1 GB" in big.detail


def test_exactly_the_impossible_assertions_fail(failing: CheckReport) -> None:
    failed = {(s.name, a.name) for s in failing.scenarios for a in s.assertions if not a.passed}
    first = "llama-3.1-8b, 16k answers past the cliff"
    assert (first, "fits") not in failed
    assert len(failed) == 9


# Outputs


def test_json_is_byte_identical_for_the_same_spec_and_seed(passing: CheckReport) -> None:
    assert check_json(check_file(PASS_SPEC)) == check_json(passing)


def test_json_is_versioned_and_counts_failures(failing: CheckReport) -> None:
    data = json.loads(check_json(failing))
    assert data["schema_version"] == 1
    assert data["summary"] == {
        "scenarios": 3, "assertions": 10, "failures": 9, "skipped": 0, "passed": False,
    }  # fmt: skip
    assert [s["passed"] for s in data["scenarios"]] == [False, False, False]


def test_junit_counts_match_its_elements(failing: CheckReport) -> None:
    root = ET.fromstring(check_junit(failing))
    assert root.tag == "testsuites"
    cases = root.findall("testsuite/testcase")
    assert int(root.get("tests", "")) == len(cases) == 10
    assert int(root.get("failures", "")) == len(root.findall("testsuite/testcase/failure")) == 9
    for suite in root.findall("testsuite"):
        suite_cases = suite.findall("testcase")
        assert int(suite.get("tests", "")) == len(suite_cases)
        assert int(suite.get("failures", "")) == len(suite.findall("testcase/failure"))
        assert {"errors", "skipped", "time"} <= set(suite.keys())
        assert all(c.get("classname") == suite.get("name") for c in suite_cases)


def test_a_junit_failure_says_what_was_expected_and_what_came(failing: CheckReport) -> None:
    root = ET.fromstring(check_junit(failing))
    case = next(c for c in root.iter("testcase") if c.get("name") == "tpot_p99_max_s")
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("tpot_p99_max_s: expected <= 0.003 s, got ")


def test_markdown_has_a_row_per_assertion_and_a_verdict(failing: CheckReport) -> None:
    text = check_markdown(failing)
    assert text.startswith("### ❌ capcliff check: 3 scenarios, 10 assertions: 9 failed")
    assert text.count("| ❌ |") == 9 and text.count("| ✅ |") == 1


def test_the_text_table_lists_every_assertion(passing: CheckReport) -> None:
    text = check_text(passing)
    assert text.splitlines()[0].endswith("4 scenarios, 13 assertions: all hold")
    assert all(a.name in text for a in passing.assertions)


# Baselines


def _with_baseline(report: CheckReport, tmp_path: Path, **scale: float) -> CheckReport:
    data = json.loads(baseline_json(report))
    for figures in data["scenarios"].values():
        for name, factor in scale.items():
            value = figures[name]
            if value is not None:
                figures[name] = round(value * factor) if isinstance(value, int) else value * factor
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    return check_file(PASS_SPEC, baseline=path)


def test_a_run_matches_its_own_baseline(passing: CheckReport, tmp_path: Path) -> None:
    report = _with_baseline(passing, tmp_path)
    compared = [a for a in report.assertions if a.name.startswith("baseline.")]
    assert compared and all(a.passed for a in compared) and report.baseline_compared


def test_a_regression_beyond_the_tolerance_fails(passing: CheckReport, tmp_path: Path) -> None:
    # A baseline with 10 % more KV capacity and 10 % less TTFT: this run is 9 % and 11 % worse.
    report = _with_baseline(
        passing, tmp_path, kv_capacity_tokens_per_replica=1.1, ttft_p99_s=1 / 1.1
    )
    failed = {a.name for a in report.assertions if not a.passed}
    assert failed == {"baseline.kv_capacity_tokens_per_replica", "baseline.ttft_p99_s"}
    assert report.exit_code is ExitCode.FAILED


def test_a_change_within_the_tolerance_passes(passing: CheckReport, tmp_path: Path) -> None:
    report = _with_baseline(passing, tmp_path, kv_capacity_tokens_per_replica=1.04)
    assert report.exit_code is ExitCode.OK


def test_a_scenario_missing_from_the_baseline_is_skipped(
    passing: CheckReport, tmp_path: Path
) -> None:
    data = json.loads(baseline_json(passing))
    del data["scenarios"]["replayed trace"]
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    report = check_file(PASS_SPEC, baseline=path)
    skipped = [a for a in report.assertions if a.skipped]
    assert [a.name for a in skipped] == ["baseline"] and report.exit_code is ExitCode.OK
    assert ET.fromstring(check_junit(report)).get("skipped") == "1"


def test_a_malformed_baseline_is_invalid(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"baseline\.json: kind: "):
        parse_baseline('{"schema_version": 1, "kind": "x", "scenarios": {}}',
                       path=tmp_path / "baseline.json")  # fmt: skip
    with pytest.raises(CatalogError, match=r"\(json\)"):
        parse_baseline("{", path=tmp_path / "baseline.json")


def test_a_written_baseline_reads_back(passing: CheckReport, tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_text_atomic(path, baseline_json(passing), overwrite=False)
    stored = load_baseline(path)
    figures = _scenario(passing, "plan on one GPU").figures
    assert stored.scenarios["plan on one GPU"].model_dump() == figures.model_dump()


# The examples: what CI and pre-commit run


def run_check_command(argv: list[str]) -> int:
    """`capcliff check ...` exactly as a shell would run it: through the CLI's entry point."""
    return main(["check", *argv])


def _command(line: str, tmp_path: Path) -> list[str]:
    argv = shlex.split(line.replace("$GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md")))
    assert argv[:2] == ["capcliff", "check"]
    return argv[2:]


def test_the_github_workflow_command_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workflow = (ROOT / "examples" / "github-workflow.yml").read_text()
    line = re.findall(r"(?m)^\s*run: (capcliff check .*)$", workflow)
    assert len(line) == 1
    argv = _command(line[0], tmp_path)
    assert "--junit" in argv and "--markdown" in argv
    (tmp_path / "summary.md").write_text("")  # GitHub creates the step summary file
    monkeypatch.chdir(ROOT)
    argv[argv.index("--junit") + 1] = str(tmp_path / "junit.xml")
    assert run_check_command(argv) == ExitCode.OK
    assert ET.parse(tmp_path / "junit.xml").getroot().get("failures") == "0"
    assert (tmp_path / "summary.md").read_text().startswith("### ✅ capcliff check")


def test_the_pre_commit_hook_entry_passes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hooks = (ROOT / "examples" / "pre-commit-hooks.yaml").read_text()
    entry = re.findall(r"(?m)^\s*entry: (.*)$", hooks)
    assert len(entry) == 1
    monkeypatch.chdir(ROOT)
    assert run_check_command(_command(entry[0], tmp_path)) == ExitCode.OK


# Docs


@pytest.mark.parametrize("model", [CheckSpec, Scenario, CheckWorkload, Expectations])
def test_every_spec_key_is_documented(model: type[CheckSpec]) -> None:
    doc = (ROOT / "docs" / "check.md").read_text()
    missing = [key for key in model.model_fields if f"`{key}`" not in doc]
    assert not missing


def _throughput_check(minimum: float, tmp_path: Path) -> AssertionResult:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(MINIMAL + f"output_throughput_min_tok_s = {minimum}\n")
    return _assertion(check_file(spec), "small", "output_throughput_min_tok_s")


def test_a_verdict_closer_to_its_limit_than_the_models_error_says_so(tmp_path: Path) -> None:
    # The error band (perf/error_bands.json) bounds how far a simulated throughput may be from a
    # measured one; a limit inside it is judged by the model as much as by the deployment.
    far = _throughput_check(1.0, tmp_path)
    assert far.passed and "held-out error" not in far.detail
    assert isinstance(far.actual, float)
    band = error_band("vllm", "h200-sxm", calibrated=False).throughput
    assert band is not None and band < 0.5
    near = _throughput_check(far.actual * (1 - band / 2), tmp_path)  # passes, inside the band
    assert near.passed and f"held-out error of the limit (±{band:.0%}" in near.detail
    just_over = _throughput_check(far.actual * (1 + band / 2), tmp_path)  # fails, inside too
    assert not just_over.passed and "held-out error" in just_over.detail
    outside = _throughput_check(far.actual * 0.5, tmp_path)  # 50 % below: outside the band
    assert outside.passed and "held-out error" not in outside.detail
