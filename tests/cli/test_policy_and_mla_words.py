"""A cache type beside a policy that sets every tier's formats is refused, not reported as the cache's format; an
MLA pair of K/V types llama.cpp refuses names the options the user gave."""

from __future__ import annotations

from pathlib import Path

POLICY = Path(__file__).resolve().parents[2] / "examples" / "kv-policy.yaml"  # sets k, v and the history's k, v


def test_a_type_the_policy_overrides_everywhere_is_refused(run):
    for option, value, asked in (("--kv-type", "q8_0", "q8_0"), ("--kv-bits", "4", "4 bits (int4)")):
        result = run("check", "-d", "pixel8", "-m", "llama-3.1-8b", "-c", "128k", "--kv-policy", POLICY, option, value)
        assert result.exit_code == 2
        assert (f"{option} with --kv-policy: {asked}: the KV policy sets the K format of every tier itself"
                in result.stderr)
    # without it the policy prices the cache it describes: 1,317,036,032 B at 128k (docs/kv-policies.md)
    assert run("check", "-d", "pixel8", "-m", "llama-3.1-8b", "-c", "128k", "--kv-policy", POLICY).exit_code == 0


def test_an_mla_pair_names_the_options_given(run):
    args = ["check", "-d", "pixel9-pro", "-m", "deepseek-v2-lite", "-c", "8k", "--runtime", "llama.cpp"]
    bits = run(*args, "--k-bits", "8", "--v-bits", "4").stderr
    assert bits.startswith("kvplan: error: --k-bits, --v-bits: llama.cpp refuses different K (q8_0) and V (q4_0)")
    assert bits.rstrip().endswith("give one --kv-bits")
    types = run(*args, "--k-type", "q8_0", "--v-type", "q4_0").stderr
    assert types.startswith("kvplan: error: --k-type, --v-type:") and types.rstrip().endswith("give one --kv-type")
