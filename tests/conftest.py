"""Shared fixtures: catalog models and hardware by id."""

from __future__ import annotations

import pytest

from capcliff.architecture import Architecture
from capcliff.catalog import get_hardware, get_model
from capcliff.specs import HardwareSpec


def arch_of(model_id: str) -> Architecture:
    """The architecture of a catalog model."""
    return get_model(model_id).arch


@pytest.fixture
def h200() -> HardwareSpec:
    return get_hardware("h200-sxm")
