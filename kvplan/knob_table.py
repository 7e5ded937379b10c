"""The one table of knobs: every setting of a configuration beyond device, model and context, declared once.

Each :class:`Knob` row says, for one concept:

- ``name``: its one name below the flags, unit-suffixed where it has a unit (``pinned_prefix_tokens``,
  ``os_reserve_bytes``) — the field of :class:`~kvplan.plan.knobs.Knobs` (built from this table), of
  :class:`~kvplan.plan.scenario.Scenario` (unless ``in_scenario`` is False: the cache-format knobs become
  ``Scenario.k_format`` / ``v_format``), the key a gate file writes, and the name a
  :class:`~kvplan.errors.FieldError` gives it;
- ``flag`` (and ``short``): the CLI option that sets it;
- ``gate_aliases``: older gate-file keys still accepted for it (``pinned_prefix``); ``in_gate`` False: a gate file
  does not set it (it states a speed requirement as the threshold ``min_decode_tok_s`` instead of a target);
- ``kind``: what its value is and how it is read from text (:data:`KINDS`);
- ``default``: the knob's default (None: the profile's); ``typed_default``: that default as a user types it;
- ``help``: its documentation (the CLI's ``--help`` text: the table is where a knob is described, so a new knob
  cannot be added without it, and the core keeps no typer types — only the text);
- ``json_key``: where ``kvplan check --format json`` echoes it (a dotted path); ``json_plain``: the echo is the
  Scenario's value as is (else it is a figure derived from it: the effective ``weight_bits``, the cache formats);
- ``argv``: whether :func:`argv_value` writes it back as a ``kvplan check`` argument by its kind (False: the
  cache-format knobs, written back from the formats they made; ``runtime`` and ``kv_policy``, whose options are
  their own groups).

``tests/unit/test_knob_parity.py`` fails when the CLI, ``Knobs``, ``Scenario``, the gate file, the JSON echo or the
argv round-trip disagree with this table.
"""

from __future__ import annotations

from kvplan.engine import DEFAULT_MARGIN_FRACTION
from kvplan.records import ComparedFigures
from kvplan.units import TOKENS_RULE

# kind → what the value is once read (the Knobs field holds that) and how the CLI types it
KINDS = {
    "count": "a whole number (--sequences 2)",
    "tokens": "a token count with k/M (2k); the CLI appends the k/M rule to the help",
    "size": "bytes, written with a unit ('3 GB')",
    "fraction": "a fraction of 1, as 0.1 or 10%",
    "rate": "a positive rate (tokens/s)",
    "bits": "a whole bit width 1-32",
    "fractional_bits": "a bit width that may be fractional (4.5)",
    "weight_format": "a weight format by name (q4_k_m, mlx-4bit)",
    "cache_type": "a cache type by runtime name (q8_0)",
    "runtime": "a runtime (its own option group: --runtime and each runtime's options)",
    "policy": "a KV compression policy (its own option group: --kv-policy and the --kv-* policy options)",
    "model": "a model profile by name or file, as --model (llama-3.2-1b)",
    "image_size": "an image size in pixels, WIDTHxHEIGHT (896x896)",
    "seconds": "a length of time in seconds, above 0 (30, 2.5)",
    "path": "a file path",
    "layers": "a whole number of layers, 0 or more (--n-gpu-layers 0)",
    "text": "text as typed (a list of REGEX=BUFFER rules)",
    "app_limit": "which per-app memory limit of the device applies: standard or increased",
}

TOKENS_HELP = f"Tokens: {TOKENS_RULE}."


class Knob(ComparedFigures):  # a record, not a dataclass: its 16 fields would compile ~7M instructions at start-up
    __slots__ = _fields = ("name", "flag", "kind", "help", "default", "typed_default", "short", "minimum", "maximum",
                           "noun", "in_scenario", "in_gate", "gate_aliases", "json_key", "json_plain", "argv")
    _defaults = {"default": None, "typed_default": None, "short": None, "minimum": None, "maximum": None,
                 "noun": None, "in_scenario": True, "in_gate": True, "gate_aliases": (), "json_key": None,
                 "json_plain": True, "argv": True}

    name: str
    flag: str
    kind: str
    help: str
    default: object
    typed_default: str | None
    short: str | None
    minimum: int | None
    maximum: int | None
    noun: str | None  # a token count's noun in its errors ("a prefix")
    in_scenario: bool
    in_gate: bool
    gate_aliases: tuple[str, ...]
    json_key: str | None
    json_plain: bool
    argv: bool

    @property
    def option_help(self) -> str:
        """The ``--help`` text: a token count's ends with the k/M rule, so it is never a guess."""
        return f"{self.help} {TOKENS_HELP}" if self.kind == "tokens" else self.help


