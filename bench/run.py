"""kvplan benchmarks: cold start against the framework floor and a peer, batch gating, sweep throughput.

Every comparison runs its contenders alternately, several repetitions each, and reports medians and
ratios measured in the same run. Nothing here is a test: it prints figures for docs/performance.md.

    python bench/run.py [--reps 15] [--json results.json]

It needs the project installed in the current interpreter (the README's test command does that) and
installs the peer, sparkfit, into its own venv under bench/.peer-venv (PyPI is the only network use).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
KVPLAN = [PY, "-m", "kvplan"]
PEER_VENV = HERE / ".peer-venv"


def run_timed(argv: list[str], env: dict | None = None) -> float:
    """Wall time of one run; a run that fails is an error, never a fast time."""
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1 is a verdict (does not fit / gate failed), not a failure
        raise SystemExit(f"benchmark contender failed (exit {done.returncode}): {' '.join(argv)}\n{done.stderr}")
    return elapsed


def alternate(contenders: dict[str, tuple[list[str], dict | None]], reps: int) -> dict[str, list[float]]:
    """Wall times of each contender, runs interleaved so drift hits all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for name, (argv, env) in contenders.items():  # one warm-up each (page cache, .pyc)
        run_timed(argv, env)
    for _ in range(reps):
        for name, (argv, env) in contenders.items():
            times[name].append(run_timed(argv, env))
    return times


def paired_ratio(times: dict[str, list[float]], a: str, b: str) -> dict:
    """Median and quartiles of a/b over the repetitions (each pair ran back to back)."""
    ratios = sorted(x / y for x, y in zip(times[a], times[b]))
    q = statistics.quantiles(ratios, n=4)
    return {"median": statistics.median(ratios), "q1": q[0], "q3": q[2]}


def ensure_peer() -> Path | None:
    exe = PEER_VENV / "bin" / "sparkfit"
    if not exe.exists():
        subprocess.run([PY, "-m", "venv", str(PEER_VENV)], check=True)
        done = subprocess.run([str(PEER_VENV / "bin" / "pip"), "install", "-q", "sparkfit"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"could not install sparkfit: {done.stderr.strip()[-300:]}", file=sys.stderr)
            return None
    return exe


def gate_file(n: int, folder: Path) -> Path:
    devices = ["pixel8", "iphone-15-pro", "galaxy-s24", "oneplus-12", "macbook-air-m2-16gb"]
    models = ["llama-2-7b", "qwen3-0.6b", "llama-3.2-1b", "gemma-3-1b"]
    lines = ["defaults:", "  must_fit: false", "configurations:"]
    for i in range(n):
        lines += [f"  - name: config-{i}", f"    device: {devices[i % len(devices)]}",
                  f"    model: {models[i % len(models)]}", f"    ctx: {1024 * (1 + i % 16)}"]
    path = folder / f"gate-{n}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def compile_like_pip() -> None:
    """Write kvplan's bytecode, as ``pip install`` does.

    Start time is measured for kvplan as installed. Run from a checkout with
    PYTHONDONTWRITEBYTECODE set (as on the machines here), every start would otherwise compile
    every module from source, which an installed kvplan never does.
    """
    import compileall

    import kvplan

    compileall.compile_dir(str(Path(kvplan.__file__).parent), quiet=1)


def cold_start(reps: int) -> dict:
    compile_like_pip()
    env_plain = {**os.environ, "NO_COLOR": "1"}
    env_rich = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "120"}
    check = KVPLAN + ["check", "--device", "pixel8", "--model", "7b", "--ctx", "8192"]
    floor = [PY, str(HERE / "minimal_typer_app.py")]
    contenders = {
        "python -c pass": ([PY, "-c", "pass"], env_plain),
        "minimal typer app, JSON": (floor, env_plain),
        "kvplan check --format json": (check + ["--format", "json"], env_plain),
        "minimal typer app, Rich table": (floor + ["--table"], env_rich),
        "kvplan check (Rich table)": (check, env_rich),
    }
    peer = ensure_peer()
    if peer:
        contenders["sparkfit plan --json"] = ([str(peer), "plan", "-m", "llama3.1-8b", "-c", "8192", "--json"],
                                              env_plain)
    with tempfile.TemporaryDirectory() as tmp:
        gate = gate_file(100, Path(tmp))
        contenders["kvplan gate (100 configurations)"] = (KVPLAN + ["gate", str(gate), "--format", "json"],
                                                          env_plain)
        times = alternate(contenders, reps)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratios = {
        "check json / typer json (target ≤ 1.15)": paired_ratio(times, "kvplan check --format json",
                                                               "minimal typer app, JSON"),
        "check table / typer table (target ≤ 1.15)": paired_ratio(times, "kvplan check (Rich table)",
                                                                 "minimal typer app, Rich table"),
        "gate ×100 / one check json (target ≤ 1.5)": paired_ratio(times, "kvplan gate (100 configurations)",
                                                                 "kvplan check --format json"),
    }
    if peer:
        ratios["check json / sparkfit json"] = paired_ratio(times, "kvplan check --format json",
                                                            "sparkfit plan --json")
    return {"medians_s": medians, "ratios": ratios}


