"""A CheckReport as text, JSON, JUnit XML and Markdown, and as a baseline file.

Pure functions returning strings: the CLI prints them or writes them with
`files.write_text_atomic`. Every output is deterministic (sorted JSON keys, no timestamps, JUnit
times of 0), so the same spec and seed give byte-identical files.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from capcliff.check.report import (
    AssertionResult,
    CheckReport,
    ScenarioResult,
    Value,
    baseline_of,
)
from capcliff.units import counted

MISSING = "-"
PASS, FAIL, SKIP = "pass", "FAIL", "skip"


def format_value(value: Value, unit: str = "") -> str:
    """A value for people: fractions as percentages, large numbers with separators, units."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return value
    if unit == "fraction":
        return _percent(value)
    text = f"{value:,.0f}" if abs(value) >= 1000 or isinstance(value, int) else f"{value:.4g}"
    if text == "1" and unit in COUNT_UNITS:  # "1 replicas" (fuzz_random seeds 48-51)
        unit = unit[:-1]
    return f"{text} {unit}" if unit else text


# Units that count things, read in the singular beside exactly 1.
COUNT_UNITS = ("replicas", "preemptions", "requests", "tokens")


# Decimals a percentage may take before it is written in scientific notation.
MAX_PERCENT_DECIMALS = 6


def _percent(value: float) -> str:
    """A fraction as a percentage to one decimal, or to as many more as it takes not to round
    to 0 % or 100 % what is not: a bound `kv_headroom_min = 0.999999` printed "100.0%", beside
    an actual "100.0%" and a margin "-0.0%", on a check that failed."""
    value += 0.0  # -0.0 is 0
    for decimals in range(1, MAX_PERCENT_DECIMALS + 1):
        text = f"{value:.{decimals}%}"
        if float(text[:-1]) not in (0.0, 100.0, -100.0) or value * 100 == float(text[:-1]):
            return text
    return f"{value * 100:.2g}%"


def expected_text(a: AssertionResult) -> str:
    """`>= 0.15`-style: the comparison and the expected value."""
    return f"{a.comparison} {format_value(a.expected, a.unit)}" if a.expected is not None else ""


def margin_text(a: AssertionResult) -> str:
    """The signed slack, in the assertion's unit ("" when there is none)."""
    if a.margin is None:
        return ""
    sign = "+" if a.margin >= 0 else "-"
    return sign + format_value(abs(a.margin), a.unit)


def verdict(a: AssertionResult) -> str:
    """pass, FAIL or skip."""
    return SKIP if a.skipped else PASS if a.passed else FAIL


def summary(report: CheckReport) -> str:
    """One line: how many scenarios and assertions, how many failed."""
    total, failed = len(report.assertions), report.failures
    state = "all hold" if not failed else f"{failed} failed"
    scenarios = len(report.scenarios)
    return (
        f"{counted(scenarios, 'scenario', '')}, "
        f"{counted(total, 'assertion', '')}: {state}"  # "1 scenarios, 1 assertions"
    )


def _scenario_heading(s: ScenarioResult) -> str:
    layout = s.layout or "no layout"
    source = " (plan)" if s.layout_source == "plan" else ""
    on = " + ".join(f"{count} x {gpu}" for gpu, count in s.gpus_by_type.items())
    return (
        f"{s.model} on {on}, {layout}{source}, {s.engine}; {s.workload}, "
        f"{counted(s.num_requests, 'request', '')}, at most "
        f"{s.concurrency} running (concurrency)"
    )


def _rows(s: ScenarioResult) -> list[list[str]]:
    return [
        [a.name, expected_text(a), format_value(a.actual, a.unit), margin_text(a), verdict(a),
         a.detail]
        for a in s.assertions
    ]  # fmt: skip


def _table(rows: list[list[str]], indent: str) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [
        indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
        for r in rows
    ]


def check_text(report: CheckReport) -> str:
    """A plain-text table per scenario: assertion, expected, actual, margin, result, detail."""
    lines = [f"capcliff check {report.spec}: {summary(report)}"]
    header = ["assertion", "expected", "actual", "margin", "result", "detail"]
    for s in report.scenarios:
        lines += ["", f"{PASS if s.passed else FAIL}  {s.name}", f"  {_scenario_heading(s)}"]
        if s.reason:
            lines.append(f"  {s.reason}")
        if s.assertions:
            lines += _table([header, *_rows(s)], "  ")
    return "\n".join(lines) + "\n"


