"""One configuration: a device, a model, a context and every knob, each value checked once, here."""

from __future__ import annotations

import math

import operator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kvplan import engine
from kvplan.engine.formats import ElementFormat, format_from_name
from kvplan.errors import FieldError, UsageError

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles.spec import Device, Model


APP_LIMITS = ("standard", "increased")


def app_limit_field(device, choice: str | None = None) -> str | None:
    """Which device field caps an app's memory under ``choice`` (the ``app_limit`` knob): ``increased`` (the
    default, None) takes ``app_memory_limit_increased`` where the device has it — iOS apps that load models ship
    the increased-memory-limit entitlement — else ``app_memory_limit``; ``standard`` takes ``app_memory_limit``.
    None: the device has no such limit (the budget is RAM − OS reserve)."""
    increased = getattr(device, "app_memory_limit_increased", None)
    if choice != "standard" and increased is not None:
        return "app_memory_limit_increased"
    return "app_memory_limit" if getattr(device, "app_memory_limit", None) is not None else None


@dataclass(frozen=True)
class Scenario:
    """Everything that defines one configuration; ``None`` means "the profile's default"."""

    device: Device
    model: Model
    ctx: int
    sequences: int = 1
    pinned_prefix_tokens: int = 0
    weight_bits: float | None = None
    weight_type: str | None = None  # a named format (q4_k_m, mlx-4bit …), priced tensor by tensor
    weight_group_size: int | None = None  # group size of a group-quantized weight_type (mlx, gptq …)
    k_format: ElementFormat | None = None
    v_format: ElementFormat | None = None
    sliding_window: int | None = None
    os_reserve_bytes: int | None = None
    gpu_working_set_bytes: int | None = None  # Metal's recommended working set, over the device's own
    app_limit: str | None = None  # which per-app memory limit caps the budget: "standard" / "increased"
    margin_fraction: float = engine.DEFAULT_MARGIN_FRACTION
    target_tokens_per_s: float | None = None
    images: int = 0  # images in the context: the model's vision encoder is resident (kvplan.plan.encoder_parts)
    image_size: str | None = None  # "WIDTHxHEIGHT" of each image, None: the encoder's native size
    audio: int = 0  # audio clips in the context: the model's audio encoder is resident (kvplan.plan.audio_parts)
    audio_seconds: float | None = None  # each clip's length [s], None: 30 s
    mmproj: str | None = None  # a projector GGUF whose header replaces the model profile's encoder(s)
    # offload (kvplan.plan.placement): llama.cpp's -ngl, --n-cpu-moe, -ot; experts streamed from flash
    n_gpu_layers: int | None = None
    n_cpu_moe: int | None = None
    override_tensor: str | None = None
    stream_experts: int | None = None
    expert_cache_hit: float | None = None
    kv_policy: object | None = None  # a compression policy (kvplan.profiles.policy), None: plain cache
    runtime: object | None = None  # runtime-exact rules (kvplan.profiles.runtime), None: the ideal formula
    runtime_from_profile: bool = False  # the runtime is the model profile's default (none given)
    # speculative decoding (kvplan.plan.draft): a draft model profile (a name is resolved from the built-in and
    # $KVPLAN_PROFILES profiles), its tokens per step, the acceptance rate of its tokens, its cache type
    draft: object | None = None
    draft_max_tokens: int = 3  # llama.cpp build 11434: common_params_speculative_draft::n_max = 3
    acceptance_rate: float | None = None
    draft_kv_type: str | None = None

    def __post_init__(self):
        # The library is the CLI's engine: the same inputs are refused here as on the command line.
        for name, needed in (("device", ("ram", "memory_bandwidth")), ("model", ("layers", "head_dim"))):
            if not all(hasattr(getattr(self, name), attr) for attr in needed):
                raise FieldError(name, f"expected a {name} profile (kvplan.Catalog().{name}(name).profile), "
                                 f"got {type(getattr(self, name)).__name__}")
        for name in ("k_format", "v_format"):  # a runtime type name or bit width is accepted, as on the CLI
            value = getattr(self, name)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                try:
                    object.__setattr__(self, name, format_from_name(str(value)))
                except UsageError as exc:  # the engine knows the names, not the field that gave this one
                    raise FieldError(name, str(exc)) from None
            elif value is not None and not isinstance(value, ElementFormat):
                raise FieldError(name, f"expected a cache type such as 'q8_0' or an ElementFormat, got {value!r}")
        if self.runtime is not None:  # a runtime name or mapping, as a gate file writes it, or a spec
            from kvplan.profiles.runtime import parse_runtime, resolve_sequences

            spec = parse_runtime(self.runtime) if isinstance(self.runtime, (str, dict)) else self.runtime
            spec, sequences = resolve_sequences(spec, self.sequences, self.pinned_prefix_tokens,
                                                getattr(self.model, "architecture", None))
            object.__setattr__(self, "runtime", spec)
            object.__setattr__(self, "sequences", sequences)
        if isinstance(self.kv_policy, str):
            raise FieldError("kv_policy", "pass a policy (kvplan.profiles.policy.load_policy_file(path)), not a "
                             "path: the library reads no files on its own")
        _check_count("ctx", self.ctx, minimum=0)
        _check_count("sequences", self.sequences, minimum=1)
        _check_count("pinned_prefix_tokens", self.pinned_prefix_tokens, minimum=0)
        if self.sliding_window is not None:
            _check_count("sliding_window", self.sliding_window, minimum=1)
        if self.weight_type is not None:
            from kvplan.engine.weight_formats import weight_format_key

            if self.weight_bits is not None:
                raise FieldError(("weight_bits", "weight_type"), "give one of them: bits for a uniform width, a "
                                 "type for a real quantization format", lead=" and ")
            try:
                object.__setattr__(self, "weight_type", weight_format_key(self.weight_type))
            except ValueError as exc:
                raise FieldError("weight_type", str(exc)) from None
        if self.weight_group_size is not None:
            _check_count("weight_group_size", self.weight_group_size, minimum=1)
            if self.weight_type is None and getattr(self.model, "weight_type", None) is None:
                raise FieldError(("weight_group_size", "weight_type"), "a group size applies to a named weight "
                                 "format (mlx-4bit, gptq-4bit …); give the format too", lead=" without ")
        if self.weight_bits is not None and not (isinstance(self.weight_bits, (int, float))
                                                 and 0 < self.weight_bits <= 32):
            raise FieldError("weight_bits", f"must be above 0 and at most 32, got {self.weight_bits!r}")
        if not (isinstance(self.margin_fraction, (int, float)) and 0 <= self.margin_fraction < 1):
            raise FieldError("margin_fraction", f"must be at least 0 and below 1, got {self.margin_fraction!r}")
        if self.os_reserve_bytes is not None:
            _check_count("os_reserve_bytes", self.os_reserve_bytes, minimum=0)
            if self.os_reserve_bytes >= self.device.ram:
                raise FieldError("os_reserve_bytes", f"must be less than the device's RAM ({self.device.ram:,} bytes)")
        if self.gpu_working_set_bytes is not None:
            _check_count("gpu_working_set_bytes", self.gpu_working_set_bytes, minimum=1)
        _check_draft(self)
        for name in ("n_gpu_layers", "n_cpu_moe", "stream_experts"):
            if getattr(self, name) is not None:
                _check_count(name, getattr(self, name), minimum=0)
        if self.override_tensor is not None:
            from kvplan.engine.offload import parse_override_rules

            try:
                parse_override_rules(self.override_tensor)
            except ValueError as exc:
                raise FieldError("override_tensor", str(exc)) from None
        if self.expert_cache_hit is not None:
            if not (isinstance(self.expert_cache_hit, (int, float)) and 0 <= self.expert_cache_hit <= 1):
                raise FieldError("expert_cache_hit", f"must be from 0 to 1, got {self.expert_cache_hit!r}")
            if self.stream_experts is None and "flash" not in (self.override_tensor or "").lower():
                raise FieldError(("expert_cache_hit", "stream_experts"), "a cache hit rate applies to experts "
                                 "streamed from flash; give {stream_experts} too", lead=" without ")
        if self.app_limit is not None and self.app_limit not in APP_LIMITS:
            raise FieldError("app_limit", f"expected one of {', '.join(APP_LIMITS)}, got {self.app_limit!r}")
        if self.target_tokens_per_s is not None and not (isinstance(self.target_tokens_per_s, (int, float))
                                                         and 0 < self.target_tokens_per_s < math.inf):
            raise FieldError("target_tokens_per_s", f"must be a positive, finite rate, got {self.target_tokens_per_s!r}")
        _check_count("images", self.images, minimum=0)
        if self.image_size is not None:
            object.__setattr__(self, "image_size", _image_size(self.image_size))
        if self.mmproj is not None:
            object.__setattr__(self, "model", _with_mmproj(self.model, self.mmproj, self.images, self.audio))
        else:  # a GGUF model from the Hub whose repository has a projector file: its header, when it is needed
            hub_mmproj = (getattr(self.model, "sources", None) or {}).get("mmproj")
            wanted = ((self.images and getattr(self.model, "encoder", None) is None)
                      or (self.audio and getattr(self.model, "audio_encoder", None) is None))
            if wanted and isinstance(hub_mmproj, str) and hub_mmproj.startswith("hf:"):
                object.__setattr__(self, "model", _with_mmproj(self.model, hub_mmproj.split(" ", 1)[0], self.images,
                                                                  self.audio))
        if self.images and getattr(self.model, "encoder", None) is None:
            raise FieldError("images", f"model {getattr(self.model, 'name', '?')} has no vision encoder (no "
                             "'encoder:' in its profile): images cannot be priced")
        _check_count("audio", self.audio, minimum=0)
        if self.audio_seconds is not None and not (isinstance(self.audio_seconds, (int, float))
                                                   and not isinstance(self.audio_seconds, bool)
                                                   and 0 < self.audio_seconds <= 86_400):
            raise FieldError("audio_seconds", f"must be above 0 and at most 86400 (a day), got {self.audio_seconds!r}")
        if self.audio and getattr(self.model, "audio_encoder", None) is None:
            raise FieldError("audio", f"model {getattr(self.model, 'name', '?')} has no audio encoder (no "
                             "'audio_encoder:' in its profile; give an audio projector GGUF with {mmproj}): "
                             "audio cannot be priced", mentions=("mmproj",))

    @property
    def image_pixels(self) -> tuple[int, int] | None:
        """``(width, height)`` of each image, None: the encoder's native size [pixels]."""
        if self.image_size is None:
            return None
        w, h = self.image_size.split("x")
        return int(w), int(h)

    @property
    def os_reserve_in_force_bytes(self) -> int:
        """The OS reserve this configuration uses: its override, else the device's [bytes]."""
        return self.device.os_reserve if self.os_reserve_bytes is None else self.os_reserve_bytes

    @property
    def gpu_working_set_in_force_bytes(self) -> int | None:
        """The GPU working set this configuration uses: its override, else the device's (None: unknown) [bytes]."""
        if self.gpu_working_set_bytes is not None:
            return self.gpu_working_set_bytes
        return getattr(self.device, "gpu_working_set", None)

    @property
    def offloads(self) -> bool:
        """Whether the configuration places parts in memories of their own (an offload knob, or a device with a
        discrete GPU's memory)."""
        return (any(getattr(self, name) is not None for name in ("n_gpu_layers", "n_cpu_moe", "override_tensor",
                                                                 "stream_experts"))
                or getattr(self.device, "gpu_memory", None) is not None)

    @property
    def app_limit_field_in_force(self) -> str | None:
        """The device field whose per-app limit caps the budget (``app_memory_limit`` or
        ``app_memory_limit_increased``), None where the device has none (:func:`app_limit_field`)."""
        return app_limit_field(self.device, self.app_limit)

    @property
    def app_limit_in_force_bytes(self) -> int | None:
        """The per-app memory limit that caps the budget [bytes]; None: the device has no fixed per-app cap."""
        field = self.app_limit_field_in_force
        return None if field is None else getattr(self.device, field)

    @property
    def budget_bytes(self) -> int:
        """``ram − os_reserve`` with the reserve in force, capped by the per-app limit in force [bytes]."""
        return engine.budget_bytes(self.device.ram, self.os_reserve_in_force_bytes, self.app_limit_in_force_bytes)

    def with_changes(self, **changes) -> Scenario:
        if changes.get("weight_bits") is not None and "weight_type" not in changes:
            changes["weight_type"] = None  # a uniform width replaces a named format
            changes.setdefault("weight_group_size", None)
        field = getattr(self.runtime, "sequences_field", None)
        if "sequences" in changes and "runtime" not in changes and field and getattr(self.runtime, field) is not None:
            # under llama.cpp the sequences are -np (Ollama's OLLAMA_NUM_PARALLEL): a new count re-derives it
            # rather than contradicting it
            changes["runtime"] = replace(self.runtime, **{field: None})
        return replace(self, **changes)


