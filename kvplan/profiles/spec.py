"""Device and model profiles: pydantic models of the YAML files, all quantities in base units.

Sizes and rates need their unit (``8 GB``, ``51.2 GB/s``, ``2.1 TFLOP/s``; a bare number other than 0
is refused with the unit it probably meant), counts may be bare or use ``k``/``M``/``B`` (``6.74B``),
token counts ``8192``, ``8,192`` or ``8k``, fractions ``0.6`` or ``60%`` (the rules: :mod:`kvplan.units`).
Each field holds the base-unit value once validated. Unknown keys are errors (``extra="forbid"``), and
cross-field checks report the field at fault.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, WithJsonSchema,
                      field_validator, model_validator)

from kvplan.engine.formats import format_from_name
from kvplan.engine.llamacpp_process import BUILDS as LLAMACPP_BUILDS
from kvplan.profiles.methods import ModelMethods, element_format
from kvplan.profiles.policy import PolicySpec
from kvplan.profiles.runtime import OLLAMA_KV_CACHE_TYPES, RUNTIME_SPECS
from kvplan.profiles import fields as js
from kvplan.units import (parse_count, parse_duration_s, parse_flop_per_s, parse_fraction,
                          parse_rate_bytes_per_s, parse_size_bytes, parse_tokens)

SLUG_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
_SLUG_RE = re.compile(SLUG_PATTERN)


def _whole(value: object) -> object:
    """Counts must be whole numbers: refuse booleans and fractions that lax parsing would accept."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got a boolean ({str(value).lower()})")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise ValueError(f"expected a whole number, got {value}")
        return int(value)
    if isinstance(value, str):
        raise ValueError(f"expected a whole number, got a string {value!r}")
    return value


def _real(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got a boolean ({str(value).lower()})")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value}")
    if isinstance(value, str):
        raise ValueError(f"expected a number, got a string {value!r}")
    return value


def _slug(value: object) -> object:
    if isinstance(value, str) and not _SLUG_RE.match(value):
        raise ValueError(f"{value!r} is not a valid name: use lowercase letters, digits, '.', '_' and '-'")
    return value


# YAML 1.1's other booleans, which YAML 1.2 (and kvplan's reader) reads as text.
_YAML11_TRUTH = {"yes": "true", "on": "true", "y": "true", "no": "false", "off": "false", "n": "false"}


def _strict_bool(value: object) -> object:
    if not isinstance(value, bool):
        truth = _YAML11_TRUTH.get(value.lower()) if isinstance(value, str) else None
        hint = f" (YAML 1.2 reads {value} as text, not a boolean: write {truth})" if truth else ""
        raise ValueError(f"expected true or false, got {value!r}{hint}")
    return value


# WithJsonSchema: what the YAML may say (strings with units), for `kvplan profiles schema`.
PositiveInt = Annotated[int, BeforeValidator(_whole), Field(gt=0, le=10**12),
                        WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 10**12})]
# The most layers a model profile may have. The deepest published LLMs have about 100–130 blocks (GPT-3 96,
# PaLM 540B 118, Llama 3.1 405B 126), so 10,000 is far beyond anything real; what it stops is a typo or a damaged
# file (10⁸ layers), whose per-layer work (cache layouts, window patterns, tensor tables) would run for minutes
# and take gigabytes instead of failing at once. The importers check it before any per-layer work.
MAX_LAYERS = 10_000


def layer_count_problem(value: int) -> str | None:
    """Why ``value`` layers is refused (None when it is within :data:`MAX_LAYERS`), for the schema and the importers."""
    if value > MAX_LAYERS:
        return (f"{value:,} layers is more than kvplan plans for (at most {MAX_LAYERS:,}; the deepest published "
                "models have about 100–130)")
    return None


def _layers(value: object) -> object:
    value = _whole(value)
    if isinstance(value, int):
        problem = layer_count_problem(value)
        if problem:
            raise ValueError(problem)
    return value


LayerCount = Annotated[int, BeforeValidator(_layers), Field(gt=0),
                       WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_LAYERS})]