def report_dict(report: CheckReport) -> dict[str, Any]:
    """The report as JSON data, with pass/fail counts added."""
    data = report.model_dump(mode="json")
    for entry, s in zip(data["scenarios"], report.scenarios, strict=True):
        entry["passed"] = s.passed
    data["summary"] = {
        "scenarios": len(report.scenarios),
        "assertions": len(report.assertions),
        "failures": report.failures,
        "skipped": sum(a.skipped for a in report.assertions),
        "passed": not report.failures,
    }
    return data


def check_json(report: CheckReport) -> str:
    """The versioned JSON of the report, keys sorted: byte-identical for the same inputs."""
    return json.dumps(report_dict(report), sort_keys=True, indent=2) + "\n"


def _suite_counts(assertions: list[AssertionResult]) -> dict[str, str]:
    return {
        "tests": str(len(assertions)),
        "failures": str(sum(not a.passed for a in assertions)),
        "errors": "0",
        "skipped": str(sum(a.skipped for a in assertions)),
        "time": "0",
    }


def _testcase(suite: ET.Element, s: ScenarioResult, a: AssertionResult) -> None:
    case = ET.SubElement(suite, "testcase", classname=s.name, name=a.name, time="0")
    if a.skipped:
        ET.SubElement(case, "skipped", message=a.detail)
    elif not a.passed:
        message = f"{a.name}: expected {expected_text(a)}, got {format_value(a.actual, a.unit)}"
        failure = ET.SubElement(case, "failure", message=message, type="AssertionError")
        failure.text = a.detail


def check_junit(report: CheckReport) -> str:
    """JUnit XML: a testsuite per scenario, a testcase per assertion, a failure per fail."""
    root = ET.Element("testsuites", {"name": "capcliff check", **_suite_counts(report.assertions)})
    for s in report.scenarios:
        suite = ET.SubElement(root, "testsuite", {"name": s.name, **_suite_counts(s.assertions)})
        for a in s.assertions:
            _testcase(suite, s, a)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown_figures(report: CheckReport) -> list[str]:
    lines = [
        "| scenario | layout | KV tokens / replica | cliff (analytic / simulated) | "
        "sweet spot | TTFT p99 | TPOT p99 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for s in report.scenarios:
        f = s.figures
        simulated = format_value(f.simulated_cliff_concurrency)
        if f.simulated_cliff_concurrency is None and f.swept_concurrency_max is not None:
            simulated = f"none up to {f.swept_concurrency_max:,}"
        cells = [
            s.name, f.layout or MISSING, format_value(f.kv_capacity_tokens_per_replica),
            f"{format_value(f.analytic_cliff_concurrency)} / {simulated}",
            f"{format_value(f.sweet_spot_concurrency)} at "
            f"{format_value(f.sweet_spot_output_tok_s, 'tok/s')}",
            format_value(f.ttft_p99_s, "s"), format_value(f.tpot_p99_s, "s"),
        ]  # fmt: skip
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def check_markdown(report: CheckReport) -> str:
    """A summary for a pull-request comment or a CI job summary: verdicts, then figures."""
    mark = "✅" if not report.failures else "❌"
    lines = [
        f"### {mark} capcliff check: {summary(report)}",
        "",
        "| | scenario | assertion | expected | actual | margin | detail |",
        "|---|---|---|---|---|---|---|",
    ]
    icons = {PASS: "✅", FAIL: "❌", SKIP: "⏭️"}
    for s in report.scenarios:
        for a in s.assertions:
            cells = [
                icons[verdict(a)], s.name, a.name, expected_text(a),
                format_value(a.actual, a.unit), margin_text(a), a.detail,
            ]  # fmt: skip
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "#### Capacity figures", "", *_markdown_figures(report)]
    return "\n".join(lines) + "\n"


def baseline_json(report: CheckReport) -> str:
    """The baseline file (`--write-baseline`): each scenario's figures, keys sorted."""
    data = baseline_of(report).model_dump(mode="json")
    return json.dumps(data, sort_keys=True, indent=2) + "\n"
