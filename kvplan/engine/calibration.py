"""Fitting the speed model to measured llama-bench rates.

Notes
-----
Decode (``tg`` rows) is fitted to the two-term model of :mod:`kvplan.engine.decode`::

    time_per_token = bytes_per_token / bandwidth + latency        [s]
    bytes_per_token = model_bytes − input_embedding_bytes + kv_bytes_per_token · (n_depth + n_gen / 2)

by least squares of the measured ``1 / avg_ts`` against ``bytes_per_token``: the slope
is ``1 / bandwidth`` (the *effective* bandwidth, peak × efficiency) and the intercept the
latency. The cache term uses the mean number of cached tokens over a ``tg`` run: a run
of ``n_gen`` tokens after ``n_depth`` cached ones reads on average
``n_depth + n_gen / 2`` tokens of cache per step. With one point (or when the caller
fixes it) the latency is given and only the bandwidth is fitted. A fitted latency below
zero is not physical: the fit is then repeated with ``latency = 0`` and says so.

Prefill (``pp`` rows) is compute-bound: each row gives a sustained FLOP rate
``flops / seconds``, FLOPs from :func:`kvplan.engine.prefill.prefill_flops_at_depth`
(``2 · params`` per token plus the attention term). Several rows are combined by least
squares of seconds against FLOPs through the origin.

References
----------
llama.cpp discussion #4167, "Performance of llama.cpp on Apple Silicon M-series"
(https://github.com/ggml-org/llama.cpp/discussions/4167): LLaMA-7B F16/Q8_0/Q4_0 pp512 and
tg128 per chip, the data the two-term model is checked against
(``tests/data/calibration/``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from kvplan.engine.prefill import prefill_flops_at_depth


def mean_cached_tokens(n_depth, n_gen):
    """Mean number of cached tokens read per step over a ``tg`` run.

    Parameters
    ----------
    n_depth : numeric [tokens]
        Tokens in the cache before the run (llama-bench ``-d``).
    n_gen : numeric [tokens]
        Tokens generated (llama-bench ``-n``).

    Returns
    -------
    numeric [tokens]
        ``n_depth + n_gen / 2``.
    """
    return n_depth + n_gen / 2


def decode_bytes_per_token(model_bytes, embedding_bytes=0, kv_bytes_per_token=0, n_depth=0, n_gen=0):
    """Bytes read per decode step of a llama-bench ``tg`` row [bytes].

    Parameters
    ----------
    model_bytes : numeric [bytes] tensor bytes of the model file (llama-bench ``model_size``)
    embedding_bytes : numeric [bytes] the input-embedding table when it is not tied to the
        output layer (one row of it is read per token, not all of it); 0 when tied or unknown
    kv_bytes_per_token : numeric [bytes/token] KV cache bytes per cached token (0: cache ignored)
    n_depth, n_gen : numeric [tokens] the row's ``n_depth`` and ``n_gen``

    Returns
    -------
    numeric [bytes]
        ``model_bytes − embedding_bytes + kv_bytes_per_token · (n_depth + n_gen / 2)``.
    """
    return model_bytes - embedding_bytes + kv_bytes_per_token * mean_cached_tokens(n_depth, n_gen)


@dataclass(frozen=True)
class DecodeFit:
    """Result of :func:`fit_decode`.

    ``bandwidth_bytes_per_s`` is the effective bandwidth [bytes/s] (peak × efficiency),
    ``latency_s`` the per-step latency [s]. ``latency_fitted`` is False when the latency
    was given (one point, or fixed by the caller) and ``latency_clamped`` True when the
    unconstrained fit gave a negative latency and 0 was used instead. Per point:
    ``fitted_tokens_per_s``, ``residuals_s`` (measured − fitted seconds per token) and
    ``relative_errors`` ((fitted − measured) / measured tokens/s).
    """

    bandwidth_bytes_per_s: float
    latency_s: float
    latency_fitted: bool
    latency_clamped: bool
    bytes_per_token: tuple[float, ...]
    measured_tokens_per_s: tuple[float, ...]
    fitted_tokens_per_s: tuple[float, ...]
    residuals_s: tuple[float, ...]
    relative_errors: tuple[float, ...]

    @property
    def n_points(self) -> int:
        return len(self.bytes_per_token)

    def time_per_token_s(self, bytes_per_step):
        """Predicted step time of the fitted two-term model.

        Parameters
        ----------
        bytes_per_step : numeric [bytes]
            Bytes one decode step streams.

        Returns
        -------
        numeric [s]
            ``bytes_per_step / bandwidth_bytes_per_s + latency_s``.
        """
        return bytes_per_step / self.bandwidth_bytes_per_s + self.latency_s

    def tokens_per_s(self, bytes_per_step):
        """Predicted decode rate of the fitted two-term model.

        Parameters
        ----------
        bytes_per_step : numeric [bytes]
            Bytes one decode step streams.

        Returns
        -------
        numeric [tokens/s]
            ``1 / time_per_token_s(bytes_per_step)``.
        """
        return 1.0 / self.time_per_token_s(bytes_per_step)


def _check_points(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} byte counts but {len(ys)} rates")
    if not xs:
        raise ValueError("no points to fit")
    for x, y in zip(xs, ys):
        if not (math.isfinite(x) and x > 0):
            raise ValueError(f"bytes per token must be a positive number, got {x!r}")
        if not (math.isfinite(y) and y > 0):
            raise ValueError(f"tokens per second must be a positive number, got {y!r}")
    return xs, ys


def _slope_through(xs, ts, latency):
    """Least-squares ``1 / bandwidth`` for ``t − latency = x / bandwidth``."""
    return sum(x * (t - latency) for x, t in zip(xs, ts)) / sum(x * x for x in xs)


def fit_decode(bytes_per_token: Sequence[float], tokens_per_s: Sequence[float], *,
               latency_s: float | None = None) -> DecodeFit:
    """Fit effective bandwidth and per-step latency to decode measurements.

    Parameters
    ----------
    bytes_per_token : sequence [bytes] bytes read per step of each row (:func:`decode_bytes_per_token`)
    tokens_per_s : sequence [tokens/s] measured rates (llama-bench ``avg_ts`` of ``tg`` rows)
    latency_s : float [s] or None
        None fits the latency when the rows hold at least two different byte counts;
        a number fixes it (a single distinct byte count needs one; 0 if not given).

    Returns
    -------
    DecodeFit

    Raises
    ------
    ValueError
        No points, non-positive numbers, or rates that do not fall as bytes grow
        (a non-positive bandwidth).

    Notes
    -----
    Ordinary least squares of ``t = 1 / tokens_per_s`` on ``x = bytes``:
    ``slope = Σ(x − x̄)(t − t̄) / Σ(x − x̄)²``, ``latency = t̄ − slope · x̄``,
    ``bandwidth = 1 / slope``. Two points are fitted exactly.
    """
    xs, ys = _check_points(bytes_per_token, tokens_per_s)
    ts = [1.0 / y for y in ys]
    fitted = latency_s is None and len(set(xs)) >= 2
    clamped = False
    if fitted:
        n = len(xs)
        x_mean, t_mean = sum(xs) / n, sum(ts) / n
        sxx = sum((x - x_mean) ** 2 for x in xs)
        slope = sum((x - x_mean) * (t - t_mean) for x, t in zip(xs, ts)) / sxx
        latency = t_mean - slope * x_mean
        if latency < 0:
            latency, clamped = 0.0, True
            slope = _slope_through(xs, ts, latency)
    else:
        latency = 0.0 if latency_s is None else float(latency_s)
        if latency < 0:
            raise ValueError(f"latency must be ≥ 0 s, got {latency!r}")
        slope = _slope_through(xs, ts, latency)
    if not slope > 0:
        raise ValueError("measured time per token does not grow with bytes read: no positive bandwidth fits")
    predicted = [x * slope + latency for x in xs]
    return DecodeFit(
        bandwidth_bytes_per_s=1.0 / slope,
        latency_s=latency,
        latency_fitted=fitted,
        latency_clamped=clamped,
        bytes_per_token=tuple(xs),
        measured_tokens_per_s=tuple(ys),
        fitted_tokens_per_s=tuple(1.0 / p for p in predicted),
        residuals_s=tuple(t - p for t, p in zip(ts, predicted)),
        relative_errors=tuple((1.0 / p - y) / y for p, y in zip(predicted, ys)),
    )


def prefill_flops_per_row(n_prompt, n_depth, params, layers=0, attention_heads=0, head_dim=0):
    """FLOPs of a llama-bench ``pp`` row: :func:`~kvplan.engine.prefill.prefill_flops_at_depth`.

    Parameters
    ----------
    n_prompt : numeric [tokens]
        Prompt tokens of the row (llama-bench ``-p``).
    n_depth : numeric [tokens]
        Tokens already in the cache (llama-bench ``-d``).
    params : numeric [count]
        Parameter count.
    layers : int [count]
        Layers (0: no attention term).
    attention_heads : int [count]
        Query heads.
    head_dim : int [values]
        Width of one head.

    Returns
    -------
    numeric [FLOP]
        ``prefill_flops_at_depth(n_prompt, n_depth, params, layers, attention_heads, head_dim)``.
    """
    return prefill_flops_at_depth(n_prompt, n_depth, params, layers, attention_heads, head_dim)


@dataclass(frozen=True)
class PrefillFit:
    """Result of :func:`fit_prefill`.

    ``compute_flop_per_s`` is the sustained rate [FLOP/s] that best reproduces the
    measured prefill times; ``efficiency`` is it over the given peak (None without a
    peak). Per point: FLOPs, measured and fitted tokens/s, and relative errors
    ((fitted − measured) / measured).
    """

    compute_flop_per_s: float
    peak_flop_per_s: float | None
    flops: tuple[float, ...]
    prompt_tokens: tuple[float, ...]
    measured_tokens_per_s: tuple[float, ...]
    fitted_tokens_per_s: tuple[float, ...]
    relative_errors: tuple[float, ...]

    @property
    def efficiency(self) -> float | None:
        if self.peak_flop_per_s is None:
            return None
        return self.compute_flop_per_s / self.peak_flop_per_s

    def tokens_per_s(self, flops, prompt_tokens):
        """Predicted prefill rate of ``prompt_tokens`` tokens costing ``flops``.

        Parameters
        ----------
        flops : numeric [FLOP]
            Work of the prompt (:func:`prefill_flops_per_row`).
        prompt_tokens : numeric [tokens]
            Tokens in the prompt.

        Returns
        -------
        numeric [tokens/s]
            ``prompt_tokens · compute_flop_per_s / flops``.
        """
        return prompt_tokens * self.compute_flop_per_s / flops


def fit_prefill(flops: Sequence[float], prompt_tokens: Sequence[float], tokens_per_s: Sequence[float], *,
                peak_flop_per_s: float | None = None) -> PrefillFit:
    """Fit a sustained compute rate to prefill measurements.

    Parameters
    ----------
    flops : sequence [FLOP] FLOPs of each row (:func:`prefill_flops_per_row`)
    prompt_tokens : sequence [tokens] tokens prefilled in each row (``n_prompt``)
    tokens_per_s : sequence [tokens/s] measured rates (``avg_ts`` of ``pp`` rows)
    peak_flop_per_s : float [FLOP/s] or None, for ``efficiency``

    Returns
    -------
    PrefillFit

    Notes
    -----
    Least squares of ``seconds = prompt_tokens / tokens_per_s`` against ``flops``
    through the origin: ``compute = Σ F² / Σ F · t``. One row gives ``F / t``.
    """
    fs, ys = _check_points(flops, tokens_per_s)
    ns = [float(n) for n in prompt_tokens]
    if len(ns) != len(fs) or any(not n > 0 for n in ns):
        raise ValueError("prompt_tokens must give one positive count per row")
    if peak_flop_per_s is not None and not peak_flop_per_s > 0:
        raise ValueError(f"peak FLOP/s must be positive, got {peak_flop_per_s!r}")
    ts = [n / y for n, y in zip(ns, ys)]
    compute = sum(f * f for f in fs) / sum(f * t for f, t in zip(fs, ts))
    fitted = [n * compute / f for n, f in zip(ns, fs)]
    return PrefillFit(
        compute_flop_per_s=compute,
        peak_flop_per_s=peak_flop_per_s,
        flops=tuple(fs),
        prompt_tokens=tuple(ns),
        measured_tokens_per_s=tuple(ys),
        fitted_tokens_per_s=tuple(fitted),
        relative_errors=tuple((p - y) / y for p, y in zip(fitted, ys)),
    )
