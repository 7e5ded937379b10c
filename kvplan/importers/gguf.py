"""Model profile from a GGUF file's header: metadata and tensor shapes, never the tensor data.

Keys read (``{arch}`` is ``general.architecture``): ``{arch}.block_count``,
``{arch}.attention.head_count``, ``{arch}.attention.head_count_kv`` (a number, or an array
with one entry per layer), ``{arch}.attention.key_length`` / ``value_length`` (else
``embedding_length / head_count``), ``…key_length_mla`` / ``value_length_mla`` and
``{arch}.attention.kv_lora_rank`` with ``{arch}.rope.dimension_count`` for multi-head
latent attention, ``{arch}.attention.sliding_window`` and
``{arch}.attention.sliding_window_pattern`` (a period ``n``: layer ``i`` local when
``i % n < n − 1``; or one boolean per layer), ``{arch}.context_length``,
``{arch}.embedding_length``, ``{arch}.feed_forward_length``, ``{arch}.vocab_size`` (else the
tokenizer's token count). A window without a pattern key follows llama.cpp's built-in
rule for the architecture (Gemma 2 alternating, Gemma 3 period 6, Gemma 3n period 5, Cohere 2 period 4).
Gemma 4 (``gemma4``) reads the same keys as Gemma 3n below, and ``{arch}.attention.key_length_swa`` as
``head_dim`` with ``key_length`` as ``global_head_dim`` (the full-attention layers) when they differ.
Gemma 3n (``gemma3n``) adds ``{arch}.attention.shared_kv_layers`` (the last layers reuse an earlier layer's
cache), ``{arch}.embedding_length_per_layer_input`` and the rows of ``per_layer_token_embd`` (the per-layer
embedding table), and keeps a per-layer ``feed_forward_length`` when its widths differ.

params = Σ tensor elements; the weight size is Σ tensor bytes of the file, so the
profile's ``weights`` is the file's own (quantized) size, and ``general.file_type`` (llama.cpp's
``LLAMA_FTYPE`` id, :data:`LLAMA_FTYPES`) becomes ``weight_type``, the name ``--weight-type`` takes.

A mixture of experts (``{arch}.expert_count`` E > 0 and ``{arch}.expert_used_count`` k) gives its layout
(``experts``, ``experts_per_token``, ``expert_intermediate_size``, ``shared_experts``, ``dense_layers``:
:mod:`kvplan.importers.gguf_moe`) and ``params_active``, counted like ``params``: params − Σ_routed-expert tensors (E − k) ·
(their elements / E). The routed-expert tensors are those named ``*_exps.*``
(``blk.N.ffn_{gate,up,down}_exps.weight`` and their biases), whose outermost dimension
(GGUF's last, numpy's first) is the E experts; shared experts (``*_shexp``) and the router
(``ffn_gate_inp``) run for every token and stay counted.

The file is read with kvplan's header parser (:mod:`kvplan.importers.gguf_header`), the one a local
``--model x.gguf`` and a Hub GGUF use, so all three accept the same files and give the same figures. Every count
follows :func:`kvplan.importers.common.whole_count` (a float only when whole; never a string or boolean), and a
block count past the schema's bound is refused before any per-layer work.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path

from kvplan.errors import FieldText, ProfileError
from kvplan.importers.common import (DEFAULT_WEIGHT_BITS, MOE_PARAMS_GIVEN, PARAMS_GIVEN, ImportedProfile,
                                     check_given_params, finish, slug, swa_pattern_layers, weight_format_name,
                                     whole_count, window_pattern)
from kvplan.importers.gguf_header import header_metadata, read_local_header
from kvplan.importers.gguf_state import STATE_ARCHS
from kvplan.profiles.spec import layer_count_problem

# llama.cpp set_swa_pattern(n) (gpt-oss: LLM_ARCH_OPENAI_MOE, ggml-org/llama.cpp 00342301d load_hparams)
_BUILTIN_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3n": 5, "cohere2": 4, "gpt-oss": 2}
LLAMA4_CHUNK_TOKENS = 8192  # src/models/llama4.cpp :: load_arch_hparams (hparams.n_swa = 8192)


def _block_number(name: str) -> int:
    """The block of a GGUF tensor name (``blk.24.attn_q.weight`` → 24; -1 outside blocks)."""
    if not name.startswith("blk."):
        return -1
    part = name.split(".", 2)[1]
    return int(part) if part.isdigit() else -1


def _read_file(path: str | Path) -> tuple[dict, list[tuple], list[str]]:
    """``(metadata, tensors, notes)`` of a local GGUF file, read by kvplan's header parser (the one ``--model
    x.gguf`` and Hub GGUFs use, so all three accept the same files); a file that is not a readable GGUF is
    one ProfileError naming it."""
    p = Path(path)
    if not p.is_file():
        raise ProfileError([f"{path}: " + ("not a regular file" if p.exists() else "no such file")])
    split = _SPLIT_RE.match(p.name)
    if split and int(split.group("no")) != 1:  # the metadata is in the first shard, whichever one was named
        p = p.with_name(f"{split.group('stem')}-00001-of-{split.group('count')}.gguf")
        if not p.is_file():
            raise ProfileError([f"{path}: split GGUF, shard {p.name} not beside it"])
        path = p
    size = check_gguf_start(p, path)
    with worded_damage(path, size):
        header = read_local_header(p, what="")
        meta, tensors = header_metadata(header)  # tensor sizes: an unknown storage type surfaces here
    notes = []
    if split and meta.get("split.tensors.count") != len(tensors):
        tensors, note = _split_tensors(p, split)
        notes.append(note)
    end = header.data_offset + max((t.offset + t.nbytes for t in header.tensors), default=0)
    if size < end:
        notes.append(f"{Path(path).name} is {size:,} bytes but its tensor table reaches byte {end:,} (an "
                     "incomplete download?): the profile needs only the header, which is whole")
    return meta, tensors, notes


def check_gguf_start(p: Path, path: str | Path) -> int:
    """The size of the GGUF file ``p`` (named ``path``) [bytes]; a ProfileError when it cannot be read, is empty or
    is no GGUF file. ``import gguf`` and ``--model x.gguf`` both start here, so they refuse a file alike."""
    try:
        with open(p, "rb") as handle:
            head = handle.read(4)
        size = p.stat().st_size
    except OSError as exc:
        raise ProfileError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    if not size:
        raise ProfileError([f"{path}: not a readable GGUF file: the file is empty"])
    if head != b"GGUF":
        raise ProfileError([f"{path}: not a readable GGUF file: it starts with {head!r}, a GGUF file with b'GGUF'"])
    return size


@contextmanager
def worded_damage(path: str | Path, size: int):
    """The header parser's problems inside, each as ``path: not a readable GGUF file: …`` (:func:`_damage`)."""
    try:
        yield
    except ProfileError as exc:
        raise ProfileError([f"{path}: not a readable GGUF file: {_damage(problem, size)}"
                            for problem in exc.problems]) from None