# llama.cpp common/speculative.cpp: SPEC_VOCAB_MAX_SIZE_DIFFERENCE (line 30), the most the draft's and the
# target's vocabulary sizes may differ in common_speculative_are_compatible (lines 106-170)
DRAFT_VOCAB_MAX_DIFFERENCE = 128


def _check_draft(s: Scenario) -> None:
    """The draft knobs, checked once: a draft model profile (a name resolved here) whose vocabulary llama.cpp would
    accept beside the model's, a whole number of draft tokens, an acceptance rate in (0, 1), a cache type."""
    from kvplan.plan.mtp_head import MTP_HEAD, is_mtp

    if is_mtp(s.draft):  # the model's own MTP head (kvplan.plan.mtp): no other model, no vocabulary to compare
        object.__setattr__(s, "draft", MTP_HEAD)
    elif isinstance(s.draft, str):
        from kvplan.profiles.catalog import Catalog

        object.__setattr__(s, "draft", Catalog().model(s.draft).profile)
    if s.draft is not None and not is_mtp(s.draft) and not all(hasattr(s.draft, attr) for attr in ("layers", "head_dim")):
        raise FieldError("draft", f"expected a model profile or its name, got {type(s.draft).__name__}")
    _check_count("draft_max_tokens", s.draft_max_tokens, minimum=1)
    if s.acceptance_rate is not None and (isinstance(s.acceptance_rate, bool)
                                          or not isinstance(s.acceptance_rate, (int, float))
                                          or not 0 < s.acceptance_rate < 1):
        raise FieldError("acceptance_rate", f"must be above 0 and below 1, got {s.acceptance_rate!r}")
    if s.draft_kv_type is not None:
        try:
            format_from_name(str(s.draft_kv_type))
        except UsageError as exc:
            raise FieldError("draft_kv_type", str(exc)) from None
    if s.draft is None:
        for name in ("acceptance_rate", "draft_kv_type"):
            if getattr(s, name) is not None:
                raise FieldError((name, "draft"), "prices a draft model; give the draft too", lead=" without ")
        return
    if is_mtp(s.draft):
        if not (getattr(s.model, "mtp_layers", 0) or 0):
            raise FieldError("draft", f"{s.model.name} has no multi-token-prediction layers (its profile's "
                             "mtp_layers is 0): there is no MTP head to draft with")
        return
    target, draft = getattr(s.model, "vocab_size", None), getattr(s.draft, "vocab_size", None)
    if target and draft and abs(target - draft) > DRAFT_VOCAB_MAX_DIFFERENCE:
        raise FieldError("draft", f"{s.draft.name} has a vocabulary of {draft:,} tokens, {s.model.name} one of "
                         f"{target:,}: llama.cpp refuses a draft whose vocabulary size differs by more than "
                         f"{DRAFT_VOCAB_MAX_DIFFERENCE} (common_speculative_are_compatible)")
