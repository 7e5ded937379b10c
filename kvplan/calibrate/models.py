"""The benchmarked model behind llama-bench rows, for :func:`kvplan.calibrate.fit_device.calibrate_device`: each
row's KV bytes per token (at its own cache types), the input-embedding bytes a decode step does not read, and the
layer shape prefill needs, from the model's profile.

Which profile a row's ``model_type`` stands for is the caller's (``kvplan calibrate --model``, or
:mod:`kvplan.calibrate.library`); this module is the arithmetic on the profile and the rows.
"""

from __future__ import annotations


def model_facts(model, model_type: str, rows):
    """The :class:`~kvplan.calibrate.fit_device.ModelFacts` of ``model`` (a model profile) for the rows of
    ``model_type``, and a sentence saying where they came from (for a note)."""
    from kvplan.caches.ideal import cache_layout
    from kvplan.calibrate.fit_device import DEFAULT_CACHE_TYPE, ModelFacts, cache_types
    from kvplan.engine.formats import format_from_name

    typed = [r for r in rows if r.model_type == model_type]
    # each row's cache at its own types (llama-bench -ctk f16,q8_0 runs one model at several)
    kv_by_types: dict[tuple[str, str], int] = {}
    for row in typed:
        types_of_row = cache_types(row)
        if row.is_decode and types_of_row not in kv_by_types:
            k_format, v_format = (_cache_format(row, f, t) for f, t in zip(("type_k", "type_v"), types_of_row))
            kv_by_types[types_of_row] = cache_layout(model, k_format, v_format).bytes_per_token
    default_kv = kv_by_types.get((DEFAULT_CACHE_TYPE, DEFAULT_CACHE_TYPE))
    if default_kv is None:
        default_kv = cache_layout(model, *(format_from_name(DEFAULT_CACHE_TYPE),) * 2).bytes_per_token
    embedding, how = embedding_table_bytes(model, model_type, typed[0])
    facts = ModelFacts(embedding_bytes=embedding, kv_bytes_per_token=default_kv, params=None, layers=model.layers,
                       attention_heads=model.attention_heads, head_dim=model.head_dim,
                       kv_bytes_by_cache_type=kv_by_types)
    if set(kv_by_types) - {(DEFAULT_CACHE_TYPE, DEFAULT_CACHE_TYPE)}:  # say the types when not only f16
        kv_text = ", ".join(f"{b:,} bytes/token at {k}/{v}" for (k, v), b in kv_by_types.items())
    else:
        kv_text = f"{default_kv:,} bytes/token"
    return facts, f"{model_type}: KV cache {kv_text} and layer shape from model {model.name}; {how}"


def _cache_format(row, field: str, name: str):
    """The element format of a row's cache type; an unknown name is an error at the row's line."""
    from kvplan.engine.formats import format_from_name
    from kvplan.errors import KvplanError, ProfileError

    try:
        return format_from_name(name)
    except KvplanError as exc:
        raise ProfileError([f"{row.source}:{row.line}: {field}: {exc}"]) from None


def file_type(model_type: str) -> str | None:
    """The kvplan weight type of a llama-bench ``model_type``: 'llama 7B Q4_0' → 'q4_0', 'llama 3B Q4_K - Medium'
    → 'q4_k_m', 'LLaMA 7B mostly F16' → 'f16', 'IQ4_XS - 4.25 bpw' → 'iq4_xs'; None when not a known GGUF type."""
    import re

    from kvplan.engine.quantize import FILE_TYPES

    match = re.search(r"([A-Za-z0-9_]+)(?: - (Small|Medium|Large|[\d.]+ bpw))?\s*$", model_type.strip())
    if not match:
        return None
    base = match.group(1).lower()
    size = {"Small": "_s", "Medium": "_m", "Large": "_l"}.get(match.group(2) or "", "")
    for key in (base + size, base):
        if key in FILE_TYPES:
            return key
    return None


def embedding_table_bytes(model, model_type: str, row) -> tuple[int, str]:
    """Bytes of the input-embedding table a decode step does not read, and how they were found.

    A step reads one row of the table, so its bytes come off the row's ``model_size``. The table's type is the
    one llama.cpp's quantizer gives ``token_embd`` in the row's file type (tensor-by-tensor pricing of the
    model profile); when the file type or the architecture is not priced, the row's mean bits per parameter."""
    if model.tie_embeddings:
        return 0, "tied embeddings: the whole table is the output layer and is read every step"
    if not (model.vocab_size and model.hidden_size):
        return 0, f"no vocab_size/hidden_size in {model.name}: input embeddings not subtracted"
    from kvplan.engine import embedding_bytes
    from kvplan.errors import FieldError
    from kvplan.plan.weights import priced_weights

    weight_type = file_type(model_type)
    if weight_type is not None:
        try:
            pricing = priced_weights(model, weight_type)
        except FieldError:
            pricing = None
        tables = [t for t in pricing.tensors if t.name == "token_embd.weight"] if pricing is not None else []
        if tables:
            return tables[0].bytes, (f"input embeddings {tables[0].bytes:,} B ({tables[0].dtype}, "
                                     f"{model.vocab_size:,} × {model.hidden_size:,}) not read per token")
    bits = row.model_size_bytes * 8 / row.model_n_params
    table = int(embedding_bytes(model.vocab_size, model.hidden_size, bits))
    return table, (f"input embeddings ≈ {table:,} B ({model.vocab_size:,} × {model.hidden_size:,} at the file's "
                   f"mean {bits:.2f} bits/param) not read per token")
