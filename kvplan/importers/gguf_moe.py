"""The mixture-of-experts layout of a GGUF file: the profile's ``experts``, ``experts_per_token``,
``expert_intermediate_size``, ``shared_experts`` and ``dense_layers``, from the keys llama.cpp's loader reads and the
expert tensors' shapes.

llama.cpp (``src/llama-model.cpp`` ``load_hparams``) reads ``{arch}.expert_count``, ``{arch}.expert_used_count``,
``{arch}.expert_feed_forward_length`` and ``{arch}.expert_shared_feed_forward_length`` (Qwen2/3.5-MoE, Granite),
``{arch}.expert_shared_count`` (DeepSeek) and ``{arch}.leading_dense_block_count`` (DeepSeek, LFM2-MoE). Where a key
is missing the file's tensors say it: the routed experts' width is the middle dimension of
``blk.N.ffn_{gate,up}_exps`` (experts × width × hidden, outermost first; the last of ``ffn_down_exps``); Mixtral's
converter writes no expert width (its experts are ``feed_forward_length`` wide, ``conversion/llama.py``); a shared
expert's width is the outer dimension of ``ffn_{gate,up}_shexp`` (the last of ``ffn_down_shexp``), and kvplan's profile
counts it as that many experts of the routed width (Granite-4.0-H-Tiny's 1,024-wide shared MLP over 512-wide experts:
2); the dense layers are the leading blocks without a router (``ffn_gate_inp``).
"""

from __future__ import annotations

import re

_BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")


def _shape_of(tensors: list[tuple], suffixes: tuple[str, ...]) -> tuple | None:
    for t in tensors:
        m = _BLOCK.match(t[0])
        if m and m.group(2) in suffixes and len(t) >= 4 and t[3]:
            return tuple(t[3]), m.group(2)
    return None


def _routed_width(tensors: list[tuple], experts: int) -> tuple[int | None, str, tuple]:
    """(width, the tensor it was read from, its shape), or (None, "", ())."""
    found = _shape_of(tensors, ("ffn_up_exps.weight", "ffn_gate_exps.weight"))
    if found and len(found[0]) == 3 and found[0][0] == experts:
        return int(found[0][1]), found[1], found[0]
    found = _shape_of(tensors, ("ffn_down_exps.weight",))
    if found and len(found[0]) == 3 and found[0][0] == experts:
        return int(found[0][2]), found[1], found[0]
    return None, "", ()


def _shared_width(tensors: list[tuple]) -> int | None:
    found = _shape_of(tensors, ("ffn_up_shexp.weight", "ffn_gate_shexp.weight"))
    if found and len(found[0]) == 2:
        return int(found[0][0])
    found = _shape_of(tensors, ("ffn_down_shexp.weight",))
    if found and len(found[0]) == 2:
        return int(found[0][1])
    return None


def gguf_moe_fields(meta: dict, tensors: list[tuple], arch: str, layers: int, count, notes: list[str]) -> dict:
    """The profile's MoE fields of a GGUF header, with ``source`` (the arithmetic, for ``sources.moe``); {} for a
    dense file, or with a note in ``notes`` where the file does not say enough.

    ``count(key, minimum)`` reads a whole-number key (None when absent); ``tensors``: ``(name, elements, bytes,
    shape)`` with the shape outermost first."""
    k = f"{arch}."
    experts = count(k + "expert_count", 0)
    if not experts:
        return {}
    used = count(k + "expert_used_count", 0)
    if not used or used > experts:
        return {}  # params_active says so already (kvplan.importers.gguf._active_params)
    width, tensor, shape = _routed_width(tensors, experts)
    where_in = "last" if tensor == "ffn_down_exps.weight" else "middle"
    how = f"the {where_in} dimension of {tensor} ({' × '.join(map(str, shape))})" if tensor else ""
    keyed = count(k + "expert_feed_forward_length", 1)
    if width is None and keyed:
        width, how = keyed, f"{k}expert_feed_forward_length"
    elif width is None and arch == "llama":
        width, how = count(k + "feed_forward_length", 1), f"{k}feed_forward_length (Mixtral's experts)"
    if not width:
        notes.append("a mixture of experts whose expert width the file does not give (no expert_feed_forward_length, "
                     "no ffn_*_exps tensors): add experts, experts_per_token and expert_intermediate_size by hand")
        return {}
    routers = sorted({int(m.group(1)) for m in map(_BLOCK.match, (t[0] for t in tensors))
                      if m and m.group(2) == "ffn_gate_inp.weight" and int(m.group(1)) < layers})
    keyed_dense = count(k + "leading_dense_block_count", 0)
    leading = keyed_dense if keyed_dense is not None else routers[0] if routers else 0
    if routers and routers != list(range(leading, layers)):
        notes.append(f"experts on blocks {routers[0]}…{routers[-1]} but not on every block from {leading}: kvplan's "
                     "profile holds leading dense layers only, so the expert layout is not written (params_active "
                     "still is)")
        return {}
    shared_w = _shared_width(tensors) or count(k + "expert_shared_feed_forward_length", 1)
    shared_n = count(k + "expert_shared_count", 0)
    shared = 0
    shared_how = "no shared expert"
    if shared_w:
        if shared_w % width:
            notes.append(f"a shared expert {shared_w} wide is not a whole number of {width}-wide experts: "
                         "shared_experts not written; add it by hand")
            return {}
        shared = shared_w // width
        shared_how = f"shared expert {shared_w} wide = {shared} × {width}"
    elif shared_n:
        shared, shared_how = shared_n, f"{k}expert_shared_count"
    source = (f"{k}expert_count {experts}, {k}expert_used_count {used}; width {width} ({how}); {shared_how}; "
              f"dense layers {leading} (" + (f"{k}leading_dense_block_count" if keyed_dense is not None
                                            else "blocks before the first ffn_gate_inp") + ")")
    return {"experts": experts, "experts_per_token": used, "expert_intermediate_size": width,
            "shared_experts": shared, "dense_layers": leading, "source": source}