def _with_mmproj(model, path, images: int = 0, audio: int = 0):
    """``model`` with the encoder(s) a projector GGUF's header describes: its vision encoder (``encoder``) and/or its
    audio encoder (``audio_encoder``, ``clip.has_audio_encoder``), plain records; errors name ``mmproj``."""
    from kvplan.errors import KvplanError
    from kvplan.importers.audio import audio_encoder_from_header
    from kvplan.importers.gguf_header import read_local_header
    from kvplan.importers.vision import encoder_from_header
    from kvplan.profiles.records import AudioEncoderRecord, EncoderRecord

    if not isinstance(path, str) or not path:
        raise FieldError("mmproj", f"expected the path of a projector GGUF, got {path!r}")
    update = {}
    try:
        from kvplan.profiles.spec import AudioEncoderSpec, EncoderSpec

        if path.startswith("hf:"):
            from kvplan.hub.mmproj import remote_mmproj_header

            header = remote_mmproj_header(path)
        else:
            header = read_local_header(path)
        meta = dict(header.metadata)
        has_audio = bool(meta.get("clip.has_audio_encoder"))
        has_vision = bool(meta.get("clip.has_vision_encoder")) or not has_audio
        # a file with both halves: a half kvplan does not price is an error only when it is asked for
        for key, present, asked, read, spec in (("encoder", has_vision, images or not has_audio, encoder_from_header,
                                                 EncoderSpec),
                                                ("audio_encoder", has_audio, audio or not has_vision,
                                                 audio_encoder_from_header, AudioEncoderSpec)):
            if not present:
                continue
            try:
                fields = read(header, where=path)
            except KvplanError:
                if asked:
                    raise
                continue
            # the checks of a profile's encoder mapping, and every field (the optional ones None)
            update[key] = spec(**{**fields, "weights": f"{fields['weights']} B"}).model_dump()
    except KvplanError as exc:
        raise FieldError("mmproj", str(exc)) from None
    except ValueError as exc:  # pydantic's ValidationError
        raise FieldError("mmproj", f"{path}: {exc}") from None
    hidden = getattr(model, "hidden_size", None)
    for fields in update.values():
        if hidden is not None and hidden != fields["projection_dim"]:
            raise FieldError("mmproj", f"{path} projects to {fields['projection_dim']} values, model "
                             f"{getattr(model, 'name', '?')} embeds {hidden} (hidden_size): not this model's projector")
    records = {"encoder": EncoderRecord, "audio_encoder": AudioEncoderRecord}
    return model.model_copy(update={k: records[k](v) for k, v in update.items()})


def _image_size(value) -> str:
    """``"WIDTHxHEIGHT"`` (``896x896``, ``1280 x 720``), each side 1-100,000 pixels, as ``"1280x720"``."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", value) if isinstance(value, str) else None
    if m is None or not (0 < int(m[1]) <= 100_000 and 0 < int(m[2]) <= 100_000):
        raise FieldError("image_size", f"expected WIDTHxHEIGHT in pixels, each side 1-100000 (896x896), got {value!r}")
    return f"{int(m[1])}x{int(m[2])}"


def _check_count(name: str, value, *, minimum: int) -> None:
    try:
        whole = operator.index(value)  # ints and numpy integers; not floats, strings or arrays
    except TypeError:
        whole = None
    if isinstance(value, bool) or whole is None or whole < minimum:
        raise FieldError(name, f"must be a whole number ≥ {minimum}, got {value!r}")