Bits = Annotated[int, BeforeValidator(_whole), Field(ge=1, le=32),
                 WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 32})]
Slug = Annotated[str, BeforeValidator(_slug), WithJsonSchema({"type": "string", "pattern": SLUG_PATTERN})]
SizeBytes = Annotated[int, BeforeValidator(parse_size_bytes), WithJsonSchema(js.SIZE_SCHEMA)]
PositiveSizeBytes = Annotated[int, BeforeValidator(lambda v: parse_size_bytes(v, positive=True)),
                              WithJsonSchema(js.POSITIVE_SIZE_SCHEMA)]
RateBytesPerS = Annotated[float, BeforeValidator(parse_rate_bytes_per_s), WithJsonSchema(js.RATE_SCHEMA)]
FlopPerS = Annotated[float, BeforeValidator(parse_flop_per_s), WithJsonSchema(js.FLOPS_SCHEMA)]
Count = Annotated[int, BeforeValidator(parse_count), WithJsonSchema(js.COUNT_SCHEMA)]
Tokens = Annotated[int, BeforeValidator(parse_tokens), WithJsonSchema(js.TOKENS_SCHEMA)]
StrictBool = Annotated[bool, BeforeValidator(_strict_bool), WithJsonSchema({"type": "boolean"})]
WeightBits = Annotated[float, BeforeValidator(_real), Field(gt=0, le=32),
                       WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "maximum": 32})]
Sources = dict[str, str]
DurationS = Annotated[float, BeforeValidator(parse_duration_s), WithJsonSchema(js.DURATION_SCHEMA)]
FractionOrPercent = Annotated[float, BeforeValidator(parse_fraction), WithJsonSchema(js.FRACTION_SCHEMA)]

def lower_name(value: object) -> object:
    """An enumerated value in any letter case (``Android``, ``IOS``), as the lowercase name kvplan keeps: one rule
    for every enumerated value (docs/profiles.md "Letter case"); units stay case-sensitive (``mB`` is no ``MB``)."""
    return value.strip().lower() if isinstance(value, str) else value


Platform = Annotated[Literal["android", "ios", "macos", "linux", "windows"], BeforeValidator(lower_name)]


class _Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, defer_build=True)

    name: Slug
    aliases: list[Slug] = []
    description: str = ""
    sources: Sources = {}


class Device(_Profile):
    """A device: memory, bandwidth and storage, each figure with its source."""

    platform: Platform | None = None
    ram: PositiveSizeBytes
    os_reserve: SizeBytes
    memory_bandwidth: RateBytesPerS
    flash_read: RateBytesPerS
    flash_write: RateBytesPerS | None = None
    bandwidth_efficiency: FractionOrPercent = Field(1.0, description=js.DEVICE_FIELD_DOCS["bandwidth_efficiency"])
    compute: FlopPerS | None = None
    compute_efficiency: FractionOrPercent = Field(1.0, description=js.DEVICE_FIELD_DOCS["compute_efficiency"])
    decode_latency: DurationS = Field(0.0, description=js.DEVICE_FIELD_DOCS["decode_latency"])
    runtime_overhead: SizeBytes = 0
    cpu_features: Literal["avx2", "avx512", "neon-i8mm", "neon-dotprod", "none"] | None = None
    # Metal's recommendedMaxWorkingSetSize: MLX-LM wires it and warns near it, ggml warns past it (None: unknown)
    gpu_working_set: PositiveSizeBytes | None = Field(None, description=js.DEVICE_FIELD_DOCS["gpu_working_set"])
    # a discrete GPU's own memory and its bandwidth (None: one memory, or unified memory)
    gpu_memory: PositiveSizeBytes | None = Field(None, description=js.DEVICE_FIELD_DOCS["gpu_memory"])
    gpu_memory_bandwidth: RateBytesPerS | None = Field(None, description=js.DEVICE_FIELD_DOCS["gpu_memory_bandwidth"])
    # the per-app (per-process) memory cap the OS enforces: iOS's without / with the increased-memory-limit
    # entitlement, a Linux cgroup's memory.max (None: no fixed cap, as on Android)
    app_memory_limit: PositiveSizeBytes | None = Field(None, description=js.DEVICE_FIELD_DOCS["app_memory_limit"])
    app_memory_limit_increased: PositiveSizeBytes | None = Field(
        None, description=js.DEVICE_FIELD_DOCS["app_memory_limit_increased"])

    @field_validator("os_reserve")
    @classmethod
    def _reserve_below_ram(cls, value: int, info: ValidationInfo) -> int:
        ram = info.data.get("ram")
        if ram is not None and value >= ram:
            raise ValueError(f"must be less than ram ({value:,} ≥ {ram:,} bytes)")
        return value


