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
PARAMS_SOURCE = "given on the command line (--params)"  # sources.params of a profile given --params
NameOpt = Annotated[str | None, typer.Option("--name", help="Profile name (default: from the file).")]
ParamsOpt = Annotated[str | None, typer.Option("--params", help="Parameter count to write instead of the "
                                               "derived one: '6.74B', '494M'.")]
WeightBitsOpt = Annotated[float | None, typer.Option("--weight-bits", help="Uniform bits per weight to write "
                                                     "(default: 4, as every built-in profile, for a config; the "
                                                     "file's own size for a GGUF).")]
WeightTypeOpt = Annotated[str | None, typer.Option("--weight-type", help="Weight format to write as weight_type, "
                                                   "priced tensor by tensor: a GGUF type (q4_k_m, q8_0, …) or "
                                                   "mlx-4bit, gptq-4bit, … (default for a GGUF: its "
                                                   "general.file_type).")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing --output file.")]

HF_HELP = """Model profile from a Hugging Face config.json (llama, mistral, qwen2, qwen3, gemma2, gemma3,
phi3, deepseek_v2 and alike; a multimodal config's text_config is used). Mixtures of experts of
deepseek_v2/v3, mixtral, qwen2_moe and qwen3_moe get their experts; a recurrent, state-space or
hybrid model (rwkv, mamba, jamba, recurrent_gemma, …), another mixture of experts, or a config
lacking keys is refused (exit 2, naming the architecture or every missing key).

SOURCE is a local config.json (or a folder holding one), else a Hub id ORG/NAME[@REV][:QUANT]
(or hf:ORG/NAME…): kvplan reads config.json and the exact parameter count from the safetensors
metadata through huggingface_hub, or a GGUF file's header by HTTP range with :QUANT
(cached; HF_TOKEN for gated models, HF_HUB_OFFLINE=1 to use the cache only).

The profile is named (unless --name) after the config's _name_or_path (its last part), else a
config file named after the model (gemma-3-1b.json), else the Hugging Face cache folder
(models--ORG--NAME), else the folder holding config.json when it is the model's folder (given as
SOURCE, or holding weights or a tokenizer beside the config), else the config's model_type: a
folder with a lone config.json ('my/config.json') is never taken for the model's name.

Weights: 4 bits per weight (weight_bits: 4, as every built-in profile) unless --weight-bits or
--weight-type says otherwise. head_dim comes from the config, else hidden_size /
num_attention_heads; a window the config declares but switches off (use_sliding_window: false)
is left out; params are derived from the shapes (the formula is written into sources.params)
unless --params is given. An existing --output file is kept unless --force."""


@app.command("hf", help=HF_HELP)
def hf(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help="Path to a config.json (or its folder), or a "
                                          "Hub id ORG/NAME[@REV][:QUANT].", show_default=False)],
    output: OutOpt = None,
    name: NameOpt = None,
    params: ParamsOpt = None,
    weight_bits: WeightBitsOpt = None,
    weight_type: WeightTypeOpt = None,
    force: ForceOpt = False,
) -> None:
    from kvplan.importers.hf import profile_from_hf_file

    _check_output(output, force)  # before any work or request
    count = _check_options(name, params, weight_bits, weight_type)
    path = Path(source)
    if not path.exists() and _looks_like_hub_id(source):
        _emit(_from_hub(source, name=name, params=count, weight_bits=weight_bits,
                        weight_type=weight_type), output, weight_type)
        return
    _emit(profile_from_hf_file(path, name=name, params=count, params_source=PARAMS_SOURCE, weight_bits=weight_bits,
                               weight_type=weight_type), output, weight_type)


_HUB_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./@:")


def _looks_like_hub_id(text: str) -> bool:
    """``hf:…``, or ``ORG/NAME[@REV][:QUANT]`` that is no local path (one '/', no leading '.', '/' or '~')."""
    text = text.strip()
    if text.startswith("hf:"):
        return True
    repo = text.split("@", 1)[0].split(":", 1)[0]
    return (repo.count("/") == 1 and not text.startswith((".", "/", "~")) and set(text) <= _HUB_ID_CHARS
            and not repo.endswith((".json", ".yaml", ".yml", ".gguf")))


def _from_hub(source: str, *, name: str | None, params: int | None, weight_bits: float | None,
              weight_type: str | None = None):
    """The profile ``hf:…`` resolves to (kvplan.hub.resolve), with --name / --params / --weight-bits /
    --weight-type applied."""
    from kvplan.hub.resolve import resolve_hub_profile
    from types import SimpleNamespace

    from kvplan.importers.common import finish

    ref = source.strip()
    found = resolve_hub_profile(ref if ref.startswith("hf:") else "hf:" + ref)
    notes = [f"read from the Hugging Face Hub: {found.origin}" + (" (kvplan's Hub cache)" if found.from_cache else ""),
             *found.notes]
    if weight_type is not None:
        from kvplan.importers.common import weight_format_name

        weight_type = weight_format_name(weight_type)
    overrides = {"name": name, "params": params, "weight_bits": weight_bits, "weight_type": weight_type}
    if all(v is None for v in overrides.values()):
        return SimpleNamespace(yaml_text=found.yaml_text, notes=tuple(notes), name=found.mapping.get("name"))
    mapping = dict(found.mapping)
    sources = dict(mapping.get("sources") or {})
    for key, value in overrides.items():
        if value is not None:
            mapping[key] = value
            if key != "name":
                sources[key] = f"given on the command line (--{key.replace('_', '-')}); the Hub gave {found.mapping.get(key)}"
    if (weight_bits is not None or weight_type is not None) and mapping.get("weights") is not None:
        # the Hub file's own size would win over the width or format asked for (see weights_in_force)
        notes.append(f"--weight-{'type' if weight_type is not None else 'bits'} replaces the file's "
                     f"{mapping.pop('weights'):,} bytes of tensors")
        sources.pop("weights", None)
    mapping.pop("sources", None)
    mapping["sources"] = sources
    header = [line[2:] for line in found.yaml_text.splitlines() if line.startswith("# ")]
    return finish([(k, v, "") for k, v in mapping.items()], header, found.origin, notes)


