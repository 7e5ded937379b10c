"""The fixed-size state a recurrent or convolutional layer keeps per sequence, from its config widths.

A state layer keeps, for each sequence, at most two tensors whatever the context:

* a **conv state**: the last inputs of a causal depthwise convolution, ``channels × columns`` values, where
  ``columns`` is the kernel minus one (llama.cpp, which shifts the oldest column out before it is needed) or the
  whole kernel (transformers' caches);
* a **recurrent state**: Mamba2's SSM state (``heads × head_dim × state_size``) or Gated DeltaNet's matrix
  memory (``value_heads × key_head_dim × value_head_dim``); a short convolution (LFM2) has none.

So a state is constant in the context and linear in the sequences. All functions take numbers or numpy
arrays (broadcast together) and return the same kind; no I/O.

References
----------
* llama.cpp build 11434, ``src/llama-hparams.cpp`` :: ``llama_hparams::n_embd_r`` (conv values per row:
  ``n_embd · (n_shortconv_l_cache − 1)`` for LFM2, else ``(ssm_d_conv − 1) · (ssm_d_inner + 2 · ssm_n_group ·
  ssm_d_state)``) and ``llama_hparams::n_embd_s`` (recurrent values per row: ``ssm_d_state · ssm_d_inner``);
  ``src/llama-memory-recurrent.cpp`` :: ``llama_memory_recurrent::llama_memory_recurrent`` (one F32 row of
  each per cell, ``mem_size · (1 + n_rs_seq)`` rows per layer).
* transformers 5, ``models/mamba2/modeling_mamba2.py`` :: ``Mamba2Mixer.__init__`` (``conv_dim =
  intermediate_size + 2 · n_groups · ssm_state_size``, ``intermediate_size = expand · hidden_size =
  num_heads · head_dim``) and the cache's ``conv_states [batch, conv_dim, conv_kernel]``, ``ssm_states
  [batch, num_heads, head_dim, state_size]``; ``models/qwen3_next/modeling_qwen3_next.py`` ::
  ``Qwen3NextGatedDeltaNet.__init__`` (``conv_dim = 2 · key_dim + value_dim``, ``key_dim = num_k_heads ·
  head_k_dim``, ``value_dim = num_v_heads · head_v_dim``; recurrent state ``[batch, num_v_heads, head_k_dim,
  head_v_dim]``); ``models/lfm2/modeling_lfm2.py`` :: ``Lfm2ShortConv`` (``conv_cache [batch, hidden_size,
  conv_L_cache]``).
"""

from __future__ import annotations


def short_conv_channels(hidden_size):
    """Channels of LFM2's short convolution: the hidden size [values].

    Parameters
    ----------
    hidden_size : int or ndarray [values]
        ``hidden_size`` of the config.

    Returns
    -------
    int or ndarray [values]
        Channels of one conv column.

    References
    ----------
    llama.cpp ``llama_hparams::n_embd_r`` (``n_embd · (n_shortconv_l_cache − 1)``); transformers
    ``Lfm2ShortConv`` (a depthwise ``Conv1d(hidden_size, hidden_size, L_cache, groups=hidden_size)``).
    """
    return hidden_size


def mamba2_conv_channels(ssm_heads, ssm_head_dim, ssm_groups, ssm_state_size):
    """Channels of Mamba2's causal conv: ``d_inner + 2 · n_groups · d_state`` with ``d_inner = heads · head_dim``
    [values] (the conv runs over x, B and C together).

    Parameters
    ----------
    ssm_heads : int or ndarray [count]
        ``mamba_n_heads`` / ``num_heads``.
    ssm_head_dim : int or ndarray [values]
        ``mamba_d_head`` / ``head_dim``.
    ssm_groups : int or ndarray [count]
        ``mamba_n_groups`` / ``n_groups``.
    ssm_state_size : int or ndarray [values]
        ``mamba_d_state`` / ``ssm_state_size``.

    Returns
    -------
    int or ndarray [values]

    References
    ----------
    transformers ``Mamba2Mixer.__init__`` (``conv_dim``); llama.cpp ``llama_hparams::n_embd_r``.
    """
    return ssm_heads * ssm_head_dim + 2 * ssm_groups * ssm_state_size


def mamba2_recurrent_values(ssm_heads, ssm_head_dim, ssm_state_size):
    """Values of Mamba2's SSM state: ``heads · head_dim · d_state`` (= ``d_inner · d_state``) [values].

    Parameters
    ----------
    ssm_heads : int or ndarray [count]
    ssm_head_dim : int or ndarray [values]
    ssm_state_size : int or ndarray [values]

    Returns
    -------
    int or ndarray [values]

    References
    ----------
    transformers ``ssm_states [batch, num_heads, head_dim, ssm_state_size]``; llama.cpp
    ``llama_hparams::n_embd_s`` (``ssm_d_state · ssm_d_inner``).
    """
    return ssm_heads * ssm_head_dim * ssm_state_size


