"""Session presets kept within the context the engine serves: the agentic preset's
131,072-token window was refused for every model serving 40,960 tokens (the Qwen3 family), so
`plan qwen3-32b --workload agentic --clients 8` could not be asked (fuzz_random seeds 42-47)."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.analysis.workloads import WorkloadChoice, sessions_within
from capcliff.cli.main import main
from capcliff.errors import InputError
from capcliff.sim.traffic.sessions import generate_sessions
from capcliff.sim.traffic.workload import Arrival


def _agentic(**kw: object) -> WorkloadChoice:
    return WorkloadChoice(num_requests=300, preset_name="agentic", clients=4,
                          arrival=Arrival.CLIENTS, **kw)  # type: ignore[arg-type]  # fmt: skip


def test_a_shorter_served_context_becomes_the_sessions_window() -> None:
    kept, note = sessions_within(_agentic(), 40_960)
    assert kept.session_window == 40_960
    assert kept.session_spec().max_context_tokens == 40_960
    assert note.startswith("workload agentic: sessions kept within the 40,960-token context")
    assert "the preset's window is 131,072" in note


def test_a_context_as_long_as_the_window_changes_nothing() -> None:
    for served in (131_072, 163_840, None):
        assert sessions_within(_agentic(), served) == (_agentic(), "")
    chat = WorkloadChoice(num_requests=30, preset_name="multiturn-chat", clients=2,
                          arrival=Arrival.CLIENTS)  # fmt: skip
    assert sessions_within(chat, 40_960) == (chat, "")  # its own window is 32,768


def test_every_request_with_its_max_tokens_fits_the_window() -> None:
    kept, _ = sessions_within(_agentic(), 40_960)
    spec = kept.session_spec()
    requests = generate_sessions(spec, 300, np.random.default_rng(0), clients=4)
    longest = int(np.max(requests.input_tokens + requests.max_output_tokens))
    assert longest <= 40_960 < 131_072


def test_a_window_without_room_for_one_turn_is_refused() -> None:
    # agentic: a shared prefix of 8,000 and max_tokens 8,192 need 16,193 tokens at the least
    kept, _ = sessions_within(_agentic(), 16_192)
    with pytest.raises(InputError, match="max_model_len: agentic's turns need more than 16,192"):
        kept.session_spec()


def test_sweep_answers_agents_on_a_40k_model(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["sweep", "qwen3-32b", "--layout", "tp8", "--workload", "agentic", "--clients", "4",
            "--num-requests", "40", "--concurrency", "4"]  # fmt: skip
    assert main(args) == 0
    assert "sessions kept within the 40,960-token context served" in capsys.readouterr().err
