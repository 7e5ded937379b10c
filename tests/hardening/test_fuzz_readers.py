"""A fuzz pass over every reader: hostile versions of a valid file of each format, fed to the command that reads
it. Whatever the bytes, the command answers with exit 0, 1 or 2 — never exit 3 or a traceback — within 5 s, and a
command that fails leaves no output file behind (nor a temporary one).

The corpus is deterministic: each format's valid base file, then mutations of it (cut short, numbers swapped for
hostile ones, bytes flipped by a seeded generator, nesting, aliases, encodings), plus the hand-written files under
tests/data/hostile/. About 300 cases; the whole file runs in a few seconds.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from tests.conftest import DATA, REF_7B, REF_PHONE
from tests.hardening import gguf_bytes

HOSTILE = DATA / "hostile"
BENCH = DATA / "calibration" / "bench"
BASE = "macbook-air-m2-16gb"


def _gate_text() -> str:
    return (f"title: fuzz\ndefaults:\n  device: {REF_PHONE}\n  model: {REF_7B}\nconfigurations:\n"
            "  - name: a\n    ctx: 4k\n    min_decode_tok_s: 5\n    max_swap_in_s: 1.5\n    min_headroom: 10%\n"
            "  - name: b\n    ctx: 8k\n    must_fit: false\n    sequences: 2\n")


def _bench_json() -> str:
    return json.dumps([json.loads(line) for line in (BENCH / "m2_q4_0.jsonl").read_text().splitlines()], indent=2)


def _check(*more):
    return ["check", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "4k", *more]


# format → (valid base content, file suffix, argv for a path and an output folder)
FORMATS = {
    "device": (REF_PHONE.read_text(), "yaml",
               lambda p, out: ["check", "--device", p, "--model", REF_7B, "--ctx", "4k"]),
    "model": (REF_7B.read_text(), "yaml", lambda p, out: ["check", "--device", REF_PHONE, "--model", p, "--ctx", "4k"]),
    "gate": (_gate_text(), "yaml", lambda p, out: ["gate", p, "--json", out / "gate.json"]),
    "kv_policy": ((DATA / "gate" / "policies" / "half-history.yaml").read_text(), "yaml",
                  lambda p, out: _check("--kv-policy", p)),
    "config.json": ((DATA / "hf_configs" / "llama-3.2-1b.json").read_text(), "json",
                    lambda p, out: ["import", "hf", p, "-o", out / "model.yaml"]),
    "gguf": (gguf_bytes.llama(), "gguf", lambda p, out: ["import", "gguf", p, "-o", out / "model.yaml"]),
    "bench-json": (_bench_json(), "json", lambda p, out: ["calibrate", p, "-o", out / "dev.yaml", "--base", BASE]),
    "bench-jsonl": ((BENCH / "m2_q4_0.jsonl").read_text(), "jsonl",
                    lambda p, out: ["calibrate", p, "-o", out / "dev.yaml", "--base", BASE]),
    "bench-csv": ((BENCH / "m2_q4_0.csv").read_text(), "csv",
                  lambda p, out: ["calibrate", p, "-o", out / "dev.yaml", "--base", BASE]),
    "bench-md": ((BENCH / "m2.md").read_text(), "md",
                 lambda p, out: ["calibrate", p, "-o", out / "dev.yaml", "--base", BASE]),
}

HOSTILE_NUMBERS = ["1" * 5000, "-1", "0", "1e999", "-1e999", ".nan", "040", "0x20", "3_2", "1:20", "yes", '""',
                   "[]", "{}", "~", "9" * 400 + ".5"]
_NUMBER = re.compile(rb"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _text_mutations(base: bytes, suffix: str) -> dict[str, bytes]:
    cases = {"empty": b"", "cut-third": base[: len(base) // 3], "cut-two-thirds": base[: 2 * len(base) // 3],
             "bom": b"\xef\xbb\xbf" + base, "utf16": base.decode().encode("utf-16"), "nul": base[:10] + b"\0" + base[10:],
             "latin1": base + "\n# caf\xe9".encode("latin-1"), "junk-end": base + b"\n]]]}}} :: - ? ! & *\n",
             "first-line-twice": base.split(b"\n", 1)[0] + b"\n" + base, "crlf": base.replace(b"\n", b"\r\n"),
             "tabs": base.replace(b"  ", b"\t")}
    numbers = list(_NUMBER.finditer(base))[:4]
    for j, value in enumerate(HOSTILE_NUMBERS):  # each hostile number once, in turn at the first four numbers
        match = numbers[j % len(numbers)]
        cases[f"number{j % len(numbers)}-{j}"] = base[: match.start()] + value.encode() + base[match.end():]
    if suffix == "yaml":
        cases.update({
            "deep": base + b"x: " + b"[" * 5000 + b"]" * 5000 + b"\n",
            "self-alias": base + b"x: &a [*a]\n",
            "alias-flood": b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
                b"%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n" % ((bytes([98 + k]),) * 2 + (bytes([97 + k]),) * 8)
                for k in range(8)) + base,
            "python-tag": base + b"x: !!python/object/apply:os.system [echo hi]\n",
            "bad-int-tag": base + b"x: !!int abc\n", "timestamp": base + b"x: !!timestamp 2020-99-99\n",
            "list-key": base + b"? [a, b]\n: 1\n", "two-docs": base + b"---\n" + base,
            "a-list": b"- " + base.replace(b"\n", b"\n  "), "a-scalar": b"just text\n",
            "merge-scalar": base + b"<<: 5\n", "long-line": base + b"x: " + b"a" * 200_000 + b"\n",
        })
    else:
        cases.update({"deep": b"[" * 50_000 + b"]" * 50_000, "dup-first-key": _dup_first_key(base),
                      "nan": base.replace(b"21.91", b"NaN"), "inf": base.replace(b"21.91", b"Infinity"),
                      "array": b"[" + base + b"]", "string": b'"text"'})
    return cases


def _dup_first_key(base: bytes) -> bytes:
    match = re.search(rb'"(\w+)"\s*:\s*("[^"]*"|[-\w.]+)', base)
    return base if not match else base[: match.end()] + b", " + match.group() + base[match.end():]


def _gguf_mutations(base: bytes) -> dict[str, bytes]:
    rng = random.Random(27)
    cases = {f"cut-{n}": base[:n] for n in (0, 3, 4, 8, 16, 24, 40, len(base) // 2, len(base) - 1)}
    cases["version-1"] = base[:4] + (1).to_bytes(4, "little") + base[8:]
    cases["big-endian"] = base[:4] + (3).to_bytes(4, "big") + base[8:]
    cases["many-tensors"] = base[:8] + (2**63).to_bytes(8, "little") + base[16:]
    cases["many-keys"] = base[:16] + (10**6).to_bytes(8, "little") + base[24:]
    cases["huge-string"] = base[:24] + (2**40).to_bytes(8, "little") + base[32:]
    cases["nested"] = gguf_bytes.llama([gguf_bytes.nested_array("x.deep", 3000)])
    cases["dup-key"] = gguf_bytes.llama([gguf_bytes.kv_u32("llama.block_count", 0)])
    cases["zero-layers"] = gguf_bytes.llama().replace(gguf_bytes.kv_u32("llama.block_count", 2),
                                                      gguf_bytes.kv_u32("llama.block_count", 0))
    cases["huge-layers"] = gguf_bytes.llama().replace(gguf_bytes.kv_u32("llama.block_count", 2),
                                                      gguf_bytes.kv_u32("llama.block_count", 2**32 - 1))
    cases["dims-9"] = gguf_bytes.llama(tensors=[gguf_bytes.tensor("token_embd.weight", (2,) * 9)])
    cases["huge-dims"] = gguf_bytes.llama(tensors=[gguf_bytes.tensor("token_embd.weight", (2**63, 2**63))])
    cases["bad-type"] = gguf_bytes.llama(tensors=[gguf_bytes.tensor("token_embd.weight", (64, 100), type_id=999)])
    cases["bad-value-type"] = gguf_bytes.header([gguf_bytes.string("k") + (77).to_bytes(4, "little")])
    for i in range(16):
        data = bytearray(base)
        for _ in range(3):
            data[rng.randrange(len(data))] = rng.randrange(256)
        cases[f"flip-{i}"] = bytes(data)
    return cases


def _cases():
    for fmt, (base, suffix, argv) in FORMATS.items():
        raw = base if isinstance(base, bytes) else base.encode()
        mutations = _gguf_mutations(raw) if suffix == "gguf" else _text_mutations(raw, suffix)
        for name, data in mutations.items():
            yield pytest.param(fmt, suffix, data, argv, id=f"{fmt}-{name}")
        for path in sorted((HOSTILE / fmt).glob("*")) if (HOSTILE / fmt).is_dir() else ():
            yield pytest.param(fmt, path.suffix.lstrip("."), path.read_bytes(), argv, id=f"{fmt}-file-{path.stem}")


@pytest.mark.parametrize("fmt, suffix, data, argv", list(_cases()))
def test_a_hostile_file_is_answered_cleanly(run, tmp_path, fmt, suffix, data, argv):
    source = tmp_path / "in"
    source.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    path = source / f"input.{suffix}"
    path.write_bytes(data)
    start = time.perf_counter()
    result = run(*argv(path, out))
    elapsed = time.perf_counter() - start
    said = result.stdout + result.stderr
    assert result.exit_code in (0, 1, 2), said[-2000:]
    assert "Traceback" not in said and "internal error" not in said, said[-2000:]
    assert elapsed < 5, f"{elapsed:.1f} s"
    left = sorted(p.name for p in out.iterdir())
    if result.exit_code == 2:
        assert not left, f"a failed command left {left}"
    assert not [n for n in left if n.endswith(".tmp")], left
    assert sorted(p.name for p in source.iterdir()) == [path.name]  # nothing written next to the input
