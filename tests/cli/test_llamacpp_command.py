"""The `--runtime llama.cpp` command check prints beside its ideal figures prices the same request."""

from __future__ import annotations

import json
import shlex

import pytest


@pytest.mark.parametrize("args", [
    ["-d", "pixel9-pro", "-m", "8b", "-c", "4k", "-n", "2"],  # llama.cpp's -c is the total: 8,192 for 2 × 4,096
    ["-d", "pixel8", "-m", "7b", "-c", "8k"],
    ["-d", "macbook-pro-m4-pro-24gb", "-m", "qwen2.5-7b", "-c", "32k", "-n", "4", "--kv-type", "q8_0"],
])
def test_the_printed_command_prices_what_the_line_says(run, args):
    ideal = json.loads(run("check", *args, "--format", "json").stdout)
    command = ideal["llamacpp_command"]
    assert command and command.endswith("--runtime llama.cpp")
    priced = run(*shlex.split(command)[1:], "--format", "json")
    assert priced.exit_code in (0, 1), priced.stderr
    llama = json.loads(priced.stdout)
    assert llama["memory"]["buffers_bytes"] == ideal["runtime"]["llamacpp_buffers_bytes"]
    # the same tokens per sequence: -c ctx × sequences split over the sequences' streams
    assert llama["ctx"] == ideal["ctx"] * ideal["sequences"] and llama["sequences"] == ideal["sequences"]


@pytest.mark.parametrize("extra", [["--pinned-prefix", "1k"], ["--sliding-window", "1k"]])
def test_no_command_where_llamacpp_refuses_the_request(run, extra):
    ideal = json.loads(run("check", "-d", "pixel8", "-m", "7b", "-c", "8k", *extra, "--format", "json").stdout)
    assert ideal["llamacpp_command"] is None and ideal["runtime"]["llamacpp_buffers_bytes"] is None