def gated_deltanet_conv_channels(key_heads, key_head_dim, value_heads, value_head_dim):
    """Channels of Gated DeltaNet's causal conv over q, k and v: ``2 · key_heads · key_head_dim + value_heads ·
    value_head_dim`` [values].

    Parameters
    ----------
    key_heads : int or ndarray [count]
        ``linear_num_key_heads``.
    key_head_dim : int or ndarray [values]
        ``linear_key_head_dim``.
    value_heads : int or ndarray [count]
        ``linear_num_value_heads``.
    value_head_dim : int or ndarray [values]
        ``linear_value_head_dim``.

    Returns
    -------
    int or ndarray [values]

    References
    ----------
    transformers ``Qwen3NextGatedDeltaNet.__init__`` (``conv_dim = key_dim · 2 + value_dim``); llama.cpp's
    GGUF writes ``ssm.inner_size = value_dim``, ``ssm.state_size = key_head_dim``, ``ssm.group_count =
    key_heads``, so ``n_embd_r``'s ``ssm_d_inner + 2 · ssm_n_group · ssm_d_state`` is the same sum.
    """
    return 2 * key_heads * key_head_dim + value_heads * value_head_dim


def gated_deltanet_recurrent_values(key_head_dim, value_heads, value_head_dim):
    """Values of Gated DeltaNet's matrix memory: ``value_heads · key_head_dim · value_head_dim`` [values].

    Parameters
    ----------
    key_head_dim : int or ndarray [values]
    value_heads : int or ndarray [count]
    value_head_dim : int or ndarray [values]

    Returns
    -------
    int or ndarray [values]

    References
    ----------
    transformers ``recurrent_state [batch, num_v_heads, head_k_dim, head_v_dim]``; llama.cpp
    ``llama_hparams::n_embd_s`` (``ssm_d_state · ssm_d_inner`` = ``key_head_dim · value_dim``).
    """
    return value_heads * key_head_dim * value_head_dim


def state_bytes(conv_channels, conv_columns, recurrent_values, conv_bytes_per_value, recurrent_bytes_per_value,
                sequences=1):
    """Bytes of one state layer's state for ``sequences`` sequences: ``sequences · (conv_channels · conv_columns ·
    conv_bytes_per_value + recurrent_values · recurrent_bytes_per_value)`` [bytes]; constant in the context.

    Parameters
    ----------
    conv_channels : int or ndarray [values]
        Channels of one conv column (0: no conv state).
    conv_columns : int or ndarray [tokens]
        Columns kept: ``conv_kernel − 1`` (llama.cpp) or ``conv_kernel`` (transformers).
    recurrent_values : int or ndarray [values]
        Values of the recurrent state of one sequence (0: none, as a short convolution).
    conv_bytes_per_value, recurrent_bytes_per_value : int or ndarray [bytes]
        Element widths the runtime stores them in (4 for f32, 2 for f16/bf16).
    sequences : int or ndarray [count]
        Sequences (llama.cpp: recurrent cells, ``max(1, n_seq_max)``).

    Returns
    -------
    int or ndarray [bytes]

    References
    ----------
    llama.cpp ``llama_memory_recurrent::llama_memory_recurrent`` (``r_l`` ``[n_embd_r, n_rows]``, ``s_l``
    ``[n_embd_s, n_rows]``); transformers' cache tensors (module docstring).
    """
    return sequences * (conv_channels * conv_columns * conv_bytes_per_value
                        + recurrent_values * recurrent_bytes_per_value)


#: FLOPs per value of the recurrent state per token, by mixer (the recurrent form of each scan)
RECURRENT_FLOPS_PER_VALUE = {"short_conv": 0, "mamba2": 4, "gated_deltanet": 6}


def state_flops_per_token(mixer: str, conv_channels, conv_kernel_tokens, recurrent_values):
    """FLOPs one state layer spends on its own mixing per token, beyond its projections (which
    ``2 · params`` counts) [FLOP/token].

    ``2 · conv_channels · conv_kernel_tokens`` for the causal depthwise conv (a multiply-add per tap and channel),
    plus ``k · recurrent_values`` for the recurrent state: Mamba2's SSM updates ``h ← a·h + x·Bᵀ`` and reads
    ``y = h·C`` (2 multiply-adds per state value: ``k = 4``); Gated DeltaNet reads ``S·k`` for the delta rule,
    writes the rank-one update and reads ``S·q`` (3 multiply-adds per value: ``k = 6``); LFM2's short convolution
    has no recurrent state (``k = 0``). Gates, decays and norms (a few FLOPs per channel) are left out.

    Parameters
    ----------
    mixer : str
        ``short_conv``, ``mamba2`` or ``gated_deltanet``.
    conv_channels : int or ndarray [values]
    conv_kernel_tokens : int or ndarray [tokens]
    recurrent_values : int or ndarray [values]
        Values of one sequence's recurrent state in the layer (:func:`mamba2_recurrent_values`,
        :func:`gated_deltanet_recurrent_values`).

    Returns
    -------
    int or ndarray [FLOP/token]
        Linear in the prompt: unlike attention, the cost per token does not grow with the context.

    References
    ----------
    Dao & Gu, "Transformers are SSMs" (2024), §3 (the SSM's recurrent form ``h_t = A_t h_{t−1} + B_t x_t``,
    ``y_t = C_tᵀ h_t``); Yang, Kautz & Hatamizadeh, "Gated Delta Networks" (2024), eq. 10
    (``S_t = S_{t−1} α_t (I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ``, ``o_t = S_t q_t``).
    """
    return 2 * conv_channels * conv_kernel_tokens + RECURRENT_FLOPS_PER_VALUE[mixer] * recurrent_values
