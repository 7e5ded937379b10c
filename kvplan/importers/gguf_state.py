"""The state layers of a hybrid GGUF header, as llama.cpp's loader reads them (build 11434).

Which layers are recurrent (``hparams.is_recr_impl``):

* ``lfm2``, ``lfm2moe``, ``granitehybrid``: ``attention.head_count_kv`` 0 on a layer (``src/models/lfm2.cpp``,
  ``lfm2moe.cpp``,
  ``src/models/granite-hybrid.cpp`` :: ``load_arch_hparams``);
* ``nemotron_h``: ``head_count_kv`` 0 and ``feed_forward_length`` 0 (a layer with neither is MLP-only when its
  ``feed_forward_length`` is not 0; ``src/models/nemotron-h.cpp``);
* ``falcon-h1``: every layer, and every layer attends as well (``std::fill(is_recr_impl…, true)`` in
  ``src/models/falcon-h1.cpp`` :: ``load_arch_hparams``; ``llama_model::create_memory`` gives the hybrid memory
  ``filter_attn`` and ``filter_recr`` both true): a profile with ``parallel_attention``;
* ``qwen35``, ``qwen35moe``, ``qwen3next``: ``attention.recurrent_layers`` (booleans), else every layer but each
  ``full_attention_interval``-th (default 4; ``src/models/qwen35.cpp``, ``qwen3next.cpp``), among the first
  ``block_count − nextn_predict_layers`` (the MTP layers after them are a draft model's).

The widths: ``shortconv.l_cache`` and ``embedding_length`` (LFM2); ``ssm.conv_kernel``, ``ssm.inner_size``,
``ssm.state_size``, ``ssm.time_step_rank`` (heads) and ``ssm.group_count`` (Mamba2: head_dim = inner_size /
time_step_rank; Gated DeltaNet: key heads = group_count, value heads = time_step_rank, key and value head dims =
state_size, as ``llama_model_qwen35::load_arch_tensors`` reads them).
"""

from __future__ import annotations

from kvplan.errors import ProfileError

STATE_ARCHS = ("lfm2", "lfm2moe", "granitehybrid", "nemotron_h", "qwen35", "qwen35moe", "qwen3next", "falcon-h1")


def _flags(value, layers: int, key: str, where: str) -> list[bool]:
    if not isinstance(value, list) or len(value) < layers or not all(isinstance(v, bool) for v in value):
        raise ProfileError([f"{where}: {key}: expected {layers} booleans (one per layer)"])
    return list(value[:layers])


def gguf_state(meta: dict, arch: str, layers: int, kv_heads, inter, read_int, where: str) -> tuple[dict, int, str]:
    """(the profile's ``state`` mapping, the layers the main model has, where it came from) for a hybrid ``arch``.

    ``kv_heads`` / ``inter``: the per-layer ``head_count_kv`` / ``feed_forward_length`` (a number or a list);
    ``read_int(key, required)``: the importer's reader of counts."""
    k = f"{arch}."
    main = layers
    if arch in ("qwen35", "qwen35moe", "qwen3next"):
        main = layers - (read_int(k + "nextn_predict_layers", False, 0) or 0)
        flags_key = k + "attention.recurrent_layers"
        if meta.get(flags_key) is not None:
            recurrent = _flags(meta[flags_key], main, flags_key, where)
            how = flags_key
        else:
            interval = read_int(k + "full_attention_interval", False) or 4
            recurrent = [(i + 1) % interval != 0 for i in range(main)]
            how = f"every layer but each {k}full_attention_interval-th ({interval})"
        feedforward: list[int] = []
    else:
        per = kv_heads if isinstance(kv_heads, list) else [kv_heads] * layers
        ff = inter if isinstance(inter, list) else [inter or 0] * layers
        if arch == "falcon-h1":
            recurrent = [True] * layers
            feedforward = []
            how = "every layer (falcon-h1: attention and Mamba2 side by side in each)"
        elif arch == "nemotron_h":
            recurrent = [per[i] == 0 and ff[i] == 0 for i in range(layers)]
            feedforward = [i for i in range(layers) if per[i] == 0 and ff[i] != 0]
            how = f"{k}attention.head_count_kv and {k}feed_forward_length both 0 (MLP-only: head_count_kv 0 alone)"
        else:
            recurrent = [per[i] == 0 for i in range(layers)]
            feedforward = []
            how = f"{k}attention.head_count_kv 0"
    state_layers = [i for i, r in enumerate(recurrent) if r]
    if arch in ("lfm2", "lfm2moe"):
        state = {"mixer": "short_conv", "conv_kernel_tokens": read_int(k + "shortconv.l_cache", True),
                 "conv_channels": read_int(k + "embedding_length", True)}
        widths = f"{k}shortconv.l_cache taps over {k}embedding_length channels"
    else:
        conv = read_int(k + "ssm.conv_kernel", True)
        inner = read_int(k + "ssm.inner_size", True)
        d_state = read_int(k + "ssm.state_size", True)
        rank = read_int(k + "ssm.time_step_rank", True)
        groups = read_int(k + "ssm.group_count", True)
        if inner % rank:
            raise ProfileError([f"{where}: {k}ssm.inner_size {inner} is not a multiple of {k}ssm.time_step_rank {rank}"])
        if arch in ("granitehybrid", "nemotron_h", "falcon-h1"):
            state = {"mixer": "mamba2", "conv_kernel_tokens": conv, "ssm_heads": rank, "ssm_head_dim": inner // rank,
                     "ssm_groups": groups, "ssm_state_size": d_state}
            if arch == "falcon-h1":
                state["parallel_attention"] = True
            widths = (f"Mamba2: {k}ssm.time_step_rank heads of {k}ssm.inner_size / time_step_rank, "
                      f"{k}ssm.group_count, {k}ssm.state_size, {k}ssm.conv_kernel")
        else:
            if inner != rank * d_state:
                raise ProfileError([f"{where}: {k}ssm.inner_size {inner} is not time_step_rank {rank} × state_size "
                                    f"{d_state} (llama.cpp's Gated DeltaNet reads value heads of state_size)"])
            state = {"mixer": "gated_deltanet", "conv_kernel_tokens": conv, "linear_key_heads": groups,
                     "linear_key_head_dim": d_state, "linear_value_heads": rank, "linear_value_head_dim": d_state}
            widths = (f"Gated DeltaNet: {k}ssm.group_count key heads, {k}ssm.time_step_rank value heads, both of "
                      f"{k}ssm.state_size, {k}ssm.conv_kernel")
    state["layers"] = state_layers
    if feedforward:
        state["feedforward_layers"] = feedforward
    return state, main, f"state layers: {how}; {widths}"
