"""A command line split as a shell and the engine's argument parser split it: the one command in
the text (quotes, `\\`-newlines, `#` comments), its leading `VAR=value` assignments, the engine
its program names, and its words as positional words and (flag, value) pairs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from capcliff.analysis.serve_command.command import FIELD
from capcliff.errors import InputError

_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# The engines' switches (argparse `store_true`): the word after one is not its value, and
# `--switch=value` is refused as argparse refuses it.
_BOOLEAN = frozenset(
    {
        "enable-expert-parallel", "enable-prefix-caching", "no-enable-prefix-caching",
        "enforce-eager", "enable-dp-attention", "disable-radix-cache", "enable-hierarchical-cache",
        "disable-cuda-graph", "trust-remote-code", "disable-log-requests", "disable-log-stats",
        "enable-chunked-prefill", "no-enable-chunked-prefill", "disable-overlap-schedule",
        "async-scheduling", "no-async-scheduling", "headless",
    }
)  # fmt: skip


def command_words(text: str) -> list[str]:
    """The words of the one command in `text`, as a shell splits them."""
    try:
        return shlex.split(_one_command(text))
    except ValueError as exc:
        raise InputError(f"{FIELD}: cannot read {text!r} as a shell command ({exc})") from None


def _one_command(text: str) -> str:
    """`text` as the one command a shell runs from it: a `\\` before a line break joins the
    lines, a `#` that starts a word outside quotes comments out the rest of its line, and a
    line break outside quotes ends the command. What follows that break must be blank or
    comment lines: the engines' recipes paste one command per block, and a line that goes on
    without its `\\` (vllm-project/recipes DeepSeek-V3.md's FP4 line before
    `--enable_expert_parallel`) is run by the shell as a command of its own, its flags never
    reaching the engine; that is refused, not read as one line."""
    out: list[str] = []
    quote, i = "", 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\" and quote == '"' and i + 1 < len(text):
                out.append(text[i : i + 2])
                i += 2
                continue
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "\\":
            joined = text[i + 1 : i + 2] == "\n" or text[i + 1 : i + 3] == "\r\n"
            # a `\\` before a line break joins the lines; before anything else it escapes it
            out.append(" " if joined else text[i : i + 2])
            i += (3 if text[i + 1] == "\r" else 2) if joined else 2
            continue
        elif char == "#" and (not out or out[-1][-1:].isspace()):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        elif char == "\n":
            if not "".join(out).strip():  # blank or comment lines before the command
                out.clear()
                i += 1
                continue
            _refuse_second_command(text, i)
            break
        out.append(char)
        i += 1
    return "".join(out)


def _refuse_second_command(text: str, at: int) -> None:
    """A one-line error when a line after the break at `at` holds more than a comment."""
    for line in text[at + 1 :].splitlines():
        if line.strip() and not line.strip().startswith("#"):
            raise InputError(
                f"{FIELD}: the command goes on after a line break with no `\\` before it "
                f"({line.strip()[:40]!r}); a shell runs that line as a command of its own and "
                "the engine never sees it: end each line but the last with ` \\`"
            )


def split_engine(words: list[str]) -> tuple[str, list[str]]:
    """The engine and the words after its program name."""
    if words[:2] == ["vllm", "serve"]:
        return "vllm", words[2:]
    if words and Path(words[0]).name == "trtllm-serve":
        rest = words[1:]
        return "trtllm", rest[1:] if rest[:1] == ["serve"] else rest
    if len(words) >= 3 and Path(words[0]).name.startswith("python") and words[1] == "-m":
        if words[2] == "sglang.launch_server":
            return "sglang", words[3:]
        if words[2] == "vllm.entrypoints.openai.api_server":
            return "vllm", words[3:]
    raise InputError(
        f"{FIELD}: cannot tell the engine from {' '.join(words[:3])!r}; give a `vllm serve "
        "MODEL ...`, `python -m sglang.launch_server --model-path MODEL ...` or `trtllm-serve "
        "MODEL ...` line"
    )


# vLLM's flags that take one value or more (argparse nargs="+"): `--served-model-name a b`
# answers to both names (vllm/config/model.py served_model_name: str | list[str]), and
# `--lora-modules name=path ...` (vllm/entrypoints/openai/cli_args.py); their words after the
# first were read as stray positional words.
MANY_VALUES = {"vllm": frozenset({"served-model-name", "lora-modules"})}


def split_options(
    words: list[str], many: frozenset[str] = frozenset(), valued: frozenset[str] = frozenset()
) -> tuple[list[str], list[tuple[str, str | None]]]:
    """Positional words and (flag name without dashes, value or None for a switch); a flag of
    `many` takes every word up to the next flag (joined by spaces); a switch of `valued` takes
    an `=value` (the release's parser has it as an optional-value flag)."""
    positional: list[str] = []
    options: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or word == "-":
            positional.append(word)
            i += 1
            continue
        name, eq, value = word.lstrip("-").partition("=")
        if not name or word.startswith("---"):  # `--`, `--=3`, `---tp`: argparse refuses them
            raise InputError(
                f"{FIELD}: {word!r:.40} is not a flag the engine reads; write --name or "
                "--name=value"
            )
        if eq and name.replace("_", "-") in _BOOLEAN - valued:
            # argparse refuses a value after a switch ("ignored explicit argument")
            raise InputError(
                f"{FIELD}: --{name} is a switch and takes no value, got {word!r}; give --{name} "
                "alone (or leave it out)"
            )
        if eq:
            options.append((name, value))
        elif (
            name.replace("_", "-") in _BOOLEAN
            or i + 1 >= len(words)
            or words[i + 1].startswith("--")
        ):
            options.append((name, None))
        elif name.replace("_", "-") in many:
            end = next(
                (j for j in range(i + 1, len(words)) if words[j].startswith("-")), len(words)
            )
            options.append((name, " ".join(words[i + 1 : end])))
            i = end - 1
        else:
            options.append((name, words[i + 1]))
            i += 1
        i += 1
    return positional, options


def take_assignments(words: list[str]) -> list[str]:
    """The leading `VAR=value` words, taken off `words` (after an `env` that runs the same
    command: `env VAR=1 vllm serve ...` is `VAR=1 vllm serve ...`)."""
    if words and words[0] in ("env", "/usr/bin/env"):
        words.pop(0)
    env = []
    while words and _ENV_RE.match(words[0]):
        env.append(words.pop(0))
    return env
