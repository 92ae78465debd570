"""The one exception hierarchy of capcliff. Only the CLI maps these to exit codes."""

from __future__ import annotations


class CapcliffError(Exception):
    """Base of every error capcliff raises on purpose."""


class InputError(CapcliffError):
    """Invalid user input: a flag, a file, a field (exit code 2). The message is one line."""


class CatalogError(InputError):
    """A catalog or config file that does not validate; the message reads `path: field: message`."""


class UnknownIdError(InputError):
    """An id that names no catalog entry; the message suggests the closest ids."""


class SimulationLimitError(InputError):
    """A simulation asked for more steps than the step guard (`SimConfig.max_steps`) allows: the
    input asks for more work than capcliff simulates (exit code 2, one line naming the field)."""


def request_limit_error(max_requests: int, requests: int) -> SimulationLimitError:
    """The one-line refusal of one replica's simulation of more than `max_requests` requests."""
    return SimulationLimitError(
        f"num_requests: {requests:,} requests in one replica's simulation, past the most capcliff "
        f"simulates in one ({max_requests:,}, minutes of CPU); a run's throughput and latencies "
        "settle within a few thousand requests: ask for fewer (--num-requests)"
    )


def step_limit_error(max_steps: int, requests: int) -> SimulationLimitError:
    """The one-line refusal of a simulation that reached `max_steps` with `requests` requests."""
    return SimulationLimitError(
        f"num_requests: {requests:,} requests need more than {max_steps:,} simulated steps in "
        "one simulation, the most capcliff runs; ask for fewer (--num-requests)"
    )
