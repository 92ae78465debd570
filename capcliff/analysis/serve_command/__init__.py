"""An engine launch command a user runs today, read into the deployment settings capcliff models.

This package owns reading `vllm serve MODEL ...`, `python -m sglang.launch_server ...` and
`trtllm-serve MODEL ...` lines (with shell quoting, `\\`-newlines, `#` comments, `--flag=value`
and leading `VAR=value` assignments; a line break without its `\\` ends the command, and more
after it is refused) and the YAML file they name (vLLM's `--config`, trtllm-serve's
`--config/--extra_llm_api_options`, `engine_yaml`) into the model, the layout and the
`DeploymentSettings` keys those flags set; every flag it does not model is listed in
`ServeCommand.unmodelled`, never dropped in silence. What the engine's own parser refuses is
refused here too (a switch given a value, a `--speculative-config` that is not a JSON object or
has K < 1, an SGLang choice it does not offer, fewer `CUDA_VISIBLE_DEVICES` than the TP group).
`merged_settings` and `merged_target` combine it with what the user also gave as capcliff flags
or spec keys: a different value for the same setting is a one-line error.

One step per module, each importing only those before it:
- `command`: `ServeCommand`, the result, and `FIELD`, the name every error starts with;
- `shell`: the text as one shell command, its words, assignments, engine and options;
- `config_files`: the options of the YAML file a line names and of vLLM's dotted JSON keys;
- `readers`: each engine's table of flag readers, and what the flags say (`Reading`);
- `speculation`: the engines' speculation flags as capcliff's `speculative`;
- `finish`: the layout, and the settings that need it;
- `parse`: `parse_serve_command`, the steps above in order, and `named_files`;
- `merge`: the command combined with the user's own flags or spec keys.
"""

from capcliff.analysis.serve_command.command import ServeCommand
from capcliff.analysis.serve_command.merge import (
    catalog_model,
    merged_settings,
    merged_target,
    read_into,
)
from capcliff.analysis.serve_command.parse import named_files, parse_serve_command

__all__ = [
    "ServeCommand",
    "catalog_model",
    "merged_settings",
    "merged_target",
    "named_files",
    "parse_serve_command",
    "read_into",
]
