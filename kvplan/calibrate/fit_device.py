"""Device-profile speed fields fitted to llama-bench rows, with their provenance.

From :class:`~kvplan.calibrate.readers.BenchRow` rows of one device, :func:`calibrate_device`
fits the two-term decode model (:func:`kvplan.engine.calibration.fit_decode`) to the
``tg`` rows and a sustained compute rate (:func:`~kvplan.engine.calibration.fit_prefill`)
to the ``pp`` rows, and returns kvplan device-profile fields:

- ``memory_bandwidth`` — the peak when one is given (argument or base device), else the
  fitted effective bandwidth; ``bandwidth_efficiency`` = effective / peak (1.0 without a peak);
- ``decode_latency`` — the fixed per-step latency, e.g. ``"4.38 ms"``;
- ``compute`` and ``compute_efficiency`` — the peak and sustained / peak when a peak FLOP/s
  is given, else the sustained rate and 1.0 (so ``compute · compute_efficiency`` is always
  the sustained prefill rate, as ``compute`` alone was before);
- ``name``, ``ram``, ``os_reserve``, ``flash_read`` and any other field copied from a base device.

Latency and layer count. ``decode_latency`` is a per-device constant, applied unscaled to
every model. The Apple M-series table of llama.cpp discussion #4167 holds a single model
(LLaMA-7B, 32 layers) in three formats, so it cannot say whether the latency grows with the
number of layers (kernel launches per layer would make it do so): the fitted 3.6–8.1 ms are
0.11–0.25 ms per layer of that model, and a model with far fewer or more layers may see a
different latency. Calibrate with rows of more than one model to test it.

Several hardware descriptions among the rows (``gpu_info``/``cpu_info`` of json, jsonl
and csv output) are an error unless ``allow_mixed_hardware`` is set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kvplan.calibrate.readers import BenchRow
from kvplan.engine.calibration import (DecodeFit, PrefillFit, decode_bytes_per_token, fit_decode, fit_prefill,
                                       prefill_flops_per_row)
from kvplan.errors import ProfileError


@dataclass(frozen=True)
class ModelFacts:
    """What is known about one ``model_type`` beyond its llama-bench row.

    ``model_bytes`` [bytes] overrides the row's size (exact tensor bytes instead of a
    Markdown ``3.56 GiB``); ``embedding_bytes`` [bytes] is the untied input-embedding table
    (not streamed per token); ``kv_bytes_per_token`` [bytes/token] the cache per token of a
    row whose cache types ``kv_bytes_by_cache_type`` does not hold; ``kv_bytes_by_cache_type``
    maps a row's ``(type_k, type_v)`` (lower case, llama-bench's default ``f16`` for a type the
    row does not give) to its cache bytes per token, so rows of one model run at several cache
    types (``llama-bench -ctk f16,q8_0``) are each priced at their own; ``params`` [count]
    overrides ``model_n_params`` for prefill FLOPs; ``layers``, ``attention_heads``,
    ``head_dim`` give the attention term.
    """

    model_bytes: int | None = None
    embedding_bytes: int = 0
    kv_bytes_per_token: int = 0
    params: int | None = None
    layers: int = 0
    attention_heads: int = 0
    head_dim: int = 0
    kv_bytes_by_cache_type: Mapping[tuple[str, str], int] = field(default_factory=dict)

    def kv_bytes_of(self, row: BenchRow) -> int:
        """Cache bytes per token [bytes/token] at ``row``'s own ``type_k``/``type_v``."""
        return self.kv_bytes_by_cache_type.get(cache_types(row), self.kv_bytes_per_token)


# llama-bench's cache type when it does not print one (its Markdown table shows type_k/type_v only when not f16).
DEFAULT_CACHE_TYPE = "f16"


def cache_types(row: BenchRow) -> tuple[str, str]:
    """``(type_k, type_v)`` of a row, lower case, ``f16`` (llama-bench's default) where the row gives none."""
    return ((row.type_k or DEFAULT_CACHE_TYPE).strip().lower(), (row.type_v or DEFAULT_CACHE_TYPE).strip().lower())