_SPLIT_RE = re.compile(r"^(?P<stem>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


def _split_tensors(p: Path, split: re.Match) -> tuple[list[tuple], str]:
    """Every shard's tensors of a split GGUF (``…-00001-of-00003.gguf``) whose named shard lists only its own, as
    ``--model`` reads them: the metadata is the first shard's; the other shards' headers add their tensors."""
    count = int(split.group("count"))
    shards = [p.with_name(f"{split.group('stem')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]
    missing = [s.name for s in shards if not s.is_file()]
    if missing:
        raise ProfileError([f"{p}: split GGUF, shard(s) {', '.join(missing)} not beside it"])
    found = []
    for shard in shards:
        with worded_damage(shard, shard.stat().st_size):
            found.extend(header_metadata(read_local_header(shard, what=""))[1])
    return found, f"split GGUF: the headers of all {count} shards were read"


def _damage(problem: str, size: int) -> str:
    """The header parser's problem, worded for a file read whole."""
    match = re.match(r"unknown ggml tensor type (\d+)", problem)
    if match:
        return (f"a tensor has storage type id {match.group(1)}, which kvplan does not know (a damaged file, or a "
                "type newer than this kvplan)")
    if problem.startswith("the file ends inside the GGUF header"):
        return f"damaged or truncated ({size:,} bytes; the file ends inside the GGUF header)"
    return problem


# llama.cpp's `enum llama_ftype` (include/llama.h; the ids are stable, retired ones are never reused) for the
# file types kvplan prices, by the name --weight-type takes (kvplan.engine.quantize.FILE_TYPES).
LLAMA_FTYPES: dict[int, str] = {
    0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 9: "q5_1", 10: "q2_k", 11: "q3_k_s",
    12: "q3_k_m", 13: "q3_k_l", 14: "q4_k_s", 15: "q4_k_m", 16: "q5_k_s", 17: "q5_k_m", 18: "q6_k",
    25: "iq4_nl", 30: "iq4_xs", 32: "bf16", 38: "mxfp4_moe",  # 38: LLAMA_FTYPE_MOSTLY_MXFP4_MOE (gguf-py 0.19.0)
}
_FTYPE_GUESSED = 1024  # LLAMA_FTYPE_GUESSED: a flag llama.cpp sets on a type it inferred, never a type itself


def _file_type(meta: dict, notes: list[str]) -> tuple[str | None, str]:
    """The --weight-type name of the file's ``general.file_type`` and where it came from, or (None, why not)."""
    raw = meta.get("general.file_type")
    if isinstance(raw, bool) or not isinstance(raw, int):
        notes.append("no general.file_type in the file: weight_type left out (the file's exact bytes are kept "
                     "as weights)")
        return None, ""
    name = LLAMA_FTYPES.get(raw & ~_FTYPE_GUESSED)
    if name is None:
        notes.append(f"general.file_type {raw} is not a format kvplan prices tensor by tensor: weight_type left "
                     "out (the file's exact bytes are kept as weights)")
        return None, ""
    return name, f"general.file_type {raw} (llama.cpp LLAMA_FTYPE)"


def read_metadata(path: str | Path) -> tuple[dict, list[tuple]]:
    """The header's key/value metadata and ``(name, elements, bytes, shape)`` of every tensor
    (``shape`` outermost dimension first, numpy's order: GGUF lists it innermost first)."""
    meta, tensors, _notes = _read_file(path)
    return meta, tensors


def _int(meta: dict, key: str, where: str, required: bool = True, minimum: int = 1, per_layer: bool = False):
    """A count from the metadata by kvplan's one rule for counts (:func:`kvplan.importers.common.whole_count`):
    a whole number of at least ``minimum``, a float only when whole; with ``per_layer`` (the keys llama.cpp reads
    as one value or one per layer) also an array, entry by entry (an entry may be 0: a layer without that part).
    None when absent and not ``required``."""
    value = meta.get(key)
    if value is None:
        if required:
            raise ProfileError([f"{where}: {key}: missing from the GGUF metadata (needed for a model profile)"])
        return None
    try:
        if isinstance(value, list):
            if not per_layer:
                raise ValueError(f"expected a whole number, got an array of {len(value)}")
            return [whole_count(v, 0) for v in value]
        return whole_count(value, minimum)
    except ValueError as exc:
        raise ProfileError([f"{where}: {key}: {exc}"]) from None


def profile_from_gguf_file(path: str | Path, *, name: str | None = None, params: int | None = None,
                           weight_bits: float | None = None, weight_type: str | None = None,
                           params_source: str = PARAMS_GIVEN) -> ImportedProfile:
    meta, tensors, notes = _read_file(path)
    imported = profile_from_gguf_metadata(meta, tensors, where=str(path), name=name, params=params,
                                          weight_bits=weight_bits, weight_type=weight_type,
                                          params_source=params_source)
    return ImportedProfile(imported.model, imported.yaml_text, (*notes, *imported.notes))


def _active_params(meta: dict, tensors: list[tuple], arch: str, params: int, notes: list[str], where: str):
    """(params_active, the arithmetic) of a mixture of experts (module docstring), or (None, None)."""
    k = f"{arch}."
    experts = _int(meta, k + "expert_count", where, required=False, minimum=0)
    if not isinstance(experts, int) or experts <= 0:
        return None, None
    used = _int(meta, k + "expert_used_count", where, required=False, minimum=0)
    if not isinstance(used, int) or not 0 < used <= experts:
        notes.append(f"{k}expert_count is {experts} but {k}expert_used_count is {used!r}: params_active not "
                     "derived; add it from the model card, or decode is priced as if every expert were read")
        return None, None
    routed = [t for t in tensors if "_exps." in t[0]]
    bad = [t[0] for t in routed if len(t) < 4 or not t[3] or t[3][0] != experts]
    if not routed or bad:
        why = (f"tensor {bad[0]} has no outermost dimension of {experts} experts" if bad
               else "no routed-expert tensors (*_exps.*) in the file")
        notes.append(f"a mixture of experts, but {why}: params_active not derived; add it from the model card")
        return None, None
    per_expert = sum(t[1] // experts for t in routed)  # one expert's elements in every layer
    idle = (experts - used) * per_expert
    text = (f"active per token ({k}expert_used_count {used} of {k}expert_count {experts}): params − "
            f"({experts} − {used}) × {per_expert:,} (one routed expert: the {len(routed)} *_exps tensors' "
            f"elements / {experts}) = {params:,} − {idle:,} = {params - idle:,}")
    return params - idle, text


def profile_from_gguf_metadata(meta: dict, tensors: list[tuple], *, where: str,
                               name: str | None = None, params: int | None = None,
                               weight_bits: float | None = None, weight_type: str | None = None,
                               params_source: str = PARAMS_GIVEN) -> ImportedProfile:
    """The model profile of a GGUF header (module docstring); ``params_source`` is written into
    ``sources.params`` when ``params`` is given (where the count came from, as the caller says it)."""
    from kvplan.profiles.field_rules import check_profile_name, check_weight_bits

    if name is not None:  # what the caller typed is checked before the header is read into a profile
        check_profile_name(name)
    if weight_bits is not None:
        check_weight_bits(weight_bits)
    weight_type_given = weight_type
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ProfileError([f"{where}: general.architecture: missing from the GGUF metadata"])
    k = f"{arch}."
    notes: list[str] = []
    layers = _int(meta, k + "block_count", where)
    if layer_count_problem(layers):  # before any per-layer work
        raise ProfileError([f"{where}: {k}block_count: {layer_count_problem(layers)}"])
    heads = _int(meta, k + "attention.head_count", where, per_layer=True)
    if isinstance(heads, list):
        if not heads or max(heads) <= 0:
            raise ProfileError([f"{where}: {k}attention.head_count: no layer has attention heads"])
        notes.append(f"{k}attention.head_count varies per layer; using the largest, {max(heads)}")
        heads = max(heads)
    kv_heads = _int(meta, k + "attention.head_count_kv", where, required=False, per_layer=True)
    kv_note = "attention.head_count_kv" if kv_heads else "no attention.head_count_kv: as many as head_count"
    kv_heads = kv_heads or heads
    state = state_note = None
    if arch in STATE_ARCHS:  # a hybrid: its state layers (gguf_state), then the attention layers' heads
        from kvplan.importers.gguf_state import gguf_state

        state, layers, state_note = gguf_state(
            meta, arch, layers, kv_heads, _int(meta, k + "feed_forward_length", where, required=False, per_layer=True),
            lambda key, required, minimum=1: _int(meta, key, where, required=required, minimum=minimum), where)
        if isinstance(kv_heads, list):
            attending = [n for n in kv_heads[:layers] if n]
            if not attending:
                raise ProfileError([f"{where}: {k}attention.head_count_kv: no layer attends"])
            # the state and feed-forward layers' 0 entries: any attending count (their layers keep no KV)
            kv_heads = [n or attending[0] for n in kv_heads[:layers]]
            kv_note += " (0 on the state layers)"
    if isinstance(kv_heads, list):
        if len(kv_heads) != layers:
            raise ProfileError([f"{where}: {k}attention.head_count_kv: {len(kv_heads)} entries for {layers} layers"])
        if 0 in kv_heads:
            raise ProfileError([f"{where}: {k}attention.head_count_kv: layer {kv_heads.index(0)} has no KV heads "
                                "(not an attention layer); kvplan models attention-only stacks"])
        kv_heads = kv_heads[0] if len(set(kv_heads)) == 1 else kv_heads
    hidden = _int(meta, k + "embedding_length", where, required=False)
    mla = None
    rank = _int(meta, k + "attention.kv_lora_rank", where, required=False)
    key_len = _int(meta, k + "attention.key_length_mla", where, required=False) if rank else None
    val_len = _int(meta, k + "attention.value_length_mla", where, required=False) if rank else None
    key_note = "attention.key_length_mla" if key_len else "attention.key_length"
    val_note = "attention.value_length_mla" if val_len else "attention.value_length"
    key_len = key_len or _int(meta, k + "attention.key_length", where, required=False)
    val_len = val_len or _int(meta, k + "attention.value_length", where, required=False)
    if key_len is None:
        if not hidden:
            raise ProfileError([f"{where}: {k}attention.key_length and {k}embedding_length are both missing"])
        key_len = hidden // heads
        key_note = f"embedding_length / head_count = {hidden} / {heads}"
    val_len = val_len or key_len
    if rank:
        mla = {"kv_lora_rank": rank, "qk_rope_head_dim": _int(meta, k + "rope.dimension_count", where)}
    global_dim = None
    swa_len = _int(meta, k + "attention.key_length_swa", where, required=False) if arch == "gemma4" else None
    if swa_len and swa_len != key_len and val_len == key_len:
        # Gemma 4 (conversion/gemma.py Gemma4Model): key_length is global_head_dim (full-attention layers),
        # key_length_swa head_dim (the sliding layers); llama.cpp requires K and V of one width on each
        global_dim, key_len, val_len = key_len, swa_len, swa_len
        key_note = "attention.key_length_swa (the sliding layers; key_length is global_head_dim)"
    inter = _int(meta, k + "feed_forward_length", where, required=False, per_layer=True)
    inter_note = "feed_forward_length"
    if isinstance(inter, list) and arch in ("gemma3n", "gemma4") and len(inter) == layers and len(set(inter)) > 1 and all(inter):
        inter_note = "feed_forward_length, one width per layer"  # Gemma 3n's MatFormer widths, kept per layer
    elif isinstance(inter, list):
        inter, inter_note = max(inter, default=0), "feed_forward_length (the largest of its per-layer values)"
    gemma3n = _gemma3n_fields(meta, tensors, k, layers, where) if arch in ("gemma3n", "gemma4") else {}
    vocab = _int(meta, k + "vocab_size", where, required=False)
    vocab_note = "vocab_size"
    if vocab is None and isinstance(meta.get("tokenizer.ggml.tokens"), list):
        vocab, vocab_note = len(meta["tokenizer.ggml.tokens"]), "tokenizer.ggml.tokens (its length)"
    max_context = _int(meta, k + "context_length", where, required=False)

    window = _int(meta, k + "attention.sliding_window", where, required=False, minimum=0)
    local: list[int] = []
    chunk = None
    if arch == "llama4" and window is None:
        # src/models/llama4.cpp load_arch_hparams: no sliding_window key → LLAMA_SWA_TYPE_CHUNKED, n_swa 8192 (the
        # file holds no chunk), load_swa_pattern(ml, 4) unless the file names a pattern; sliding_window 0: none
        chunk = LLAMA4_CHUNK_TOKENS
        raw = meta.get(k + "attention.sliding_window_pattern")
        if isinstance(raw, list):
            local = _local_layers(raw, layers, where, k + "attention.sliding_window_pattern")
        else:
            n = _int(meta, k + "attention.sliding_window_pattern", where, minimum=0) if raw is not None else 4
            local = swa_pattern_layers(n, layers)
        window_note = (f"no {k}attention.sliding_window: llama.cpp's chunked attention (LLAMA_SWA_TYPE_CHUNKED), "
                       f"chunks of {chunk} on {len(local)} layers, its loader's values")
    elif window:
        pattern_key = k + "attention.sliding_window_pattern"
        raw = meta.get(pattern_key)
        if isinstance(raw, list):
            local = _local_layers(raw, layers, where, pattern_key)
            window_note = f"{k}attention.sliding_window {window}, sliding_window_pattern per layer"
        else:
            # 0 is llama.cpp's "every layer local"; a negative period once dropped the window without a word
            n = _int(meta, pattern_key, where, minimum=0) if raw is not None else _BUILTIN_PATTERN.get(arch, 0)
            local = swa_pattern_layers(n, layers)
            window_note = (f"{k}attention.sliding_window {window}, pattern period {n} "
                           f"({'from the file' if raw is not None else 'llama.cpp default for ' + arch})")
    else:
        window_note = "no sliding window in the GGUF metadata"
    pattern = window_pattern(local, layers)

    # the MTP blocks after the trunk (nextn_predict_layers: Qwen3.5's converter writes them unless --no-mtp):
    # llama.cpp skips their tensors unless MTP speculative decoding is on (src/models/qwen35.cpp, TENSOR_SKIP), so
    # params and weights are the trunk's and the blocks' bytes are mtp_weights
    mtp_layers = (_int(meta, k + "nextn_predict_layers", where, required=False, minimum=0) or 0
                  if arch in ("qwen35", "qwen35moe", "qwen3next") else 0)
    mtp_tensors = [t for t in tensors if _block_number(t[0]) >= layers] if mtp_layers else []
    trunk = [t for t in tensors if _block_number(t[0]) < layers] if mtp_layers else tensors
    mtp_bytes = sum(t[2] for t in mtp_tensors)
    n_elements = sum(t[1] for t in trunk)
    n_bytes = sum(t[2] for t in trunk)
    tied = bool(tensors) and not any(t[0] == "output.weight" for t in tensors)
    params_active = None
    if params is None:
        if not n_elements:
            # check -m x.gguf has no --params: the count goes in through kvplan import gguf, into a profile
            raise ProfileError([FieldText("params", f"{where}: the file lists no tensors, so kvplan cannot count its "
                                          "parameters: import it with a parameter count ({params}) and use that "
                                          "profile")])
        params, params_note = n_elements, f"sum of the {len(trunk)} tensor shapes in the GGUF header: {n_elements:,}"
        if mtp_tensors:
            params_note += (f" (the {len(mtp_tensors)} tensors of the MTP block, blocks {layers} and on, "
                            f"{sum(t[1] for t in mtp_tensors):,} values, are not counted: mtp_weights)")
        params_active, active_note = _active_params(meta, tensors, arch, params, notes, where)
        if active_note:
            params_note += f"; {active_note}"
    else:
        check_given_params(params, layers=layers, attention_heads=heads, head_dim=key_len, v_head_dim=val_len,
                           hidden_size=hidden)
        params_note = params_source
        count = meta.get(k + "expert_count")
        if isinstance(count, int) and count > 0:
            notes.append(MOE_PARAMS_GIVEN)
    from kvplan.importers.gguf_moe import gguf_moe_fields

    moe = gguf_moe_fields(meta, trunk, arch, layers,
                          lambda key, minimum: _int(meta, key, where, required=False, minimum=minimum), notes)
    names = {t[0] for t in trunk}
    # the rope tensors the converter writes for a scaled rope (conversion/llama.py generate_extra_tensors: llama3's
    # rope_freqs; phi3's long/short factors): a weight type then prices them too (kvplan.engine.tensors)
    rope_scaling = ("llama3" if arch in ("llama", "llama4") and "rope_freqs.weight" in names else
                    "longrope" if arch == "phi3" and "rope_factors_long.weight" in names else None)
    file_type, file_type_note = _file_type(meta, notes)
    weights, weight_type, weights_note = None, None, None
    if weight_type_given is not None:
        weight_type = weight_format_name(weight_type_given)
    if weight_bits is None and n_bytes and weight_type in (None, file_type):
        weights, weight_type = n_bytes, file_type
        weight_bits = round(n_bytes * 8 / params, 3)
        weights_note = f"sum of the tensor sizes in the file: {n_bytes:,} bytes ({weight_bits:g} bits/param)"
        bits_note = "this file's bits per weight (its exact size is 'weights')"
    elif weight_bits is not None:
        bits_note = "given on the command line" + ("; weight_type wins where both apply" if weight_type else "")
    elif weight_type is None:
        weight_bits, bits_note = DEFAULT_WEIGHT_BITS, "kvplan's default, as every built-in profile (4-bit weights)"
    else:
        bits_note = ""  # a named format alone: weight_bits is not written (weight_type prices every tensor)
    type_note = (file_type_note if weight_type is not None and weight_type == file_type
                 else "given on the command line: priced tensor by tensor")
    file_name = meta.get("general.name") or Path(where).stem
    fields = [
        ("name", name or slug(file_name), ""),
        ("description", f"imported from {Path(where).name} (GGUF, {arch})", ""),
        ("architecture", arch, "general.architecture"),
        ("params", params, "see sources.params"),
        ("params_active", params_active, "mixture of experts: parameters one token uses, see sources.params"),
        ("layers", layers, "block_count"),
        ("attention_heads", heads, "attention.head_count"),
        ("kv_heads", kv_heads, kv_note),
        ("head_dim", key_len, key_note),
        ("v_head_dim", val_len if val_len != key_len else None, val_note),
        ("global_head_dim", global_dim, "attention.key_length: K/V head width of the full-attention layers"),
        ("hidden_size", hidden, "embedding_length"),
        ("intermediate_size", inter, inter_note),
        ("vocab_size", vocab, vocab_note),
        ("tie_embeddings", tied if tensors else None,
         "no output.weight tensor: the output reuses token_embd" if tied else "the file has its own output.weight"),
        ("max_context", max_context, "context_length"),
        ("sliding_window", window if pattern is not None and chunk is None else None, ""),
        ("attention_chunk_size", chunk if pattern is not None else None, "chunked attention: llama.cpp's n_swa"),
        ("sliding_window_pattern", pattern, "the chunked layers" if chunk else ""),
        ("mla", mla, "multi-head latent attention"),
        ("rope_scaling", rope_scaling, "the file holds " + ("rope_freqs" if rope_scaling == "llama3"
                                                            else "rope_factors_long/short")),
        ("experts", moe.get("experts"), "expert_count: routed experts per MoE layer, see sources.moe"),
        ("experts_per_token", moe.get("experts_per_token"), "expert_used_count"),
        ("expert_intermediate_size", moe.get("expert_intermediate_size"), "each routed expert's width"),
        ("shared_experts", moe.get("shared_experts") or None, "always-on experts of that width"),
        ("dense_layers", moe.get("dense_layers") or None, "leading layers with a dense MLP"),
        ("state", state, "state layers: see sources.state"),
        ("shared_kv_layers", gemma3n.get("shared_kv_layers") or None,
         "attention.shared_kv_layers: the last layers read an earlier layer's KV cache"),
        ("hidden_size_per_layer_input", gemma3n.get("hidden_size_per_layer_input"),
         "embedding_length_per_layer_input"),
        ("vocab_size_per_layer_input", gemma3n.get("vocab_size_per_layer_input"),
         "rows of per_layer_token_embd"),
        ("weight_type", weight_type, type_note),
        ("weight_bits", weight_bits, bits_note),
        ("weights", None if weights is None else f"{weights} B",
         "this file's tensor bytes (exact; wins over weight_type and weight_bits)"
         + (", but its MTP block's" if mtp_tensors else "")),
        ("mtp_layers", mtp_layers or None, "nextn_predict_layers: multi-token-prediction blocks after the layers"),
        ("mtp_weights", f"{mtp_bytes} B" if mtp_tensors and weights is not None else None,
         "this file's MTP tensor bytes (loaded only for MTP speculative decoding)"),
        ("kv_bits", 16, "fp16 KV cache"),
        ("sources", {"config": f"{Path(where).name} (GGUF header, imported by kvplan)", "params": params_note,
                     "weights": weights_note, "sliding_window": window_note,
                     **({"state": state_note} if state is not None else {}),
                     **({"moe": moe["source"]} if moe else {})}, ""),
    ]
    header = [f"Model profile imported by 'kvplan import gguf' from {where}.",
              "Check every figure against the model card, then run 'kvplan profiles validate'."]
    keys = {"layers": k + "block_count", "attention_heads": k + "attention.head_count",
            "kv_heads": k + "attention.head_count_kv",
            "head_dim": k + key_note if key_note.startswith("attention.") else key_note,
            "v_head_dim": k + val_note, "hidden_size": k + "embedding_length",
            "intermediate_size": k + "feed_forward_length",
            "vocab_size": k + vocab_note if vocab_note == "vocab_size" else "tokenizer.ggml.tokens",
            "max_context": k + "context_length", "sliding_window": k + "attention.sliding_window",
            "mla.kv_lora_rank": k + "attention.kv_lora_rank", "mla.qk_rope_head_dim": k + "rope.dimension_count",
            "params": "the parameter count (the sum of the tensor shapes)"}
    return finish(fields, header, where, notes, keys=keys)


def _gemma3n_fields(meta: dict, tensors: list[tuple], k: str, layers: int, where: str) -> dict:
    """Gemma 3n's keys, as conversion/gemma.py ``Gemma3NModel.set_gguf_parameters`` writes them:
    ``{arch}.attention.shared_kv_layers`` (num_kv_shared_layers), ``{arch}.embedding_length_per_layer_input``
    (hidden_size_per_layer_input); the per-layer table's rows from the ``per_layer_token_embd`` tensor (the converter
    pads it to vocab_size rows)."""
    shared = _int(meta, k + "attention.shared_kv_layers", where, required=False, minimum=0) or 0
    width = _int(meta, k + "embedding_length_per_layer_input", where, required=False)
    table = next((t for t in tensors if t[0] == "per_layer_token_embd.weight" and len(t) >= 4 and t[3]), None)
    rows = int(table[3][0]) if table is not None and len(table[3]) == 2 else None
    if shared >= layers:
        raise ProfileError([f"{where}: {k}attention.shared_kv_layers: {shared} leaves none of the {layers} layers "
                            "a cache"])
    out = {"shared_kv_layers": shared}
    if width and rows:
        out.update(hidden_size_per_layer_input=width, vocab_size_per_layer_input=rows)
    return out


def _local_layers(flags: list, layers: int, where: str, key: str) -> list[int]:
    """The local layers of a per-layer ``sliding_window_pattern`` array: one boolean (or 0/1) per layer."""
    if len(flags) != layers:
        raise ProfileError([f"{where}: {key}: {len(flags)} entries for {layers} layers (one per layer)"])
    bad = next((f for f in flags if not isinstance(f, bool) and f not in (0, 1)), None)
    if bad is not None:
        raise ProfileError([f"{where}: {key}: expected one true or false per layer, got {bad!r}"])
    return [i for i, is_local in enumerate(flags) if is_local]