class Mla(BaseModel):
    """Multi-head latent attention: the cache holds one latent row per token per layer."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    kv_lora_rank: PositiveInt
    qk_rope_head_dim: Annotated[int, BeforeValidator(_whole), Field(ge=0, le=10**6),
                                WithJsonSchema({"type": "integer", "minimum": 0, "maximum": 10**6})]


_MIXER_FIELDS = {
    "short_conv": ("conv_channels",),
    "mamba2": ("ssm_heads", "ssm_head_dim", "ssm_groups", "ssm_state_size"),
    "gated_deltanet": ("linear_key_heads", "linear_key_head_dim", "linear_value_heads", "linear_value_head_dim"),
}
StateMixer = Annotated[Literal["short_conv", "mamba2", "gated_deltanet"], BeforeValidator(lower_name)]
LayerIndices = list[Annotated[int, BeforeValidator(_whole), Field(ge=0, lt=MAX_LAYERS)]]


class StateSpec(BaseModel):
    """The state layers of a hybrid model: which layers keep a fixed-size state per sequence instead of a KV
    cache, and the widths that size it (docs/profiles.md "State layers")."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    mixer: StateMixer
    layers: LayerIndices
    feedforward_layers: LayerIndices = []
    parallel_attention: bool = False
    conv_kernel_tokens: PositiveInt
    conv_channels: PositiveInt | None = None
    ssm_heads: PositiveInt | None = None
    ssm_head_dim: PositiveInt | None = None
    ssm_groups: PositiveInt | None = None
    ssm_state_size: PositiveInt | None = None
    linear_key_heads: PositiveInt | None = None
    linear_key_head_dim: PositiveInt | None = None
    linear_value_heads: PositiveInt | None = None
    linear_value_head_dim: PositiveInt | None = None

    @model_validator(mode="after")
    def _fields_of_the_mixer(self):
        needed = _MIXER_FIELDS[self.mixer]
        missing = [f for f in needed if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.mixer} state needs {', '.join(missing)}")
        foreign = [f for names in _MIXER_FIELDS.values() for f in names
                   if f not in needed and getattr(self, f) is not None]
        if foreign:
            raise ValueError(f"{', '.join(foreign)} do not describe a {self.mixer} state "
                             f"(it takes {', '.join(needed)})")
        if not self.layers:
            raise ValueError("layers: give at least one state layer")
        both = sorted(set(self.layers) & set(self.feedforward_layers))
        if both:
            raise ValueError(f"layer {both[0]} is in both layers and feedforward_layers")
        return self


EncoderKind = Annotated[Literal["gemma3", "idefics3", "qwen2.5vl"], BeforeValidator(lower_name)]
_ENCODER_FIELDS = {"gemma3": ("tokens_per_image",), "idefics3": ("scale_factor", "longest_edge"),
                   "qwen2.5vl": ("merge", "window_pattern", "min_pixels", "max_pixels")}


