"""``kvplan calibrate``: device speed figures fitted to llama-bench results.

:mod:`kvplan.calibrate.readers` reads llama-bench output (json, jsonl, csv, md) into
:class:`~kvplan.calibrate.readers.BenchRow` rows; :mod:`kvplan.calibrate.fit_device`
turns rows into device-profile fields with their provenance; :mod:`kvplan.calibrate.recognise`
finds the library model and device the rows name, :mod:`kvplan.calibrate.library` lists the built-in profiles
for it; :mod:`kvplan.calibrate.models` gives each benchmarked model's facts (KV bytes per token at the rows' cache
types, the embedding rows a step does not read, the layer shape); :mod:`kvplan.calibrate.profile` assembles the
written profile (the base device's fields, the fitted ones, their sources). The arithmetic lives in
:mod:`kvplan.engine.calibration`.
"""

from kvplan.calibrate.readers import BenchRow, parse_bench_text, read_bench

__all__ = ["BenchRow", "parse_bench_text", "read_bench"]