# In the order of the CLI's --help and of a suggested ``kvplan check`` command line.
KNOBS: tuple[Knob, ...] = (
    Knob("sequences", "--sequences", "count", "Concurrent sequences, each with its own cache.", default=1,
         short="-n", minimum=1, maximum=1_000_000, json_key="sequences"),
    Knob("pinned_prefix_tokens", "--pinned-prefix", "tokens", "Tokens of a shared prefix (system prompt) whose "
         "cache stays resident, counted once (2k).", default=0, typed_default="0", noun="a prefix",
         gate_aliases=("pinned_prefix",), json_key="pinned_prefix_tokens"),
    Knob("weight_bits", "--weight-bits", "fractional_bits", "Bits per weight (may be fractional, q4_0 is 4.5); "
         "default: the model's.", json_key="weight_bits", json_plain=False),
    Knob("weight_type", "--weight-type", "weight_format", "Weight format by name, priced tensor by tensor: a GGUF "
         "type (q4_k_m, q4_0, q8_0, q6_k, iq4_xs, …) or mlx-4bit, mlx-8bit, gptq-4bit, awq-4bit, executorch-8da4w.",
         json_key="weights.type", json_plain=False),
    Knob("weight_group_size", "--weight-group-size", "count", "Group size of a group-quantized --weight-type "
         "(MLX default 64, GPTQ/AWQ 128).", minimum=1, json_key="weights.bytes_by_type", json_plain=False),
    Knob("kv_bits", "--kv-bits", "bits", "Bits per cached K and V value (1-32).", in_scenario=False,
         json_key="k_format", json_plain=False, argv=False),
    Knob("k_bits", "--k-bits", "bits", "Bits per cached key value (overrides --kv-bits).", in_scenario=False,
         json_key="k_format", json_plain=False, argv=False),
    Knob("v_bits", "--v-bits", "bits", "Bits per cached value (overrides --kv-bits).", in_scenario=False,
         json_key="v_format", json_plain=False, argv=False),
    Knob("kv_group_size", "--kv-group-size", "count", "Group-quantize the cache: one fp16 scale per this many "
         "values.", minimum=1, in_scenario=False, json_key="k_format", json_plain=False, argv=False),
    Knob("kv_type", "--kv-type", "cache_type", "Cache type by runtime name: f32, f16, bf16, fp8, q8_0, q4_0, "
         "q4_1, q5_0, q5_1, iq4_nl.", in_scenario=False, json_key="k_format", json_plain=False, argv=False),
    Knob("k_type", "--k-type", "cache_type", "Key cache type (overrides --kv-type).", in_scenario=False,
         json_key="k_format", json_plain=False, argv=False),
    Knob("v_type", "--v-type", "cache_type", "Value cache type (overrides --kv-type).", in_scenario=False,
         json_key="v_format", json_plain=False, argv=False),
    Knob("os_reserve_bytes", "--os-reserve", "size", "Override the device's OS reserve, with its unit: '3 GB', "
         "'2.5 GiB' (a bare 3 is refused).", gate_aliases=("os_reserve",), json_key="memory.os_reserve_bytes",
         json_plain=False),
    Knob("gpu_working_set_bytes", "--gpu-limit", "size", "Override the device's GPU working set (Metal's "
         "recommendedMaxWorkingSetSize), with its unit: '10922.67 MiB'; used for MLX-LM's and llama.cpp's warnings "
         "near or past it.", json_key="memory.gpu_working_set_bytes", json_plain=False),
    Knob("app_limit", "--app-limit", "app_limit", "Which per-app memory limit of the device caps the budget: "
         "'standard' (iOS without the increased-memory-limit entitlement) or 'increased' (with it); default: the "
         "increased one where the profile has it. Devices without a per-app limit are unaffected.",
         json_key="memory.app_limit_bytes", json_plain=False),
    Knob("margin_fraction", "--margin", "fraction", "Headroom under which a fit is 'tight': a fraction of the "
         "budget (0.1) or a percentage (10%); a bare number above 1 is refused.", default=DEFAULT_MARGIN_FRACTION,
         typed_default="10%", gate_aliases=("margin",), json_key="margin_fraction"),
    Knob("target_tokens_per_s", "--target-tok-s", "rate", "Decode target: also report the largest context at or "
         "above this many tokens/s.", in_gate=False, json_key="target_tokens_per_s"),
    Knob("sliding_window", "--sliding-window", "tokens", "Put every layer behind a sliding window of this many "
         "tokens (4096, 4k).", noun="a window", json_key="sliding_window"),
    Knob("draft", "--draft", "model", "Draft model for speculative decoding, named as --model is (llama-3.2-1b): "
         "its weights and its KV cache are resident beside the model's (llama.cpp -md); it must share the model's "
         "vocabulary. 'mtp': the model's own multi-token-prediction head (llama.cpp --spec-type draft-mtp; a model "
         "with mtp_layers).", json_key=None),
    Knob("draft_max_tokens", "--draft-max", "count", "Tokens the draft proposes per step (llama.cpp build 11434: "
         "--spec-draft-n-max, default 3).", default=3, minimum=1, maximum=1024, json_key=None),
    Knob("acceptance_rate", "--acceptance", "fraction", "Per-token acceptance rate of the draft's tokens, above 0 "
         "and below 1 (0.7 or 70%): prices speculative decoding's speed.", json_key=None),
    Knob("draft_kv_type", "--draft-kv-type", "cache_type", "Cache type of the draft's K and V (llama.cpp "
         "-ctkd/-ctvd; default f16 under llama.cpp, else the cache format of the model).", json_key=None),
    Knob("images", "--images", "count", "Images in the context: the model's vision encoder (weights and compute "
         "buffer) is resident and each image's tokens are added to the context the KV cache holds.", default=0,
         minimum=0, maximum=10_000),
    Knob("image_size", "--image-size", "image_size", "Size of each image, WIDTHxHEIGHT in pixels (default: the "
         "encoder's native size; Gemma 3 resizes every image to 896x896, Qwen2.5-VL's tokens follow the size)."),
    Knob("audio", "--audio", "count", "Audio clips in the context: the model's audio encoder (weights and compute "
         "buffer) is resident and each clip's tokens are added to the context the KV cache holds.", default=0,
         minimum=0, maximum=10_000),
    Knob("audio_seconds", "--audio-seconds", "seconds", "Length of each audio clip in seconds (default 30: one "
         "Whisper window; llama.cpp encodes a clip in 30 s chunks, the processors count tokens by length)."),
    Knob("mmproj", "--mmproj", "path", "A projector GGUF (llama.cpp's mmproj file): the vision and/or audio encoder "
         "priced from its header (clip.* keys, exact tensor bytes), in place of the model profile's encoders."),
    Knob("n_gpu_layers", "--n-gpu-layers", "layers", "llama.cpp's -ngl: layers whose weights and KV cache live "
         "in GPU memory; the output layer goes first, then the LAST repeating layers (more than the layers: all). "
         "Plans each memory (a discrete GPU's gpu_memory, or the GPU's working set in unified memory) with its "
         "own budget and verdict. Default with --n-cpu-moe, --override-tensor or --stream-experts: all.",
         minimum=0),
    Knob("n_cpu_moe", "--n-cpu-moe", "layers", "llama.cpp's --n-cpu-moe: keep the expert weights of the first N "
         "layers in host RAM (the rest of the layer on the GPU).", minimum=0),
    Knob("override_tensor", "--override-tensor", "text", "llama.cpp's -ot: REGEX=BUFFER rules, comma-separated, "
         "the first match wins: CPU keeps a tensor in host RAM, any GPU name (CUDA0, Metal, GPU) in GPU memory, "
         "FLASH streams it from storage; e.g. 'blk\\.(1[0-9])\\.ffn_.*_exps=CPU'.",
         ),
    Knob("stream_experts", "--stream-experts", "layers", "Stream the expert weights of the first N layers from "
         "flash (more than the layers: all): they are not resident, and a decode step reads only the experts a "
         "token picks, at the device's flash_read.", minimum=0),
    Knob("expert_cache_hit", "--expert-cache-hit", "fraction", "Share of the streamed expert reads served from "
         "RAM (experts still in the page cache), 0.3 or 30%; default 0: every active expert read from flash.",
         ),
    Knob("kv_policy", "--kv-policy", "policy", "KV cache compression policy: a YAML file (docs/kv-policies.md), "
         "or 'none' for the plain cache even when the model profile has a kv_policy.", json_key="kv_policy",
         json_plain=False, argv=False),
    Knob("runtime", "--runtime", "runtime", "Whose allocation to compute: ideal (the contract's formula), "
         "llama.cpp, transformers, mlx-lm, ollama, onnxruntime-genai, litert-lm or executorch (default: the model profile's "
         "runtime, else ideal). Under llama.cpp --ctx is -c, the TOTAL context shared by the --parallel sequences.",
         json_key="runtime", json_plain=False, argv=False),
)