class EncoderSpec(BaseModel):
    """A vision encoder (ViT + projector, llama.cpp's ``mmproj`` file) beside the language model:
    its shape, the GGUF type of its matrices, and how its processor turns an image into context tokens
    (docs/profiles.md "Vision encoder")."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    kind: EncoderKind  # llama.cpp clip.projector_type
    hidden_size: PositiveInt
    intermediate_size: PositiveInt
    layers: PositiveInt
    heads: PositiveInt
    patch_size: PositiveInt
    image_size: PositiveInt  # the encoder's native image side (Idefics3: its tile)
    projection_dim: PositiveInt  # the language model's embedding width
    weight_type: Literal["f16", "f32", "bf16", "q8_0"] = "f16"
    weights: PositiveSizeBytes | None = None  # exact tensor bytes (read from a projector GGUF)
    tokens_per_image: PositiveInt | None = None  # gemma3: mm_tokens_per_image
    scale_factor: PositiveInt | None = None  # idefics3: pixel shuffle
    longest_edge: PositiveInt | None = None  # idefics3: the processor's resize before tiling
    merge: PositiveInt | None = None  # qwen2.5vl: spatial merge
    window_pattern: PositiveInt | None = None  # qwen2.5vl: a full-attention layer every this many
    min_pixels: PositiveInt | None = None  # qwen2.5vl processor bounds
    max_pixels: PositiveInt | None = None

    @model_validator(mode="after")
    def _fields_of_the_kind(self):
        needed = _ENCODER_FIELDS[self.kind]
        missing = [f for f in needed if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.kind} encoder needs {', '.join(missing)}")
        foreign = [f for names in _ENCODER_FIELDS.values() for f in names
                   if f not in needed and getattr(self, f) is not None]
        if foreign:
            raise ValueError(f"{', '.join(foreign)} do not describe a {self.kind} encoder "
                             f"(it takes {', '.join(needed)})")
        if self.hidden_size % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide hidden_size ({self.hidden_size})")
        if self.image_size % self.patch_size:
            raise ValueError(f"patch_size ({self.patch_size}) must divide image_size ({self.image_size})")
        return self


AudioEncoderKind = Annotated[Literal["ultravox", "qwen2a", "voxtral"], BeforeValidator(lower_name)]


class AudioEncoderSpec(BaseModel):
    """An audio encoder (a Whisper encoder + projector, the audio half of llama.cpp's ``mmproj`` file) beside the
    language model: its shape, the GGUF type of its matrices and how its frames become context tokens
    (docs/profiles.md "Audio encoder")."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    kind: AudioEncoderKind  # llama.cpp clip.projector_type (clip.audio.projector_type in a mixed file)
    hidden_size: PositiveInt  # d_model
    intermediate_size: PositiveInt  # encoder_ffn_dim
    layers: PositiveInt  # encoder_layers
    heads: PositiveInt  # encoder_attention_heads
    mel_bins: PositiveInt  # num_mel_bins
    projection_dim: PositiveInt  # the language model's embedding width
    positions: PositiveInt = 1500  # max_source_positions: rows of the learned position embedding
    stack_factor: PositiveInt | None = None  # frames stacked per token (ultravox 8, voxtral 4)
    projector_hidden: PositiveInt | None = None  # ultravox: the projector's width before its SwiGLU
    weight_type: Literal["f16", "f32", "bf16", "q8_0"] = "f16"
    weights: PositiveSizeBytes | None = None  # exact tensor bytes (read from a projector GGUF)

    @model_validator(mode="after")
    def _fields_of_the_kind(self):
        if self.hidden_size % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide hidden_size ({self.hidden_size})")
        if self.kind != "ultravox" and self.projector_hidden is not None:
            raise ValueError(f"projector_hidden does not describe a {self.kind} audio encoder (ultravox only)")
        if self.kind == "qwen2a" and self.stack_factor not in (None, 1):
            raise ValueError("a qwen2a audio encoder stacks no frames (stack_factor)")
        return self


def _window_pattern(value: object) -> object:
    """One clear message for the layer pattern, whose YAML spellings are easy to get wrong."""
    if isinstance(value, str) and (value.strip().lower() in ("all", "alternating")
                                   or re.fullmatch(r"[1-9]\d*:1", value.strip())):
        return value.strip().lower()
    if isinstance(value, list):
        return [_whole(v) for v in value]
    raise ValueError(f"expected 'all', 'alternating', \"N:1\" (N local layers then 1 global) or a list of "
                     f"local layer indices, got {value!r}")


def _kv_heads(value: object) -> object:
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return _whole(value)


_PATTERN_SCHEMA = {"anyOf": [{"enum": ["all", "alternating"]}, {"type": "string", "pattern": r"^[1-9]\d*:1$"},
                             {"type": "array", "items": {"type": "integer", "minimum": 0}}]}
_KV_HEADS_SCHEMA = {"anyOf": [{"type": "integer", "minimum": 1},
                              {"type": "array", "items": {"type": "integer", "minimum": 1}}]}
WindowPattern = Annotated[str | list[Annotated[int, Field(ge=0)]], BeforeValidator(_window_pattern),
                          WithJsonSchema(_PATTERN_SCHEMA)]
_WIDTHS_SCHEMA = {"anyOf": [{"type": "integer", "minimum": 1},
                             {"type": "array", "items": {"type": "integer", "minimum": 1}}]}
# MLP width: one count, or one per layer (Gemma 3n's MatFormer config lists intermediate_size per layer)
MlpWidths = Annotated[Annotated[int, Field(gt=0, le=10**12)] | list[Annotated[int, Field(gt=0, le=10**12)]],
                      BeforeValidator(_kv_heads), WithJsonSchema(_WIDTHS_SCHEMA)]
KvHeads = Annotated[Annotated[int, Field(gt=0, le=10**6)] | list[Annotated[int, Field(gt=0, le=10**6)]],
                    BeforeValidator(_kv_heads), WithJsonSchema(_KV_HEADS_SCHEMA)]


def _runtime(value: object) -> object:
    """A runtime as a gate file names it (``llama.cpp`` or ``{name: llama.cpp, parallel: 2}``), kept in the
    canonical JSON form of :func:`kvplan.profiles.runtime.runtime_value` (so the profile cache stores it as is)."""
    from kvplan.profiles.runtime import file_runtime, runtime_value

    return runtime_value(file_runtime(value))


_RUNTIME_NAME_SCHEMA = {"enum": ["ideal", *(n for spec in RUNTIME_SPECS for n in (spec.name, *spec.aliases))]}
_RUNTIME_SCHEMA = {"anyOf": [
    _RUNTIME_NAME_SCHEMA,
    {"type": "object", "additionalProperties": False, "properties": {
        "name": _RUNTIME_NAME_SCHEMA,
        "parallel": {"type": "integer", "minimum": 1, "maximum": 256},
        "kv_unified": {"type": "boolean"},
        "ubatch": {"type": "integer", "minimum": 1},
        "batch": {"type": "integer", "minimum": 1},
        "swa_full": {"type": "boolean"},
        "flash_attn": {"anyOf": [{"enum": ["auto", "on", "off"]}, {"type": "boolean"}]},
        "mmap": {"type": "boolean"},
        "repack": {"type": "boolean"},
        "build": {"anyOf": [{"enum": list(LLAMACPP_BUILDS)}, {"type": "integer"}]},
        "prompt_tokens": {"type": "integer", "minimum": 1},
        "judge": {"enum": ["resident", "non_reclaimable"]},
        "cache": {"enum": ["dynamic", "static"]},
        "max_cache_len": js.TOKENS_SCHEMA,
        "max_kv_size": js.TOKENS_SCHEMA,
        "prefill_step_size": {"type": "integer", "minimum": 1},
        "quantized_kv_start": {"type": "integer", "minimum": 0},
        "num_parallel": {"type": "integer", "minimum": 1, "maximum": 256},
        "kv_cache_type": {"enum": list(OLLAMA_KV_CACHE_TYPES)},
        "flash_attention": {"type": "boolean"},
        "num_batch": {"type": "integer", "minimum": 0},
        "use_mmap": {"type": "boolean"},
        "max_length": js.TOKENS_SCHEMA,
        "past_present_share_buffer": {"type": "boolean"},
        "max_num_tokens": js.TOKENS_SCHEMA,
        "kv_cache_tokens": js.TOKENS_SCHEMA,
        "litert_backend": {"enum": ["cpu", "gpu"]},

        "max_context_length": js.TOKENS_SCHEMA,
        "dtype_override": {"enum": ["fp32", "fp16", "bf16"]},
        "quantize_kv_cache": {"type": "boolean"}}}]}
RuntimeField = Annotated[str | dict[str, str | int | bool], BeforeValidator(_runtime), WithJsonSchema(_RUNTIME_SCHEMA)]


class Model(_Profile, ModelMethods):
    """A model's shape and deployment precision."""

    family: Slug | None = None
    architecture: str | None = None
    params: Count
    params_active: Count | None = None
    layers: LayerCount
    attention_heads: PositiveInt
    kv_heads: KvHeads
    head_dim: PositiveInt
    v_head_dim: PositiveInt | None = None
    global_head_dim: PositiveInt | None = None
    hidden_size: PositiveInt | None = None
    intermediate_size: MlpWidths | None = None
    vocab_size: PositiveInt | None = None
    tie_embeddings: StrictBool = False
    max_context: Tokens | None = None
    sliding_window: Tokens | None = None
    sliding_window_pattern: WindowPattern = "all"
    attention_chunk_size: Tokens | None = None
    mla: Mla | None = None
    state: StateSpec | None = None
    shared_kv_layers: Annotated[int, BeforeValidator(_whole), Field(ge=0, le=MAX_LAYERS)] = 0
    hidden_size_per_layer_input: PositiveInt | None = None
    vocab_size_per_layer_input: PositiveInt | None = None
    weight_bits: WeightBits = 16.0
    weight_type: str | None = None
    weights: PositiveSizeBytes | None = None
    experts: PositiveInt | None = None
    experts_per_token: PositiveInt | None = None
    expert_intermediate_size: PositiveInt | None = None
    shared_experts: Annotated[int, BeforeValidator(_whole), Field(ge=0, le=10**6)] = 0
    dense_layers: Annotated[int, BeforeValidator(_whole), Field(ge=0, le=MAX_LAYERS)] = 0
    mtp_layers: Annotated[int, BeforeValidator(_whole), Field(ge=0, le=MAX_LAYERS)] = 0
    mtp_weights: PositiveSizeBytes | None = None
    rope_scaling: str | None = None
    gguf_vocab_size: PositiveInt | None = None
    kv_bits: Bits | None = None
    k_bits: Bits | None = None
    v_bits: Bits | None = None
    kv_group_size: PositiveInt | None = None
    kv_type: str | None = None
    k_type: str | None = None
    v_type: str | None = None
    kv_policy: PolicySpec | None = None
    runtime: RuntimeField | None = None
    encoder: EncoderSpec | None = None
    audio_encoder: AudioEncoderSpec | None = None

    @field_validator("runtime")
    @classmethod
    def _runtime_without_policy(cls, value, info: ValidationInfo):
        policy = info.data.get("kv_policy")
        if value not in (None, "ideal") and policy is not None and not policy.is_plain:
            raise ValueError("a runtime's allocation does not model a compression policy (kv_policy); "
                             "give one of them")
        return value

    @field_validator("weight_type")
    @classmethod
    def _known_weight_type(cls, value):
        from kvplan.engine.weight_formats import weight_format_key

        return None if value is None else weight_format_key(value)

    @field_validator("params_active")
    @classmethod
    def _active_within_params(cls, value, info: ValidationInfo):
        params = info.data.get("params")
        if value is not None and params is not None and value > params:
            raise ValueError(f"must be at most params ({value:,} > {params:,}): the parameters one token uses "
                             "are a subset of all of them")
        return value

    @model_validator(mode="after")
    def _params_hold_the_shape(self):
        """A parameter count below what the model's shape holds is a missing suffix (``params: 7`` for 7B), which
        would otherwise price the weights at a few bytes and call any model a fit."""
        from kvplan.profiles.plausible import model_params_problem

        errors = [(name, problem) for name in ("params", "params_active")
                  if (problem := model_params_problem(self, getattr(self, name))) is not None]
        if errors:
            from pydantic_core import InitErrorDetails, PydanticCustomError

            raise ValidationError.from_exception_data(type(self).__name__, [
                InitErrorDetails(type=PydanticCustomError("value_error", "{problem}", {"problem": problem}),
                                 loc=(name,), input=getattr(self, name)) for name, problem in errors])
        return self

    @field_validator("kv_heads")
    @classmethod
    def _kv_heads_divide(cls, value, info: ValidationInfo):
        heads, layers = info.data.get("attention_heads"), info.data.get("layers")
        values = value if isinstance(value, list) else [value]
        if isinstance(value, list) and layers is not None and len(value) != layers:
            raise ValueError(f"a per-layer list needs {layers} entries (one per layer), got {len(value)}")
        for n in values:
            if heads is not None and heads % n:
                raise ValueError(f"{n} does not divide attention_heads ({heads})")
        return value

    @field_validator("intermediate_size")
    @classmethod
    def _widths_per_layer(cls, value, info: ValidationInfo):
        layers = info.data.get("layers")
        if isinstance(value, list) and layers is not None and len(value) != layers:
            raise ValueError(f"a per-layer list needs {layers} entries (one per layer), got {len(value)}")
        return value

    @field_validator("shared_kv_layers")
    @classmethod
    def _shared_kv_leaves_a_cache(cls, value, info: ValidationInfo):
        layers = info.data.get("layers")
        if value and layers is not None and value >= layers:
            raise ValueError(f"{value} shared-KV layers leave no layer of the {layers} with a cache of its own")
        if value and info.data.get("state") is not None:
            raise ValueError("shared-KV layers and state layers in one model are not supported")
        return value

    @model_validator(mode="after")
    def _per_layer_embeddings_whole(self):
        given = [f for f in ("hidden_size_per_layer_input", "vocab_size_per_layer_input") if getattr(self, f)]
        if len(given) == 1:
            other = ({"hidden_size_per_layer_input", "vocab_size_per_layer_input"} - set(given)).pop()
            raise ValueError(f"per-layer embeddings need both hidden_size_per_layer_input and "
                             f"vocab_size_per_layer_input ({other} is missing)")
        if self.global_head_dim is not None and self.mla is not None:
            raise ValueError("global_head_dim and mla in one model are not supported")
        if self.shared_kv_layers:
            from kvplan.profiles.methods import shared_kv_sources

            try:
                shared_kv_sources(self)
            except ValueError as exc:
                raise ValueError(f"shared_kv_layers: {exc}") from None
        return self

    @field_validator("state")
    @classmethod
    def _state_layers_in_range(cls, value, info: ValidationInfo):
        layers = info.data.get("layers")
        if value is not None and layers is not None:
            for name in ("layers", "feedforward_layers"):
                bad = [i for i in getattr(value, name) if i >= layers]
                if bad:
                    raise ValueError(f"{name}: layer index {bad[0]} out of range (the model has {layers} layers, "
                                     "0-based)")
            if not value.parallel_attention and len(set(value.layers) | set(value.feedforward_layers)) >= layers:
                raise ValueError("every layer is a state or feed-forward layer: give at least one attention layer")
        return value

    @field_validator("attention_chunk_size")
    @classmethod
    def _chunk_or_window(cls, value, info: ValidationInfo):
        if value is not None and info.data.get("sliding_window") is not None:
            raise ValueError("give sliding_window (a window) or attention_chunk_size (chunked attention), not both: "
                             "sliding_window_pattern names the layers of either")
        return value

    @field_validator("sliding_window_pattern")
    @classmethod
    def _pattern_in_range(cls, value, info: ValidationInfo):
        layers = info.data.get("layers")
        if isinstance(value, list) and layers is not None:
            bad = [i for i in value if i >= layers]
            if bad:
                raise ValueError(f"layer index {bad[0]} out of range (the model has {layers} layers, 0-based)")
        return value

    @field_validator("kv_type", "k_type", "v_type")
    @classmethod
    def _known_type(cls, value):
        if value is not None:
            format_from_name(value)
        return value

    @field_validator("kv_type", "k_type", "v_type")
    @classmethod
    def _not_both(cls, value, info: ValidationInfo):
        bits_field = info.field_name.replace("_type", "_bits")
        if value is not None and info.data.get(bits_field) is not None:
            raise ValueError(f"give {bits_field} or {info.field_name}, not both")
        return value
