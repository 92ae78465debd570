"""What an engine command line says about the deployment (`ServeCommand`), and the field name
every error of this package starts with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from capcliff.catalog.layout import Layout

FIELD = "serve_command"


@dataclass(frozen=True)
class ServeCommand:
    """What an engine command line says about the deployment."""

    engine: str  # vllm, sglang or trtllm (a DeploymentSettings engine)
    model: str  # as the command names it: an HF repo id or a model directory
    layout: Layout
    settings: dict[str, Any] = field(default_factory=dict)  # DeploymentSettings keys
    unmodelled: tuple[str, ...] = ()  # flags (and env assignments) capcliff does not model

    def warning(self) -> str | None:
        """One line naming the flags capcliff does not model (None when every flag is)."""
        if not self.unmodelled:
            return None
        flags = ", ".join(self.unmodelled)
        return f"{FIELD}: flags capcliff does not model, left out of the sizing: {flags}"