GGUF_HELP = """Model profile from a GGUF file's header (metadata and tensor shapes; no tensor data is read).

Read with the header parser '--model model.gguf' uses (every shard of a split model), so both give
the same figures; no 'gguf' package is needed. Per-layer KV head counts (an array head_count_kv) and sliding-window patterns
are kept; params are the sum of the tensor shapes; the weight size ('weights') is the file's own
tensor bytes and its general.file_type is written as weight_type (q4_k_m, q8_0, …), so the profile
and '--weight-type' agree (a note says so when kvplan's pricing of the format differs from the
file). --weight-bits or another --weight-type replaces the file's size. An existing --output file
is kept unless --force."""


@app.command("gguf", help=GGUF_HELP)
def gguf(
    model_file: Annotated[Path, typer.Argument(help="Path to a .gguf file.", show_default=False)],
    output: OutOpt = None,
    name: NameOpt = None,
    params: ParamsOpt = None,
    weight_bits: WeightBitsOpt = None,
    weight_type: WeightTypeOpt = None,
    force: ForceOpt = False,
) -> None:
    from kvplan.importers.gguf import profile_from_gguf_file

    _check_output(output, force)
    count = _check_options(name, params, weight_bits, weight_type)
    imported = profile_from_gguf_file(model_file, name=name, params=count, params_source=PARAMS_SOURCE,
                                      weight_bits=weight_bits, weight_type=weight_type)
    _emit(imported, output, weight_type)


def _check_output(output: Path | None, force: bool) -> None:
    """An existing file is kept unless --force; an unwritable path fails before any work."""
    from kvplan.errors import UsageError
    from kvplan.files.outfiles import check_writable, is_stdout

    if output is None:
        return
    if output.exists() and not output.is_dir() and not is_stdout(output) and not force:
        raise UsageError(f"--output: {output} exists; add --force to overwrite it")
    check_writable(output)


def _pricing_notes(imported, weight_type_given: str | None) -> list[str]:
    """Price the profile's weight_type once: an unpriceable format given on the command line is an error (the
    profile would fail in every check), and a file whose bytes differ from kvplan's pricing is said so."""
    from kvplan.errors import FieldError
    from kvplan.plan.weights import priced_weights

    model = getattr(imported, "model", None)
    weight_type = getattr(model, "weight_type", None)
    if weight_type is None:
        return []
    try:
        pricing = priced_weights(model, weight_type)
    except FieldError as exc:
        if weight_type_given is not None:
            raise
        return [f"weight_type {weight_type}: kvplan cannot price it for this model ({exc.message}); "
                "checks use the file's bytes"]
    if model.weights is None or pricing.total_bytes == model.weights:
        return []
    diff = model.weights - pricing.total_bytes
    return [f"the file holds {model.weights:,} bytes of tensors; kvplan prices {weight_type} for this shape at "
            f"{pricing.total_bytes:,} ({diff:+,}): the profile keeps the file's bytes, --weight-type {weight_type} "
            "gives kvplan's"]

def _check_options(name: str | None, params: str | None, weight_bits: float | None,
                   weight_type: str | None) -> int | None:
    """The options that fill profile fields, checked as typed before any file or request is read (an error
    names the option, not the line of a profile the user never wrote); the parameter count they give."""
    from kvplan.cli.options.declarations import parse_option
    from kvplan.importers.common import weight_format_name
    from kvplan.profiles.field_rules import check_profile_name, check_weight_bits
    from kvplan.units import parse_count

    if name is not None:
        check_profile_name(name)
    if weight_bits is not None:
        check_weight_bits(weight_bits)
    if weight_type is not None:
        weight_format_name(weight_type)
    return None if params is None else parse_option("--params", parse_count, params)


def _emit(imported, output: Path | None, weight_type_given: str | None = None) -> None:
    from kvplan.cli import terminal
    from kvplan.cli.options.fieldnames import cli_message
    from kvplan.files.outfiles import write_text_atomic

    notes = [*imported.notes, *_pricing_notes(imported, weight_type_given)]
    if output is None:
        terminal.display_text(imported.yaml_text)
    else:
        write_text_atomic(output, imported.yaml_text)
        terminal.display_written(f"wrote model profile {imported.name!r} to {output}")
    for note in notes:
        terminal.display_note(cli_message(note))
