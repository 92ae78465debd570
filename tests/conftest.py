"""Shared fixtures: catalog models and hardware by id."""

from __future__ import annotations

import pytest

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.specs import HardwareSpec


def arch_of(model_id: str) -> Architecture:
    """The architecture of a catalog model."""
    return get_model(model_id).arch


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
