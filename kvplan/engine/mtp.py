"""The parameters of a model's multi-token-prediction (MTP) block and what one MTP draft step reads.

Qwen3.5 / Qwen3.6 (dense and MoE) carry ``mtp_num_hidden_layers`` MTP blocks beside the trunk. One block, as
llama.cpp build 11434 loads it (``src/models/qwen35.cpp`` / ``qwen35moe.cpp`` ``load_block_mtp``; the converter's
renaming in ``conversion/qwen.py`` ``_QwenMtpMixin``):

* a gated full-attention block: ``attn_q`` [h, 2 · heads · head_dim] (query and gate), ``attn_k`` / ``attn_v``
  [h, kv_heads · head_dim], ``attn_output`` [heads · head_dim, h], q/k norms [head_dim], ``attn_norm`` and
  ``post_attention_norm`` [h];
* the trunk's feed-forward: a dense SwiGLU MLP (3 · h · ff) or the MoE block (router [h, experts], the experts'
  gate/up/down 3 · h · ff_expert each, the shared expert 3 · h · ff_expert · shared and its gate [h]);
* ``nextn.eh_proj`` [2h, h] (the concatenated token embedding and hidden state projected back to h) and three
  norms [h] (``nextn.enorm``, ``nextn.hnorm``, ``nextn.shared_head_norm``).

No embedding table or output head of its own (``mtp_use_dedicated_embeddings`` false): the draft reads the
trunk's ``token_embd`` row and its output matrix (``graph_mtp``: ``model.tok_embd``, ``model.output``). A draft
step (``graph_mtp`` over one token) reads the block's matrices (of a MoE, the routed experts it uses) and the
output head, and attends over the block's own KV cache.

Pure: numbers in, numbers out (numbers or numpy arrays).
"""

from __future__ import annotations


def mtp_block_params(hidden, heads, kv_heads, head_dim, intermediate=0, experts=0, expert_intermediate=0,
                     shared_experts=0):
    """Values stored in one Qwen3.5 MTP block [values].

    Parameters
    ----------
    hidden : int [values]
        ``hidden_size`` h.
    heads, kv_heads : int [count]
        Query heads and KV heads of its attention.
    head_dim : int [values]
        Width of a head.
    intermediate : int [values]
        The dense MLP's width (0 for a MoE).
    experts, expert_intermediate, shared_experts : int [count, values, count]
        The MoE block: routed experts, each one's width, shared experts of that width (0: dense).

    Returns
    -------
    int [values]
        attention ``2·h·H·D + 2·h·Hk·D + H·D·h + 2·D`` + norms ``2·h`` + feed-forward + ``eh_proj 2·h·h`` + 3 norms
        ``3·h``.
    """
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden \
        + 2 * head_dim
    return attention + 2 * hidden + mtp_ffn_params(hidden, intermediate, experts, expert_intermediate,
                                                    shared_experts) + 2 * hidden * hidden + 3 * hidden


def mtp_ffn_params(hidden, intermediate=0, experts=0, expert_intermediate=0, shared_experts=0, used=None):
    """Values of the MTP block's feed-forward, or (with ``used``) of the part one token runs [values].

    Parameters
    ----------
    hidden, intermediate : int [values]
        ``hidden_size`` and the dense MLP's width (a dense block: ``3 · hidden · intermediate``).
    experts, expert_intermediate, shared_experts : int [count, values, count]
        The MoE block (``experts`` 0: dense).
    used : int or None [count]
        Routed experts a token runs (``experts_per_token``); None: all of them (what the block stores).

    Returns
    -------
    int [values]
        Dense: ``3·h·ff``; MoE: router ``h·E`` + ``(used or E) · 3·h·ff_e`` + shared ``3·h·ff_e·shared`` + its gate
        ``h``.
    """
    if not experts:
        return 3 * hidden * intermediate
    routed = experts if used is None else used
    return hidden * experts + routed * 3 * hidden * expert_intermediate \
        + 3 * hidden * expert_intermediate * shared_experts + hidden
