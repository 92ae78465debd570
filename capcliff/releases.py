"""Engine releases as numbers: `parse_version` reads the release a user, a benchmark row or a
start-up log names (`0.4.3`, `v0.4.3.post2`, `sglang 0.4.3`) as (major, minor, patch), which the
release-dependent rules compare (perf.profiles' step-time profiles, memory's CUDA-graph capture
sizes, calibrate's graphs-in-budget release)."""

from __future__ import annotations

import re

from capcliff.errors import InputError

# a fourth release part is a hotfix of the third (vLLM published 0.10.1.1 on PyPI and as the
# image tag v0.10.1.1; PEP 440 release segments take any number of parts): its rules are its
# third part's; it was no release at all, and a start-up log stating it read as none
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:\.\d+)*")
# what may follow the release number: PEP 440's pre-, post- and dev-release parts (0.5.10rc1,
# 0.5.10.post1, .dev3) and a local or image-tag tail (+cu129, -cu130); anything else ("0.5.x",
# "0.5.10.postX") is no release, where reading its leading digits named another one
_TAIL = re.compile(r"(?:\.?(?:post|dev|rc|a|b)\d*)*(?:[+-][\w.+-]*)?\s*")
# Set: digits in one part of a release number (no engine numbers a release past 9 digits); a
# longer run is a slip, and past 4,300 digits int() failed with Python's own limit message
MAX_VERSION_DIGITS = 9
# Set: the least major a container's YY.MM tag has (NGC's Triton and PyTorch images: 25.01);
# vLLM, SGLang and TensorRT-LLM number their releases 0.x and 1.x, so 25.01 read as release 25.1
# of the engine was past every rule's newest release, not the release the container ships
CONTAINER_YEAR_MIN = 20


def parse_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a release named like 0.4.3, v0.4.3.post2 or sglang 0.4.3; what
    follows the number must be a release suffix (`_TAIL`)."""
    found = _VERSION.search(text)
    too_long = re.search(rf"\d{{{MAX_VERSION_DIGITS + 1}}}", text)
    if found is None or too_long is not None or not _TAIL.fullmatch(text[found.end() :]):
        raise InputError(f"engine_version: {text!r:.60} is not a release like 0.4.3")
    major, minor, patch = found.groups()
    if int(major) >= CONTAINER_YEAR_MIN and len(minor) == 2:
        raise InputError(
            f"engine_version: {text!r:.60} reads as a container's YY.MM tag, not an engine "
            "release; give the release the container ships, like 0.17.0"
        )
    return int(major), int(minor), int(patch or 0)
