"""``kvplan import``: write a model profile from a Hugging Face config.json or a GGUF file's header."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

HELP = """Write a model profile YAML from a Hugging Face config.json or a GGUF file (header only).

'kvplan import hf' also takes a Hub id (ORG/NAME[@REV][:QUANT] or hf:…): config.json (or a GGUF
header, by range) is then read from the Hub. Check the result with 'kvplan profiles validate'."""

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

SOURCE is a local config.json (or a folder holding one), else a Hub id ORG/NAME[@REV][:QUANT]
(or hf:ORG/NAME…): kvplan reads config.json and the exact parameter count from the safetensors
metadata through huggingface_hub, or a GGUF file's header by HTTP range with :QUANT
(cached; HF_TOKEN for gated models, HF_HUB_OFFLINE=1 to use the cache only).

head_dim comes from the config, else hidden_size / num_attention_heads; a window the config
declares but switches off (use_sliding_window: false) is left out; params are derived from
the shapes (the formula is written into sources.params) unless --params is given."""


@app.command("hf", help=HF_HELP)
def hf(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help="Path to a config.json (or its folder), or a "
                                          "Hub id ORG/NAME[@REV][:QUANT].", show_default=False)],
    output: OutOpt = None,
    name: NameOpt = None,
    params: ParamsOpt = None,
    weight_bits: WeightBitsOpt = None,
) -> None:
    from kvplan.importers.hf import profile_from_hf_file

    path = Path(source)
    if not path.exists() and _looks_like_hub_id(source):
        if output is not None:  # a bad output path fails before any request
            from kvplan.files.outfiles import check_writable

            check_writable(output)
        _emit(_from_hub(source, name=name, params=_params(params), weight_bits=weight_bits), output)
        return
    if path.is_dir() and (path / "config.json").is_file():
        path = path / "config.json"
    _emit(profile_from_hf_file(path, name=name, params=_params(params), weight_bits=weight_bits), output)


_HUB_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./@:")


def _looks_like_hub_id(text: str) -> bool:
    """``hf:…``, or ``ORG/NAME[@REV][:QUANT]`` that is no local path (one '/', no leading '.', '/' or '~')."""
    text = text.strip()
    if text.startswith("hf:"):
        return True
    repo = text.split("@", 1)[0].split(":", 1)[0]
    return (repo.count("/") == 1 and not text.startswith((".", "/", "~")) and set(text) <= _HUB_ID_CHARS
            and not repo.endswith((".json", ".yaml", ".yml", ".gguf")))


def _from_hub(source: str, *, name: str | None, params: int | None, weight_bits: float | None):
    """The profile ``hf:…`` resolves to (kvplan.hub.resolve), with --name / --params / --weight-bits applied."""
    from kvplan.hub.resolve import resolve_hub_profile
    from types import SimpleNamespace

    from kvplan.importers.common import finish

    ref = source.strip()
    found = resolve_hub_profile(ref if ref.startswith("hf:") else "hf:" + ref)
    notes = [f"read from the Hugging Face Hub: {found.origin}" + (" (kvplan's Hub cache)" if found.from_cache else ""),
             *found.notes]
    overrides = {"name": name, "params": params, "weight_bits": weight_bits}
    if all(v is None for v in overrides.values()):
        return SimpleNamespace(yaml_text=found.yaml_text, notes=tuple(notes), name=found.mapping.get("name"))
    mapping = dict(found.mapping)
    sources = dict(mapping.get("sources") or {})
    for key, value in overrides.items():
        if value is not None:
            mapping[key] = value
            if key != "name":
                sources[key] = f"given on the command line (--{key.replace('_', '-')}); the Hub gave {found.mapping.get(key)}"
    mapping["sources"] = sources
    header = [line[2:] for line in found.yaml_text.splitlines() if line.startswith("# ")]
    return finish([(k, v, "") for k, v in mapping.items()], header, found.origin, notes)


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
