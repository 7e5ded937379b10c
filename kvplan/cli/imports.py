"""``kvplan import``: write a model profile from a Hugging Face config.json or a GGUF file's header."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

HELP = """Write a model profile YAML from a Hugging Face config.json or a GGUF file (header only).

Nothing is downloaded: give a local file. Check the result with 'kvplan profiles validate'."""

app = typer.Typer(help=HELP, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]})

OutOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Write the profile to this file "
                                             "(written whole) instead of stdout.")]
NameOpt = Annotated[str | None, typer.Option("--name", help="Profile name (default: from the file).")]
ParamsOpt = Annotated[str | None, typer.Option("--params", help="Parameter count to write instead of the "
                                               "derived one: '6.74B', '494M'.")]
WeightBitsOpt = Annotated[float | None, typer.Option("--weight-bits", help="Deployment bits per weight to "
                                                     "write (default: 16 for a config, the file's own for "
                                                     "a GGUF).")]

HF_HELP = """Model profile from a Hugging Face config.json (llama, mistral, qwen2, qwen3, gemma2, gemma3,
phi3, deepseek_v2 and alike; a multimodal config's text_config is used).

head_dim comes from the config, else hidden_size / num_attention_heads; a window the config
declares but switches off (use_sliding_window: false) is left out; params are derived from
the shapes (the formula is written into sources.params) unless --params is given."""


@app.command("hf", help=HF_HELP)
def hf(
    config: Annotated[Path, typer.Argument(help="Path to a config.json.", show_default=False)],
    output: OutOpt = None,
    name: NameOpt = None,
    params: ParamsOpt = None,
    weight_bits: WeightBitsOpt = None,
) -> None:
    from kvplan.importers.hf import profile_from_hf_file

    _emit(profile_from_hf_file(config, name=name, params=_params(params), weight_bits=weight_bits), output)


GGUF_HELP = """Model profile from a GGUF file's header (metadata and tensor shapes; no tensor data is read).

Needs the optional 'gguf' package: pip install gguf (or install kvplan with its [gguf] extra: pip install '.[gguf]'). Per-layer KV head counts
(an array head_count_kv) and sliding-window patterns are kept; params are the sum of the
tensor shapes and the weight size is the file's own."""


@app.command("gguf", help=GGUF_HELP)
def gguf(
    model_file: Annotated[Path, typer.Argument(help="Path to a .gguf file.", show_default=False)],
    output: OutOpt = None,
    name: NameOpt = None,
    params: ParamsOpt = None,
    weight_bits: WeightBitsOpt = None,
) -> None:
    from kvplan.importers.gguf import profile_from_gguf_file

    _emit(profile_from_gguf_file(model_file, name=name, params=_params(params), weight_bits=weight_bits), output)


def _params(text: str | None) -> int | None:
    from kvplan.errors import QuantityError, UsageError
    from kvplan.units import parse_count

    if text is None:
        return None
    try:
        return parse_count(text)
    except QuantityError as exc:
        raise UsageError(f"--params: {exc}") from None


def _emit(imported, output: Path | None) -> None:
    from kvplan.cli import terminal
    from kvplan.files.outfiles import write_text_atomic

    if output is None:
        terminal.display_text(imported.yaml_text)
    else:
        write_text_atomic(output, imported.yaml_text)
        terminal.display_note(f"wrote model profile {imported.name!r} to {output}")
    for note in imported.notes:
        terminal.display_note(note)
