"""The KV buffers LiteRT-LM allocates for a model: pure integer math.

Rules from google-ai-edge/LiteRT-LM at commit 767d74f9acb02ef135b06e229929510232f9b850:

- ``runtime/executor/llm_litert_compiled_model_executor.cc`` :: ``LlmLiteRtCompiledModelExecutor::Create``
  (from line 591; the KV buffers at lines 716-759): one buffer per ``kv_cache_k_<i>`` / ``kv_cache_v_<i>`` input of the prefill signature,
  ``CompiledModel::CreateInputBuffer``, sized by the input's static shape and element type (the model's export).
  On the CPU backend the output KV buffer is ``input_buffer->Duplicate()`` (lines 733-737): a second reference to
  the same buffer (LiteRT's ``LiteRtDuplicateTensorBuffer`` increases the reference count), so one set. On the
  GPU backend the outputs get buffers of their own (``CreateOutputBuffer``, lines 743-755), swapped with the
  inputs after every step (``std::swap(input_kv_cache_buffers_, output_kv_cache_buffers_)``, line 274): two sets.
- Allocated once when the executor is created, whatever the prompt's length.
"""

from __future__ import annotations

KV_BUFFER_SETS = {"cpu": 1, "gpu": 2}  # CPU: the output buffer duplicates the input's handle; GPU: its own buffers


def static_kv_bytes(bytes_per_token: int, kv_cache_tokens: int, buffer_sets: int) -> int:
    """Bytes of every KV buffer of a model exported with ``kv_cache_tokens`` slots.

    Parameters
    ----------
    bytes_per_token : int [bytes/token]
        every layer's K and V row of one token, in the exported element type.
    kv_cache_tokens : int [tokens]
        the sequence axis of the ``kv_cache_k_*`` inputs.
    buffer_sets : int [1]
        1 on the CPU backend, 2 on the GPU backend (:data:`KV_BUFFER_SETS`).

    Returns
    -------
    int [bytes]
    """
    return bytes_per_token * kv_cache_tokens * buffer_sets
