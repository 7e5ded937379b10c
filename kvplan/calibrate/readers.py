"""Read llama-bench results in every form llama-bench writes them.

``llama-bench -o json`` (an array of objects), ``-o jsonl`` (one object a line),
``-o csv`` (a header of field names, every value quoted) and ``-o md`` (the default
Markdown table people paste into issues, possibly several tables with their
``build: <commit> (<number>)`` lines). Field names and the Markdown layout follow
``tools/llama-bench/llama-bench.cpp`` (``test::get_fields``, ``markdown_printer``);
older releases are read too: ``pp 512`` / ``tg 128`` test names, boolean
``flash_attn``, per-backend boolean fields instead of ``backends``, no ``n_depth``.

Every problem is reported as ``file:line: field: message`` in one
:class:`~kvplan.errors.ProfileError`.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

from kvplan.errors import ProfileError
from kvplan.files import jsonio

FORMATS = ("json", "jsonl", "csv", "md")

# Fields a machine-readable row must have (llama-bench has written them since 2023).
REQUIRED_FIELDS = ("model_type", "model_size", "model_n_params", "n_prompt", "n_gen", "avg_ts")
# Markdown columns a table must have (display names, markdown_printer).
REQUIRED_COLUMNS = ("model", "size", "params", "test", "t/s")
# Boolean backend fields of llama-bench releases before the ``backends`` string (2023–24).
_OLD_BACKEND_FLAGS = (("cuda", "CUDA"), ("vulkan", "Vulkan"), ("kompute", "Kompute"), ("metal", "Metal"),
                      ("sycl", "SYCL"), ("opencl", "OpenCL"), ("gpu_blas", "GPU BLAS"), ("blas", "BLAS"))
_SIZE_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4}
_PARAM_UNITS = {"": 1, "K": 10 ** 3, "M": 10 ** 6, "B": 10 ** 9, "G": 10 ** 9, "T": 10 ** 12}
# At most 12 digits a count: a longer one is no benchmark (and 5,000 digits would be more than int() converts).
_TEST_RE = re.compile(r"^(?:pp\s*(?P<pp>\d{1,12}))?\s*\+?\s*(?:tg\s*(?P<tg>\d{1,12}))?(?:\s*@\s*d\s*(?P<d>\d{1,12}))?$")
# A Markdown cell's number: digits with at most one decimal point (``3.56``, ``.5``, ``21``; llama-bench prints
# ``%.2f``), so a cell like ``3.5.6`` or ``6..74`` is refused by the pattern and never reaches ``float()``.
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_TS_RE = re.compile(r"^(?P<avg>[^\s±]+)(?:\s*±\s*(?P<sd>\S+))?$")
_BUILD_RE = re.compile(r"^\s*build:\s*(?P<commit>[0-9a-fA-F]+)\s*(?:\((?P<number>\d+)\))?\s*$")


@dataclass(frozen=True)
class BenchRow:
    """One llama-bench result.

    Sizes in bytes, counts as integers, ``avg_ts`` in tokens/s (``(n_prompt + n_gen)``
    tokens over the mean run time). ``model_size_exact`` is False when the size came
    from a Markdown table (``3.56 GiB`` is ±0.005 GiB). Fields a format does not carry
    are None (Markdown prints ``n_ubatch``, ``type_k``, ``type_v``, ``fa`` only when
    they differ from llama-bench's defaults, and never ``cpu_info``/``gpu_info``).
    ``source``/``line`` locate the row; ``row`` is its 0-based index in the file.
    """

    source: str
    line: int
    row: int
    model_type: str
    model_size_bytes: int
    model_size_exact: bool
    model_n_params: int
    n_prompt: int
    n_gen: int
    n_depth: int
    avg_ts: float
    stddev_ts: float | None = None
    n_ubatch: int | None = None
    type_k: str | None = None
    type_v: str | None = None
    flash_attn: int | None = None
    backend: str | None = None
    n_gpu_layers: int | None = None
    cpu_info: str | None = None
    gpu_info: str | None = None
    build_commit: str | None = None

    @property
    def test(self) -> str:
        """The test name as llama-bench prints it (``pp512``, ``tg128``, ``pp512+tg128``, ``… @ d4096``)."""
        if self.n_prompt > 0 and self.n_gen == 0:
            name = f"pp{self.n_prompt}"
        elif self.n_gen > 0 and self.n_prompt == 0:
            name = f"tg{self.n_gen}"
        else:
            name = f"pp{self.n_prompt}+tg{self.n_gen}"
        return name + (f" @ d{self.n_depth}" if self.n_depth > 0 else "")

    @property
    def is_decode(self) -> bool:
        """A pure generation row (``tg``)."""
        return self.n_gen > 0 and self.n_prompt == 0

    @property
    def is_prefill(self) -> bool:
        """A pure prompt-processing row (``pp``)."""
        return self.n_prompt > 0 and self.n_gen == 0

    @property
    def hardware(self) -> str | None:
        """``gpu_info`` or else ``cpu_info`` (None when the format has neither)."""
        return self.gpu_info or self.cpu_info or None


class _Problems:
    def __init__(self, source: str):
        self.source, self.items = source, []

    def add(self, line: int, field: str, message: str) -> None:
        self.items.append(f"{self.source}:{line}: {field}: {message}")

    def raise_if_any(self) -> None:
        if self.items:
            raise ProfileError(self.items)


# --- value parsing ---------------------------------------------------------------------


def _int(value, field, line, problems, *, minimum=0):
    number = None
    if isinstance(value, bool) or value is None:
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            number = None
    if number is None:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "…"
        problems.add(line, field, f"expected an integer, got {shown}")
        return None
    if number < minimum:
        problems.add(line, field, f"must be ≥ {minimum}, got {number}")
        return None
    return number


def _rate(value, field, line, problems):
    try:
        number = float(value) if not isinstance(value, bool) and value not in (None, "") else None
    except (TypeError, ValueError):
        number = None
    if number is None or not math.isfinite(number):
        problems.add(line, field, f"expected a number of tokens per second, got {value!r}")
        return None
    if number <= 0:
        problems.add(line, field, f"must be > 0 tokens/s, got {value!r}")
        return None
    return number


def _stddev(value, field, line, problems, cell=None):
    """A standard deviation of tokens/s: a number ≥ 0, or None when the row has none (an empty cell or field).

    llama-bench writes 0 for a single repetition; NaN (Python's json reads ``NaN``) is kept as no figure."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str) and re.fullmatch(rf"[+]?{_NUMBER}(?:[eE][+-]?\d+)?", value.strip()):
        number = float(value)
    if (number is not None and math.isnan(number)) or (isinstance(value, str) and value.strip().lower() in
                                                        ("nan", "-nan")):
        return None
    if number is None or not math.isfinite(number) or number < 0:
        shown = cell if cell is not None else value
        problems.add(line, field, f"expected a standard deviation ≥ 0 tokens/s"
                     + (" after '±' (like '23.85 ± 0.11')" if cell is not None else "") + f", got {shown!r}")
        return None
    return number


def _flash_attn(value):
    """llama-bench writes ``flash_attn`` as a bool (older) or an int -1/0/1 (auto/off/on)."""
    if value in (None, ""):
        return None
    if isinstance(value, bool):
        return int(value)
    text = str(value).strip().lower()
    if text in ("true", "on", "enabled"):
        return 1
    if text in ("false", "off", "disabled"):
        return 0
    if text == "auto":
        return -1
    try:
        return int(text)
    except ValueError:
        return None


def _optional_int(value):
    try:
        return int(value) if value not in (None, "") and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _optional_str(value):
    return None if value in (None, "") else str(value)


def _backend(record: dict) -> str | None:
    if record.get("backends"):
        return str(record["backends"])
    flags = [name for key, name in _OLD_BACKEND_FLAGS if str(record.get(key, "")).lower() in ("true", "1")]
    if flags:
        return ",".join(flags)
    if any(key in record for key, _ in _OLD_BACKEND_FLAGS):
        return "CPU"
    return None


# --- machine-readable formats (json, jsonl, csv) ------------------------------------------


def _row_from_record(record, source, line, index, problems) -> BenchRow | None:
    if not isinstance(record, dict):
        problems.add(line, "row", f"expected an object of llama-bench fields, got {type(record).__name__}")
        return None
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        problems.add(line, "columns", "missing llama-bench field(s) " + ", ".join(repr(f) for f in missing))
        return None
    before = len(problems.items)
    model_type = record["model_type"]
    if not isinstance(model_type, str) or not model_type.strip():
        problems.add(line, "model_type", f"expected a model description, got {model_type!r}")
    size = _int(record["model_size"], "model_size", line, problems, minimum=1)
    params = _int(record["model_n_params"], "model_n_params", line, problems, minimum=1)
    n_prompt = _int(record["n_prompt"], "n_prompt", line, problems)
    n_gen = _int(record["n_gen"], "n_gen", line, problems)
    n_depth = _int(record.get("n_depth", 0), "n_depth", line, problems)
    avg_ts = _rate(record["avg_ts"], "avg_ts", line, problems)
    stddev = _stddev(record.get("stddev_ts"), "stddev_ts", line, problems)
    if n_prompt == 0 and n_gen == 0:
        problems.add(line, "n_prompt", "n_prompt and n_gen are both 0: no test")
    if len(problems.items) > before:
        return None
    return BenchRow(
        source=source, line=line, row=index, model_type=model_type.strip(), model_size_bytes=size,
        model_size_exact=True, model_n_params=params, n_prompt=n_prompt, n_gen=n_gen, n_depth=n_depth,
        avg_ts=avg_ts, stddev_ts=stddev, n_ubatch=_optional_int(record.get("n_ubatch")),
        type_k=_optional_str(record.get("type_k")), type_v=_optional_str(record.get("type_v")),
        flash_attn=_flash_attn(record.get("flash_attn")), backend=_backend(record),
        n_gpu_layers=_optional_int(record.get("n_gpu_layers")),
        cpu_info=_optional_str(record.get("cpu_info")), gpu_info=_optional_str(record.get("gpu_info")),
        build_commit=_optional_str(record.get("build_commit")),
    )


class LineCounter:
    """The 1-based line of an offset in ``text``, for offsets met in increasing order: each call counts the
    newlines since the previous one, so a file's rows cost one pass over it, not one pass each.

    ``chars_scanned`` is the number of characters counted so far (at most ``len(text)`` in increasing order)."""

    def __init__(self, text: str):
        self.text, self._offset, self._line, self.chars_scanned = text, 0, 1, 0

    def line_of(self, offset: int) -> int:
        if offset < self._offset:  # going back (not done by the readers): count again from the start
            self._offset, self._line = 0, 1
        self._line += self.text.count("\n", self._offset, offset)
        self.chars_scanned += offset - self._offset
        self._offset = offset
        return self._line


def _read_json(text, source, problems):
    lines = LineCounter(text)
    records, pos = [], len(text) - len(text.lstrip())
    if not text.startswith("[", pos):
        problems.add(lines.line_of(pos), "json", "expected a JSON array of llama-bench rows ('[')")
        return records
    pos += 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            problems.add(lines.line_of(pos), "json", "unterminated array (no closing ']')")
            return records
        if text[pos] == "]":
            rest = text[pos + 1:].strip()
            if rest:
                problems.add(lines.line_of(pos + 1 + text[pos + 1:].index(rest[0])), "json",
                             "unexpected text after the array")
            return records
        try:
            obj, end = jsonio.raw_decode(text, pos)
        except jsonio.JsonError as exc:
            problems.add(exc.line, "json", exc.message)
            return records
        records.append((lines.line_of(pos), obj))
        pos = end


def _read_jsonl(text, source, problems):
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((number, jsonio.loads(line)))
        except jsonio.JsonError as exc:
            problems.add(number, "jsonl", exc.message)
    return records


def _read_csv(text, source, problems):
    reader = csv.reader(io.StringIO(text))
    records, header = [], None
    for values in reader:
        number = reader.line_num
        if not any(v.strip() for v in values):
            continue
        if header is None:
            header = [v.strip() for v in values]
            missing = [f for f in REQUIRED_FIELDS if f not in header]
            if missing:
                problems.add(number, "columns", "missing llama-bench field(s) " + ", ".join(repr(f) for f in missing))
                return records
            continue
        if len(values) != len(header):
            problems.add(number, "columns", f"{len(values)} values for {len(header)} columns")
            continue
        records.append((number, dict(zip(header, values))))
    return records


# --- Markdown ------------------------------------------------------------------------------


def _cells(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|"):
        return None
    parts = stripped.strip("|").split("|")
    return [p.strip() for p in parts]


def _is_separator(cells: list[str]) -> bool:
    return all(re.fullmatch(r":?-+:?", c) for c in cells)


def _md_size(text, line, problems):
    match = re.fullmatch(rf"({_NUMBER})\s*(B|KiB|MiB|GiB|TiB)", text)
    if not match:
        problems.add(line, "size", f"expected a size like '3.56 GiB', got {text!r}")
        return None
    value = float(match.group(1)) * _SIZE_UNITS[match.group(2)]
    if not math.isfinite(value) or value > 2**63:
        problems.add(line, "size", f"implausibly large: {text[:40]!r}")
        return None
    if value <= 0:
        problems.add(line, "size", f"must be > 0, got {text!r}")
        return None
    return round(value)


def _md_params(text, line, problems):
    match = re.fullmatch(rf"({_NUMBER})\s*([KMBGT]?)", text)
    if not match:
        problems.add(line, "params", f"expected a count like '6.74 B', got {text!r}")
        return None
    number = float(match.group(1)) * _PARAM_UNITS[match.group(2)]
    if not math.isfinite(number) or number > 2**63:
        problems.add(line, "params", f"implausibly large: {text[:40]!r}")
        return None
    value = round(number)
    if value <= 0:
        problems.add(line, "params", f"must be > 0, got {text!r}")
        return None
    return value


def _md_row(cells, header, line, source, index, problems) -> BenchRow | None:
    if len(cells) != len(header):
        problems.add(line, "columns", f"{len(cells)} cells for {len(header)} columns")
        return None
    values = dict(zip(header, cells))
    before = len(problems.items)
    size = _md_size(values["size"], line, problems)
    params = _md_params(values["params"], line, problems)
    test = _TEST_RE.match(values["test"])
    if not test or not (test.group("pp") or test.group("tg")):
        problems.add(line, "test", f"expected a test like 'pp512', 'tg128' or 'pp512 @ d4096', got {values['test']!r}")
    ts = _TS_RE.match(values["t/s"])
    avg = sd = None
    if not ts:
        problems.add(line, "t/s", f"expected a rate like '23.85 ± 0.11', got {values['t/s']!r}")
    else:
        avg = _rate(ts.group("avg"), "t/s", line, problems)
        if ts.group("sd") is not None:
            sd = _stddev(ts.group("sd"), "t/s", line, problems, cell=values["t/s"])
    if not values["model"]:
        problems.add(line, "model", "empty model description")
    if len(problems.items) > before:
        return None
    return BenchRow(
        source=source, line=line, row=index, model_type=values["model"], model_size_bytes=size,
        model_size_exact=False, model_n_params=params, n_prompt=int(test.group("pp") or 0),
        n_gen=int(test.group("tg") or 0), n_depth=int(test.group("d") or 0), avg_ts=avg, stddev_ts=sd,
        n_ubatch=_optional_int(values.get("n_ubatch")), type_k=_optional_str(values.get("type_k")),
        type_v=_optional_str(values.get("type_v")), flash_attn=_flash_attn(values.get("fa")),
        backend=_optional_str(values.get("backend")), n_gpu_layers=_optional_int(values.get("ngl")),
    )


def _read_md(text, source, problems) -> list[BenchRow]:
    rows: list[BenchRow] = []
    lines = text.splitlines()
    header, table_rows, i = None, [], 0
    while i < len(lines):
        number, cells = i + 1, _cells(lines[i])
        build = _BUILD_RE.match(lines[i])
        if build and table_rows:
            for k in table_rows:
                rows[k] = _with_build(rows[k], build.group("commit"))
            table_rows = []
        if cells is None:
            header = None
            i += 1
            continue
        if header is None:
            nxt = _cells(lines[i + 1]) if i + 1 < len(lines) else None
            if nxt is not None and _is_separator(nxt):
                names = [c.lower() if c.lower() in ("t/s", "test") else c for c in cells]
                if "t/s" in names and "test" in names:
                    missing = [c for c in REQUIRED_COLUMNS if c not in names]
                    if missing:
                        problems.add(number, "columns", "missing llama-bench column(s) "
                                     + ", ".join(repr(c) for c in missing))
                    else:
                        header, table_rows = names, []
                i += 2
                continue
            i += 1
            continue
        row = _md_row(cells, header, number, source, len(rows), problems)
        if row is not None:
            table_rows.append(len(rows))
            rows.append(row)
        i += 1
    return rows


def _with_build(row: BenchRow, commit: str) -> BenchRow:
    return replace(row, build_commit=commit)


# --- entry points ----------------------------------------------------------------------------


def sniff_format(text: str, name: str = "") -> str:
    """Guess the llama-bench output format from a file name and its text."""
    suffix = Path(name).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix == ".csv":
        return "csv"
    if suffix in (".md", ".markdown"):
        return "md"
    head = text.lstrip()
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        return "jsonl"
    first = head.splitlines()[0] if head else ""
    if "avg_ts" in first and "," in first and "|" not in first:
        return "csv"
    return "md"


def parse_bench_text(text: str, source: str = "<text>", fmt: str | None = None) -> list[BenchRow]:
    """Parse llama-bench output held in a string.

    Parameters
    ----------
    text : str
    source : str name used in error messages and in ``BenchRow.source``
    fmt : one of ``json``, ``jsonl``, ``csv``, ``md``, or None to guess (:func:`sniff_format`)

    Returns
    -------
    list[BenchRow] in file order.

    Raises
    ------
    ProfileError
        Empty text, an unknown format, wrong or missing columns, no rows, a rate that is
        zero, negative or not a number, or any other unparseable value; one
        ``file:line: field: message`` per problem.
    """
    problems = _Problems(source)
    text = text.removeprefix("\ufeff")  # a byte-order mark is not content (read_bench decodes it away too)
    if not text.strip():
        problems.add(1, "file", "empty: no llama-bench output")
        problems.raise_if_any()
    fmt = fmt or sniff_format(text, source)
    if fmt not in FORMATS:
        problems.add(1, "format", f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        problems.raise_if_any()
    if fmt == "md":
        rows = _read_md(text, source, problems)
    else:
        reader = {"json": _read_json, "jsonl": _read_jsonl, "csv": _read_csv}[fmt]
        rows = []
        for line, record in reader(text, source, problems):
            row = _row_from_record(record, source, line, len(rows), problems)
            if row is not None:
                rows.append(row)
    if not rows and not problems.items:
        problems.add(1, "rows", f"no llama-bench rows found (read as {fmt})")
    problems.raise_if_any()
    return rows


MAX_BENCH_BYTES = 64 << 20  # thousands of llama-bench rows; anything larger is not a bench file


def read_bench(path, fmt: str | None = None) -> list[BenchRow]:
    """Read a llama-bench output file (``-o json``, ``jsonl``, ``csv`` or ``md``).

    The format is taken from ``fmt``, else the file's extension, else its content.
    Raises :class:`~kvplan.errors.ProfileError` as :func:`parse_bench_text` does, and
    for a file that cannot be read.
    """
    from kvplan.files.yamlio import read_bounded

    path = Path(path)
    raw = read_bounded(path, MAX_BENCH_BYTES, f"{path}:1: ")
    try:
        # utf-8-sig: Windows PowerShell (Out-File -Encoding utf8) and many editors start the file with a BOM
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ProfileError([f"{path}:1: file: not UTF-8 text (bad byte at offset {exc.start})"]) from None
    return parse_bench_text(text, str(path), fmt)