def sweep_throughput(reps: int) -> dict:
    import numpy as np

    from kvplan import engine
    from kvplan.profiles.catalog import Catalog
    from kvplan.caches.ideal import cache_layout
    from kvplan.plan import weights_of

    cat = Catalog()
    device, model = cat.device("pixel8").profile, cat.model("gemma-3-1b").profile  # windows make it non-trivial
    layout = cache_layout(model)
    weights, weights_read, _ = weights_of(model, None)
    budget = engine.budget_bytes(device.ram, device.os_reserve)
    n = 1_000_000
    ctx = np.arange(1, n + 1, dtype=np.int64)

    def vectorized():
        kv = engine.kv_bytes(ctx, layout.global_bytes_per_token, layout.windows)
        total = engine.total_bytes(weights, kv, 1, 0, device.runtime_overhead)
        head = engine.headroom_bytes(budget, total)
        code = engine.verdict_code(head, budget)
        rate = engine.decode_tokens_per_s(device.memory_bandwidth, weights_read + kv, device.bandwidth_efficiency)
        return code, rate

    def python_loop(points):
        out = []
        for c in range(1, points + 1):
            kv = engine.kv_bytes(c, layout.global_bytes_per_token, layout.windows)
            total = engine.total_bytes(weights, kv, 1, 0, device.runtime_overhead)
            head = engine.headroom_bytes(budget, total)
            out.append((engine.verdict_code(head, budget),
                        engine.decode_tokens_per_s(device.memory_bandwidth, weights_read + kv,
                                                   device.bandwidth_efficiency)))
        return out

    vec_times, loop_times = [], []
    loop_points = 100_000
    for _ in range(max(3, reps // 3)):
        t = time.perf_counter()
        vectorized()
        vec_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        python_loop(loop_points)
        loop_times.append(time.perf_counter() - t)
    vec_rate = n / statistics.median(vec_times)
    loop_rate = loop_points / statistics.median(loop_times)

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep.csv"
        argv = KVPLAN + ["sweep", "--device", "pixel8", "--model", "7b", "--ctx", "1..1000000", "--format", "csv",
                         "-o", str(out)]
        sweep = alternate({"kvplan sweep 10^6 points to CSV": (argv, dict(os.environ))}, max(3, reps // 3))
        sweep = {name: statistics.median(values) for name, values in sweep.items()}
        rows = sum(1 for _ in out.open()) - 1 if out.exists() else 0
    return {
        "engine_evaluations_per_s": vec_rate,
        "python_loop_evaluations_per_s": loop_rate,
        "ratios": {"vectorized / python loop (target ≥ 50)": vec_rate / loop_rate},
        "sweep_cli_median_s": sweep["kvplan sweep 10^6 points to CSV"],
        "sweep_cli_rows": rows,
    }


def machine() -> dict:
    info = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d")}
    try:
        import numpy

        info["numpy"] = numpy.__version__
    except ImportError:  # pragma: no cover
        pass
    try:
        with open("/proc/cpuinfo") as handle:
            info["cpu"] = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15, help="repetitions per contender (default 15)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()
    results = {"machine": machine(), "cold_start": cold_start(args.reps), "sweep": sweep_throughput(args.reps)}
    print(f"machine: {results['machine']}")
    print("\ncold start (median wall time, s)")
    for name, value in results["cold_start"]["medians_s"].items():
        print(f"  {name:<40} {value:8.3f}")
    for name, r in results["cold_start"]["ratios"].items():
        print(f"  {name:<48} {r['median']:5.2f}×  (quartiles {r['q1']:.2f}–{r['q3']:.2f})")
    s = results["sweep"]
    print("\nsweep throughput")
    print(f"  engine, vectorized (10^6 points)        {s['engine_evaluations_per_s']:>14,.0f} evaluations/s")
    print(f"  engine, pure-Python loop (10^5 points)  {s['python_loop_evaluations_per_s']:>14,.0f} evaluations/s")
    for name, value in s["ratios"].items():
        print(f"  {name:<48} {value:6.0f}×")
    print(f"  kvplan sweep, 10^6 points to CSV        {s['sweep_cli_median_s']:8.2f} s ({s['sweep_cli_rows']:,} rows)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