def decode_work(rows: Iterable[BenchRow], models: Mapping[str, ModelFacts] | None = None) -> list[float]:
    """Bytes read per decode step [bytes] of each ``tg`` row, the cache at the row's own types
    (:func:`~kvplan.engine.calibration.decode_bytes_per_token`)."""
    models = models or {}
    work = []
    for r in rows:
        f = models.get(r.model_type, ModelFacts())
        work.append(decode_bytes_per_token(f.model_bytes or r.model_size_bytes, f.embedding_bytes, f.kv_bytes_of(r),
                                           r.n_depth, r.n_gen))
    return work


@dataclass(frozen=True)
class FitRow:
    """One row of the measured-vs-fitted table.

    ``kind`` is ``decode`` or ``prefill``; ``work`` is bytes per token [bytes] for decode
    and FLOPs [FLOP] for prefill; rates in tokens/s; ``error`` = (fitted − measured) / measured.
    """

    source: str
    line: int
    model_type: str
    test: str
    kind: str
    work: float
    measured_tokens_per_s: float
    fitted_tokens_per_s: float
    error: float


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate_device`: profile fields, their sources, the fits and the table."""

    device: dict
    sources: dict
    table: tuple[FitRow, ...]
    decode: DecodeFit | None
    prefill: PrefillFit | None


# Rows a source names one by one; beyond it a source summarises them (every row is in calibrate's printed table),
# so a profile fitted to 20,000 rows stays a small file (its YAML is read back, and kvplan reads at most 1 MB).
MAX_LISTED_ROWS = 50


def _where(rows: Iterable[BenchRow]) -> str:
    by_file: dict[str, list[int]] = {}
    for row in rows:
        by_file.setdefault(row.source, []).append(row.line)
    return "; ".join(f"{src} lines {_line_list(lines)}" for src, lines in by_file.items())


def _line_list(lines: list[int]) -> str:
    if len(lines) <= MAX_LISTED_ROWS:
        return ", ".join(str(n) for n in lines)
    return f"{lines[0]}, {lines[1]}, {lines[2]}, …, {lines[-1]} ({len(lines):,} rows)"


def _check_hardware(rows: list[BenchRow], allow_mixed: bool) -> list[str]:
    seen: dict[str, BenchRow] = {}
    for row in rows:
        if row.hardware is not None and row.hardware not in seen:
            seen[row.hardware] = row
    if len(seen) > 1 and not allow_mixed:
        raise ProfileError([f"{row.source}:{row.line}: gpu_info: rows from several devices ({hw!r}); "
                            "calibrate one device at a time or allow mixed hardware"
                            for hw, row in seen.items()])
    return list(seen)


def _base_peak_bandwidth(base: Mapping) -> float | None:
    value = base.get("memory_bandwidth")
    if value is None:
        return None
    from kvplan.units import parse_rate_bytes_per_s

    return float(parse_rate_bytes_per_s(value))


def _gb_s(value: float) -> str:
    return f"{value / 1e9:.1f} GB/s"


def _pct(value: float) -> str:
    return f"{value * 100:+.1f} %"


def calibrate_device(rows: Iterable[BenchRow], *, models: Mapping[str, ModelFacts] | None = None,
                     name: str | None = None, peak_bandwidth_bytes_per_s: float | None = None,
                     peak_flop_per_s: float | None = None, base_device: Mapping | None = None,
                     latency_s: float | None = None, latency_source: str | None = None,
                     allow_mixed_hardware: bool = False) -> Calibration:
    """Fit device speed fields to llama-bench rows of one device.

    Parameters
    ----------
    rows : BenchRow rows (``tg`` rows for decode, ``pp`` rows for prefill; ``pp+tg`` rows are skipped)
    models : mapping of ``model_type`` → :class:`ModelFacts` (exact bytes, embeddings, KV, shape)
    name : device name (else the base device's, else the hardware description)
    peak_bandwidth_bytes_per_s : peak memory bandwidth [bytes/s] (else the base device's ``memory_bandwidth``)
    peak_flop_per_s : peak compute [FLOP/s] for ``compute_efficiency`` (optional)
    base_device : device-profile fields to start from (``ram``, ``os_reserve``, ``flash_read`` …)
    latency_s : fix the decode latency [s] instead of fitting it (needed when the ``tg`` rows hold one distinct
        bytes per token, else 0)
    latency_source : where a fixed ``latency_s`` came from, in words for ``sources`` (default ``given``)
    allow_mixed_hardware : accept rows whose ``gpu_info``/``cpu_info`` differ

    Returns
    -------
    Calibration

    Raises
    ------
    ProfileError
        No ``tg`` or ``pp`` rows, rows from several devices, or rates no bandwidth fits.
    """
    rows = list(rows)
    models = dict(models or {})
    base = dict(base_device or {})
    if not rows:
        raise ProfileError(["<rows>:1: rows: no llama-bench rows to calibrate from"])
    hardware = _check_hardware(rows, allow_mixed_hardware)
    decode_rows = [r for r in rows if r.is_decode]
    prefill_rows = [r for r in rows if r.is_prefill]
    if not decode_rows and not prefill_rows:
        first = rows[0]
        raise ProfileError([f"{first.source}:{first.line}: test: no pure tg or pp rows (only pp+tg)"])

    peak_bw = peak_bandwidth_bytes_per_s or _base_peak_bandwidth(base)
    device = {k: v for k, v in base.items() if k != "sources"}
    device["name"] = name or base.get("name") or (hardware[0] if hardware else "calibrated-device")
    sources: dict[str, str] = {}
    table: list[FitRow] = []
    decode = prefill = None
    if decode_rows:
        decode = _calibrate_decode(decode_rows, models, latency_s, latency_source, peak_bw, device, sources, table)
        if peak_bandwidth_bytes_per_s or "memory_bandwidth" not in base:
            device["memory_bandwidth"] = _gb_s(peak_bw or decode.bandwidth_bytes_per_s)
            sources["memory_bandwidth"] = ("peak given to the calibration" if peak_bandwidth_bytes_per_s
                                           else "fitted effective bandwidth (no peak given)")
    if prefill_rows:
        prefill = _calibrate_prefill(prefill_rows, models, peak_flop_per_s, device, sources, table)
    return Calibration(device=device, sources=sources, table=tuple(table), decode=decode, prefill=prefill)


def _residuals(rows: list[BenchRow], errors) -> str:
    errors = list(errors)
    if len(rows) <= MAX_LISTED_ROWS:
        return ", ".join(f"{r.test} {r.model_type} {_pct(e)}" for r, e in zip(rows, errors))
    worst = max(range(len(rows)), key=lambda i: abs(errors[i]))
    median = sorted(abs(e) for e in errors)[len(errors) // 2]
    return (f"worst {rows[worst].test} {rows[worst].model_type} {_pct(errors[worst])} "
            f"({rows[worst].source} line {rows[worst].line}), median |error| {median * 100:.1f} % over "
            f"{len(rows):,} rows (each row in kvplan calibrate's table)")


def _size_field(row: BenchRow) -> str:
    """The name of the row's size where its file writes it: ``model_size`` (json, jsonl, csv) or ``size`` (md)."""
    return "model_size" if row.model_size_exact else "size"


def _check_work(rows, facts, work) -> None:
    """Each row's bytes per token is positive, else an error at that row (a size below its embeddings)."""
    problems = []
    for r, f, x in zip(rows, facts, work):
        if not (math.isfinite(x) and x > 0):
            size = f.model_bytes or r.model_size_bytes
            problems.append(f"{r.source}:{r.line}: {_size_field(r)}: bytes read per token come out at {x:,.0f} "
                            f"(model size {size:,} B − input embeddings {f.embedding_bytes:,} B + KV cache): "
                            "the size is below the model's embedding table; is it this model's file?")
    if problems:
        raise ProfileError(problems)


def _check_latency(rows, latency_s: float, latency_source: str) -> None:
    """A fixed latency is below every measured time per token: a step takes its bytes' time on top of it."""
    quickest = max(rows, key=lambda r: r.avg_ts)  # the shortest time per token
    if latency_s >= 1.0 / quickest.avg_ts:
        raise ProfileError([f"{quickest.source}:{quickest.line}: avg_ts: {quickest.avg_ts:g} tokens/s "
                            f"is {1e3 / quickest.avg_ts:.2f} ms per token, not above the fixed latency "
                            f"{latency_s * 1e3:.2f} ms ({latency_source}): no bandwidth fits"])


def _calibrate_decode(rows, models, latency_s, latency_source, peak_bw, device, sources, table) -> DecodeFit:
    facts = [models.get(r.model_type, ModelFacts()) for r in rows]
    work = decode_work(rows, models)
    _check_work(rows, facts, work)
    if latency_s is not None:
        _check_latency(rows, latency_s, latency_source or "given")
    try:
        fit = fit_decode(work, [r.avg_ts for r in rows], latency_s=latency_s)
    except ValueError as exc:
        raise ProfileError([f"{rows[0].source}:{rows[0].line}: avg_ts: {exc} (tg rows: {_where(rows)})"]) from exc
    for r, x, fitted, err in zip(rows, work, fit.fitted_tokens_per_s, fit.relative_errors):
        table.append(FitRow(r.source, r.line, r.model_type, r.test, "decode", x, r.avg_ts, fitted, err))
    eff_bw = fit.bandwidth_bytes_per_s
    device["bandwidth_efficiency"] = round(eff_bw / peak_bw, 3) if peak_bw else 1.0
    device["decode_latency"] = f"{fit.latency_s * 1e3:.2f} ms"
    if fit.latency_fitted:
        how = "fitted" + (", clamped to 0 from a negative fit" if fit.latency_clamped else "")
    elif latency_s is not None:
        how = latency_source or "given"
    else:  # fit_decode's rule: one distinct bytes per token fits one unknown, the bandwidth
        how = "0: the tg rows hold one distinct bytes per token, too few to fit a latency"
    inexact = sorted({r.model_type for r, f in zip(rows, facts) if not r.model_size_exact and f.model_bytes is None})
    note = f" Sizes of {', '.join(inexact)} are Markdown-rounded (±0.005 GiB)." if inexact else ""
    fit_text = (f"least squares of 1/avg_ts on bytes read per token over {fit.n_points} tg row(s) "
                f"({_where(rows)}): effective bandwidth {_gb_s(eff_bw)}, latency {fit.latency_s * 1e3:.2f} ms "
                f"({how}); fitted − measured: {_residuals(rows, fit.relative_errors)}.{note}")
    peak_text = (f"{_gb_s(eff_bw)} effective / {_gb_s(peak_bw)} peak; " if peak_bw
                 else "no peak bandwidth given: memory_bandwidth is the effective figure; ")
    sources["bandwidth_efficiency"] = peak_text + fit_text
    sources["decode_latency"] = fit_text + (" Applied unscaled to every model (layer scaling untested: "
                                            "see kvplan.calibrate.fit_device).")
    return fit


def _calibrate_prefill(rows, models, peak_flop_per_s, device, sources, table) -> PrefillFit:
    facts = [models.get(r.model_type, ModelFacts()) for r in rows]
    flops = [prefill_flops_per_row(r.n_prompt, r.n_depth, f.params or r.model_n_params, f.layers,
                                   f.attention_heads, f.head_dim) for r, f in zip(rows, facts)]
    try:
        fit = fit_prefill(flops, [r.n_prompt for r in rows], [r.avg_ts for r in rows],
                          peak_flop_per_s=peak_flop_per_s)
    except ValueError as exc:
        raise ProfileError([f"{rows[0].source}:{rows[0].line}: avg_ts: {exc}"]) from exc
    for r, f, fitted, err in zip(rows, flops, fit.fitted_tokens_per_s, fit.relative_errors):
        table.append(FitRow(r.source, r.line, r.model_type, r.test, "prefill", f, r.avg_ts, fitted, err))
    sustained = fit.compute_flop_per_s
    device["compute"] = f"{(peak_flop_per_s or sustained) / 1e12:.3g} TFLOP/s"
    device["compute_efficiency"] = round(fit.efficiency, 3) if peak_flop_per_s else 1.0
    no_shape = sorted({r.model_type for r, f in zip(rows, facts) if not f.layers})
    note = f" No layer shape for {', '.join(no_shape)}: attention FLOPs left out." if no_shape else ""
    peak_text = (f" Peak {peak_flop_per_s / 1e12:.3g} TFLOP/s given; compute_efficiency = sustained / peak."
                 if peak_flop_per_s else " No peak given: compute is the sustained rate, compute_efficiency 1.0.")
    sources["compute"] = (f"sustained {sustained / 1e12:.3g} TFLOP/s = least squares of prefill seconds on FLOPs "
                          f"(2·params + attention) over {len(rows)} pp row(s) ({_where(rows)}); fitted − measured: "
                          f"{_residuals(rows, fit.relative_errors)}.{peak_text}{note}")
    return fit
