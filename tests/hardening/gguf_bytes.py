"""GGUF headers byte by byte (little-endian, version 3), for hostile files no writer would produce."""

from __future__ import annotations

import struct

U32, STRING, ARRAY, U64 = 4, 8, 9, 10


def string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def kv_u32(key: str, value: int) -> bytes:
    return string(key) + struct.pack("<II", U32, value)


def kv_string(key: str, value: str) -> bytes:
    return string(key) + struct.pack("<I", STRING) + string(value)


def nested_array(key: str, depth: int) -> bytes:
    """``key`` = [[[…]]] ``depth`` levels of arrays of one array, the innermost an empty array of u32."""
    body = struct.pack("<IQ", U32, 0)
    for _ in range(depth - 1):
        body = struct.pack("<IQ", ARRAY, 1) + body
    return string(key) + struct.pack("<I", ARRAY) + body


def tensor(name: str, dims: tuple[int, ...], type_id: int = 1, offset: int = 0) -> bytes:
    return string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<IQ", type_id, offset)


def header(kvs: list[bytes], tensors: list[bytes] = ()) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)


def llama(extra: list[bytes] = (), tensors: list[bytes] | None = None) -> bytes:
    """A small llama header kvplan imports: 2 layers, 4 heads of 16, 2 KV heads, one F16 embedding tensor."""
    kvs = [kv_string("general.architecture", "llama"), kv_u32("llama.block_count", 2),
           kv_u32("llama.attention.head_count", 4), kv_u32("llama.attention.head_count_kv", 2),
           kv_u32("llama.embedding_length", 64), kv_u32("llama.context_length", 4096), *extra]
    return header(kvs, [tensor("token_embd.weight", (64, 100))] if tensors is None else tensors)
