"""kvplan's own GGUF header parser: the metadata and tensor table of a GGUF file, never its tensor data.

A GGUF file is a header — magic ``GGUF``, version, tensor count, key/value count, the key/value
metadata, then one info record per tensor (name, dimensions, ggml type, data offset) — followed by
the aligned tensor data. A model profile needs only the header.

The parser (:func:`parse_gguf_header`) handles GGUF versions 2 and 3 (64-bit counts), both byte
orders, and every value type (``uint8`` … ``float64``, ``bool``, ``string``, nested ``array``).
Tensor bytes are exact: ``elements / block size × type size`` from the ggml type table below (the
``blck_size`` / ``type_size`` of ggml.c's ``type_traits``; a test keeps it equal to the ``gguf``
package's ``GGML_QUANT_SIZES``); ``kvplan.engine.ggml_types`` supplies the sizes of the types it has.

It lives with the importers so that ``kvplan import gguf`` (:mod:`kvplan.importers.gguf`), a local
``--model x.gguf`` and a Hub GGUF read by HTTP range (:mod:`kvplan.hub.gguf_remote`) all read a
file with this one parser: they accept the same files and give the same profile.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from kvplan.errors import ProfileError
from kvplan.files.inputs import note_input

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
INITIAL_BLOCK = 2 * 2**20
MAX_BLOCK = 32 * 2**20
MAX_HEADER = 1024 * 2**20  # a header larger than this is not a header we can sensibly read by range
MAX_ARRAY_DEPTH = 8

# ggml type id → (name, elements per block, bytes per block): ggml.c type_traits (blck_size, type_size).
# Ids 4, 5 (Q4_2, Q4_3), 31–33 (Q4_0_4_4 …) and 36–38 (IQ4_NL_4_4 …) were removed from ggml.
_GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40), 10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292), 16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8),
    28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
}


def _shared_sizes() -> dict:
    """Block sizes by lower-case name from ``kvplan.engine.ggml_types`` when it exists, else {}."""
    global _SHARED
    if _SHARED is None:
        try:
            from kvplan.engine.ggml_types import GGML_TYPES

            _SHARED = {name: (t.block_values, t.block_bytes) for name, t in GGML_TYPES.items()}
        except (ImportError, AttributeError):
            _SHARED = {}
    return _SHARED


_SHARED: dict | None = None


def ggml_type(type_id: int) -> tuple[str, int, int]:
    """(name, block elements, block bytes) of a ggml type id; an unknown id raises ProfileError.

    GGUF names types by id; the ids and the few types kvplan's engine table lacks (Q8_1, I8–I64, F64,
    NVFP4, Q1_0) come from the table above, the block sizes from ``kvplan.engine.ggml_types`` where
    it has the type (a test keeps both equal to the ``gguf`` package's).
    """
    try:
        name, block, size = _GGML_TYPES[type_id]
    except KeyError:
        raise ProfileError([f"unknown ggml tensor type {type_id} (newer than this kvplan?)"]) from None
    block, size = _shared_sizes().get(name.lower(), (block, size))
    return name, block, size


def tensor_nbytes(type_id: int, dims: tuple[int, ...]) -> int:
    """Exact bytes of a tensor: rows of whole blocks (``dims`` innermost first, as GGUF stores them)."""
    name, block, size = ggml_type(type_id)
    elements = 1
    for d in dims:
        elements *= d
    if dims and dims[0] % block:
        raise ProfileError([f"a {name} tensor's row of {dims[0]} elements is not a whole number of "
                            f"{block}-element blocks"])
    return elements // block * size


# --- the header -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorInfo:
    name: str
    dims: tuple[int, ...]  # innermost first, as in the file
    type_id: int
    offset: int  # from the start of the data section

    @property
    def elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return tensor_nbytes(self.type_id, self.dims)

    @property
    def type_name(self) -> str:
        return ggml_type(self.type_id)[0]


@dataclass
class GGUFHeader:
    version: int
    byteorder: str  # "<" or ">"
    metadata: dict
    tensors: list[TensorInfo]
    header_bytes: int  # bytes up to the end of the last tensor info
    data_offset: int  # where the tensor data starts (header_bytes aligned up)
    skipped: tuple[str, ...] = field(default=())  # big arrays walked but not kept (tokenizer merges, scores, …)

    @property
    def alignment(self) -> int:
        value = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        return int(value) if isinstance(value, int) and value > 0 else DEFAULT_ALIGNMENT


class NeedMoreData(Exception):
    """The buffer ended inside the header: fetch more bytes (``needed`` is a lower bound on the total)."""

    def __init__(self, needed: int):
        super().__init__(needed)
        self.needed = needed


# Keys kvplan's local importer leaves out: big tokenizer arrays no profile field uses. They are walked, not kept.
SKIPPED_KEYS = frozenset({"tokenizer.ggml.merges", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"})

_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Cursor:
    """Sequential reads from a buffer that may end early; ``more(n)`` is asked for bytes past its end."""

    def __init__(self, data, more=None):
        self.data = data
        self.pos = 0
        self.more = more  # callable(min_total_length) -> new buffer, or None (then NeedMoreData is raised)
        self.bo = "<"

    def _ensure(self, n: int) -> None:
        end = self.pos + n
        if end > len(self.data):
            if self.more is None:
                raise NeedMoreData(end)
            self.data = self.more(end)
            if end > len(self.data):
                raise ProfileError([f"the file ends inside the GGUF header (at byte {len(self.data):,})"])

    def unpack(self, fmt: str):
        size = struct.calcsize(self.bo + fmt)
        self._ensure(size)
        value = struct.unpack_from(self.bo + fmt, self.data, self.pos)
        self.pos += size
        return value[0] if len(value) == 1 else value

    def many(self, code: str, count: int) -> list:
        size = struct.calcsize(code) * count
        self._ensure(size)
        values = list(struct.unpack_from(f"{self.bo}{count}{code}", self.data, self.pos))
        self.pos += size
        return values

    def string(self, keep: bool = True):
        n = self.unpack("Q")
        if n > MAX_HEADER:
            raise ProfileError([f"a GGUF string of {n:,} bytes: not a valid header"])
        self._ensure(n)
        raw = self.data[self.pos:self.pos + n] if keep else None
        self.pos += n
        return bytes(raw).decode("utf-8", errors="replace") if keep else None

    def value(self, vtype: int, keep: bool = True, depth: int = 0):
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string(keep)
        if vtype == _ARRAY:
            etype, count = self.unpack("I"), self.unpack("Q")
            if count > MAX_HEADER:
                raise ProfileError([f"a GGUF array of {count:,} entries: not a valid header"])
            if etype in _SCALARS:
                if not keep:
                    size = struct.calcsize(_SCALARS[etype]) * count
                    self._ensure(size)
                    self.pos += size
                    return None
                return self.many(_SCALARS[etype], count)
            if etype == _ARRAY and depth >= MAX_ARRAY_DEPTH:  # llama.cpp writes none nested; a loop would recurse
                raise ProfileError([f"GGUF arrays nested deeper than {MAX_ARRAY_DEPTH} levels: not a valid header"])
            if etype in (_STRING, _ARRAY):
                out = [self.value(etype, keep, depth + 1) for _ in range(count)]
                return out if keep else None
            raise ProfileError([f"unknown GGUF array element type {etype}"])
        raise ProfileError([f"unknown GGUF value type {vtype}"])


def parse_gguf_header(data, more=None) -> GGUFHeader:
    """Parse a GGUF header from ``data`` (bytes-like, from the file's first byte).

    Without ``more``, a buffer that ends inside the header raises :class:`NeedMoreData`; with it,
    ``more(n)`` must return a longer buffer (at least ``n`` bytes unless the file ends).
    """
    cur = _Cursor(data, more)
    cur._ensure(8)
    if bytes(cur.data[:4]) != MAGIC:
        raise ProfileError([f"not a GGUF file (starts with {bytes(cur.data[:4])!r}, not b'GGUF')"])
    cur.pos = 4
    version = cur.unpack("I")
    if version & 0xFFFF == 0 and version >> 16:  # written on a big-endian machine
        cur.bo = ">"
        version = struct.unpack(">I", struct.pack("<I", version))[0]
    if version not in (2, 3):
        raise ProfileError([f"GGUF version {version}: kvplan reads versions 2 and 3"
                            + (" (version 1 files predate August 2023: convert them again)" if version == 1 else "")])
    n_tensors, n_kv = cur.unpack("Q"), cur.unpack("Q")
    if n_tensors > 10**7 or n_kv > 10**7:
        raise ProfileError([f"GGUF header claims {n_tensors:,} tensors and {n_kv:,} keys: not a valid header"])
    meta: dict = {}
    skipped = []
    for _ in range(n_kv):
        key = cur.string()
        vtype = cur.unpack("I")
        keep = key not in SKIPPED_KEYS
        if key in meta or key in skipped:  # llama.cpp's gguf reader refuses a file with one too
            raise ProfileError([f"GGUF metadata key {key!r} given twice: not a valid header"])
        value = cur.value(vtype, keep)
        if keep:
            meta[key] = value
        else:
            skipped.append(key)
    tensors, names = [], set()
    for _ in range(n_tensors):
        name = cur.string()
        if name in names:  # llama.cpp's gguf reader refuses it too; its bytes would count twice
            raise ProfileError([f"GGUF tensor {name!r} given twice: not a valid header"])
        names.add(name)
        n_dims = cur.unpack("I")
        if n_dims > 8:
            raise ProfileError([f"tensor {name!r} has {n_dims} dimensions: not a valid header"])
        dims = tuple(cur.many("Q", n_dims)) if n_dims else ()
        type_id = cur.unpack("I")
        offset = cur.unpack("Q")
        tensors.append(TensorInfo(name, dims, type_id, offset))
    header = GGUFHeader(version, cur.bo, meta, tensors, cur.pos, 0, tuple(skipped))
    align = header.alignment
    header.data_offset = -(-cur.pos // align) * align
    return header


def read_local_header(path: str | Path, *, block: int = INITIAL_BLOCK, what: str | None = None) -> GGUFHeader:
    """The header of a local GGUF file, reading only as far as the header goes. A problem is reported as
    ``what: problem`` (default: the path; ``""``: the problem alone, for a caller that words it)."""
    p = Path(path)
    if not p.is_file():
        raise ProfileError([f"{path}: " + ("not a regular file" if p.exists() else "no such file")])
    note_input(p)
    with open(p, "rb") as handle:
        buf = bytearray(handle.read(block))
        chunk = block

        def more(n: int):
            nonlocal chunk
            while len(buf) < n:
                chunk = min(chunk * 2, MAX_BLOCK)
                got = handle.read(max(chunk, n - len(buf)))
                if not got:
                    break
                buf.extend(got)
            return buf

        try:
            return parse_gguf_header(buf, more)
        except ProfileError as exc:
            prefix = str(path) if what is None else what
            raise ProfileError([f"{prefix}: {p}" if prefix else p for p in exc.problems]) from None


def header_metadata(header: GGUFHeader) -> tuple[dict, list[tuple]]:
    """``(metadata, tensors)`` as ``kvplan.importers.gguf.read_metadata`` gives them: tensors are
    ``(name, elements, bytes, shape)`` with ``shape`` outermost first (numpy's order)."""
    tensors = [(t.name, t.elements, t.nbytes, tuple(reversed(t.dims))) for t in header.tensors]
    return dict(header.metadata), tensors