BY_NAME: dict[str, Knob] = {k.name: k for k in KNOBS}

# kind → the Python type of the value once read (what a Knobs / Scenario field holds)
VALUE_TYPES = {"count": int, "tokens": int, "size": int, "fraction": float, "rate": float, "bits": int,
               "fractional_bits": float, "weight_format": str, "cache_type": str, "runtime": object, "policy": object,
               "model": object, "image_size": str, "seconds": float, "path": str, "layers": int, "text": str, "app_limit": str}

# The knobs of the CLI's cache option group (runtime and policy are groups of their own).
CACHE_KNOBS: tuple[Knob, ...] = tuple(k for k in KNOBS if k.kind not in ("runtime", "policy"))

# Gate-file key → knob name: each knob's name, and its older keys (still accepted, documented as aliases).
GATE_KEYS: dict[str, str] = {key: k.name for k in KNOBS if k.in_gate for key in (k.name, *k.gate_aliases)}


def argv_value(knob: Knob, value) -> str | None:
    """``value`` of ``knob`` as a ``kvplan check`` argument, None when it is the default (nothing to write)."""
    if value is None or value == knob.default or (knob.kind == "tokens" and not value):
        return None
    if knob.kind == "size":
        return f"{value}B"  # sizes always carry a unit
    if knob.kind == "fraction":
        return f"{value * 100:g}%"
    if knob.kind in ("fractional_bits", "rate"):
        return f"{value:g}"
    if knob.kind == "model":  # a profile (resolved) is written back by its name
        return str(getattr(value, "name", value))
    return str(value)
