"""Shared fixtures: catalog models and hardware by id."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.catalog.architecture import Architecture
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.perf.step_time import StepTimeModel

# No test asserts on wall-clock time (speed lives in benchmarks/): Hypothesis's per-example
# deadline and its "input generation is slow" check both fail on a loaded machine, not a bug. The
# profile loaded before (benchmarks/mutation.py's, derandomized, no database) is kept beneath.
# CI (`.ci/run` sets CAPCLIFF_HYPOTHESIS_DERANDOMIZE=1) draws the same examples on every run, so
# its verdict is the tree's; a developer's `pytest` keeps drawing new ones and finding new edges.
settings.register_profile(
    "capcliff",
    parent=settings.default,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    **({"derandomize": True} if os.environ.get("CAPCLIFF_HYPOTHESIS_DERANDOMIZE") == "1" else {}),
)
settings.load_profile("capcliff")


def arch_of(model_id: str) -> Architecture:
    """The architecture of a catalog model."""
    return get_model(model_id).arch


def step_model(model_id: str, gpu: str, engine: str, layout: str) -> StepTimeModel:
    """The decode step model of a catalog model on a GPU under an engine's default profile
    (16,384-token context)."""
    dep = resolve(get_model(model_id), get_hardware(gpu), settings_of({"engine": engine}))
    _, steps = replica_models(dep, dep.memory(parse_layout(layout), 16384), {})
    return steps


@pytest.fixture
def h200() -> HardwareSpec:
    return get_hardware("h200-sxm")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="Rewrite tests/golden/*.txt from the current output instead of comparing.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
