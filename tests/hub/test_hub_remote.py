"""hf: references end to end: the real huggingface_hub against a Hub served on 127.0.0.1, and an offline cache.

Nothing of huggingface_hub is mocked: kvplan runs in a subprocess whose ``HF_ENDPOINT`` is the
fake Hub of conftest.py (``HF_HUB_CACHE``, ``KVPLAN_CACHE_DIR`` are fresh folders per test).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from hubfake import (
    LLAMA_CONFIG,
    TINY_LLAMA_CONFIG,
    LLAMA_DERIVED_PARAMS,
    TOKEN,
    FakeRepo,
    resolve_in_subprocess,
    safetensors_file,
    write_tiny_llama_gguf,
)

pytest.importorskip("huggingface_hub")

SUMMARY = {"parameters": {"BF16": 1_100_048_384}, "total": 1_100_048_384}


def config_repo(repo_id="TinyLlama/TinyLlama-1.1B-Chat-v1.0", **kw) -> FakeRepo:
    return FakeRepo(repo_id, {"config.json": json.dumps(LLAMA_CONFIG).encode(), "README.md": b"# model\n"}, **kw)


def test_config_end_to_end_with_the_hubs_safetensors_summary(hub, hub_env):
    repo = hub.add(config_repo(safetensors={"parameters": {"BF16": 1_100_048_000, "F32": 384}, "total": 1_100_048_384}))
    out = resolve_in_subprocess("hf:TinyLlama/TinyLlama-1.1B-Chat-v1.0", hub_env)
    assert out["ok"], out
    m = out["mapping"]
    assert m["name"] == "tinyllama-1.1b-chat-v1.0" and m["architecture"] == "llama"
    assert (m["layers"], m["attention_heads"], m["kv_heads"], m["head_dim"]) == (22, 32, 4, 64)
    assert m["params"] == 1_100_048_384
    assert "safetensors metadata" in m["sources"]["params"] and "BF16 1,100,048,000" in m["sources"]["params"]
    assert repo.commit in m["sources"]["config"] and hub.url in m["sources"]["config"]
    assert out["origin"] == f"hf:TinyLlama/TinyLlama-1.1B-Chat-v1.0@{repo.commit}/config.json"
    assert out["record"]["params"] == 1_100_048_384 and out["from_cache"] is False
    # model_info once, config.json HEAD (by the revision asked, so the ref is recorded) + GET, nothing else
    assert [(r.method, r.path.split("/resolve/")[-1]) for r in hub.log] == [
        ("GET", "/api/models/TinyLlama/TinyLlama-1.1B-Chat-v1.0"), ("HEAD", "main/config.json"),
        ("GET", "main/config.json")]
    # the file is in the standard Hugging Face cache layout, refs/main included
    root = Path(hub_env["HF_HUB_CACHE"]) / "models--TinyLlama--TinyLlama-1.1B-Chat-v1.0"
    assert json.loads((root / "snapshots" / repo.commit / "config.json").read_text()) == LLAMA_CONFIG
    assert (root / "refs" / "main").read_text() == repo.commit


def test_safetensors_metadata_param_count_from_the_file_headers(hub, hub_env):
    tensors = {"model.embed_tokens.weight": ("BF16", [1000, 64]), "lm_head.weight": ("BF16", [1000, 64]),
               "model.norm.weight": ("F32", [64])}
    hub.add(FakeRepo("org/tiny", {"config.json": json.dumps(TINY_LLAMA_CONFIG).encode(),
                                  "model.safetensors": safetensors_file(tensors)}))
    out = resolve_in_subprocess("hf:org/tiny", hub_env)
    assert out["ok"], out
    assert out["mapping"]["params"] == 2 * 64_000 + 64
    assert "get_safetensors_metadata" in out["mapping"]["sources"]["params"]
    assert "BF16 128,000, F32 64" in out["mapping"]["sources"]["params"]
    # only the header of model.safetensors was fetched (the Hub library asks for its first 100,000 bytes)
    assert hub.bytes_served("model.safetensors") <= 100_001
    assert any("params 128,064 from the safetensors metadata" in n for n in out["notes"])


def test_sharded_safetensors_through_the_index(hub, hub_env):
    a = safetensors_file({"model.embed_tokens.weight": ("BF16", [100, 8])})
    b = safetensors_file({"lm_head.weight": ("BF16", [100, 8]), "model.norm.weight": ("BF16", [8])})
    index = {"metadata": {"total_size": 3216}, "weight_map": {
        "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
        "lm_head.weight": "model-00002-of-00002.safetensors", "model.norm.weight": "model-00002-of-00002.safetensors"}}
    hub.add(FakeRepo("org/sharded", {"config.json": json.dumps(TINY_LLAMA_CONFIG).encode(),
                                     "model.safetensors.index.json": json.dumps(index).encode(),
                                     "model-00001-of-00002.safetensors": a, "model-00002-of-00002.safetensors": b}))
    out = resolve_in_subprocess("hf:org/sharded", hub_env)
    assert out["ok"], out
    assert out["mapping"]["params"] == 800 + 800 + 8
    assert "headers of 2 files" in out["mapping"]["sources"]["params"]


def test_no_safetensors_means_params_derived_from_the_config(hub, hub_env):
    hub.add(config_repo("org/plain"))
    out = resolve_in_subprocess("hf:org/plain", hub_env)
    assert out["ok"] and out["mapping"]["params"] == LLAMA_DERIVED_PARAMS
    assert "no safetensors metadata" in " ".join(out["notes"])


def test_gated_repo_without_a_token_says_set_hf_token(hub, hub_env):
    hub.add(config_repo("meta-llama/Llama-3.2-1B", gated=True, safetensors=SUMMARY))
    out = resolve_in_subprocess("hf:meta-llama/Llama-3.2-1B", hub_env)
    assert not out["ok"] and out["error"] == "NotFoundError"
    assert out["message"].startswith("hf:meta-llama/Llama-3.2-1B: gated repository")
    assert "HF_TOKEN" in out["message"] and "\n" not in out["message"]
    gated = [r for r in hub.log if "/resolve/" in r.path]
    assert gated and all(r.status == 401 and not r.auth for r in gated)
    # with the token, the same reference resolves (huggingface_hub sends HF_TOKEN as a bearer token)
    ok = resolve_in_subprocess("hf:meta-llama/Llama-3.2-1B", hub_env, HF_TOKEN=TOKEN)
    assert ok["ok"], ok
    assert any(r.auth and r.status == 200 for r in hub.log if "/resolve/" in r.path)


def test_missing_repo_is_a_clear_error(hub, hub_env):
    out = resolve_in_subprocess("hf:nobody/no-such-model", hub_env)
    assert not out["ok"] and out["error"] == "NotFoundError"
    assert out["message"] == ("hf:nobody/no-such-model: repository not found — check the name; if it is private, "
                              "set HF_TOKEN to a token that can read it")


def test_missing_revision_and_missing_config(hub, hub_env):
    hub.add(config_repo("org/m"))
    out = resolve_in_subprocess("hf:org/m@no-such-branch", hub_env)
    assert not out["ok"] and "no revision 'no-such-branch'" in out["message"]
    hub.add(FakeRepo("org/empty", {"README.md": b"hi"}))
    out = resolve_in_subprocess("hf:org/empty", hub_env)
    assert not out["ok"] and "neither config.json nor .gguf files" in out["message"]


def test_offline_with_an_empty_cache(hub, hub_env):
    hub.add(config_repo("org/m"))
    out = resolve_in_subprocess("hf:org/m", hub_env, HF_HUB_OFFLINE="1")
    assert not out["ok"] and out["error"] == "HubAccessError"
    assert out["message"] == ("hf:org/m: not in the local Hugging Face cache and HF_HUB_OFFLINE is set — run once "
                              "online (or unset HF_HUB_OFFLINE)")
    assert hub.log == []  # offline means offline
    gguf_out = resolve_in_subprocess("hf:org/m:Q4_K_M", hub_env, HF_HUB_OFFLINE="1")
    assert not gguf_out["ok"] and "run once online" in gguf_out["message"]


def test_unreachable_endpoint(hub_env):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = resolve_in_subprocess("hf:org/m", hub_env, HF_ENDPOINT=f"http://127.0.0.1:{port}")
    assert not out["ok"] and out["error"] == "HubAccessError"
    assert f"cannot reach http://127.0.0.1:{port}" in out["message"] and "HF_HUB_OFFLINE=1" in out["message"]


def _shut_down(hub) -> None:
    hub.server.shutdown()
    hub.server.server_close()


def _figures(mapping: dict) -> dict:
    """The profile without its prose: an offline build says 'offline' in sources and notes, nothing else differs."""
    return {k: v for k, v in mapping.items() if k != "sources"}


@pytest.mark.parametrize("revision", [None, "v1.0"])
def test_online_without_kvplans_cache_then_offline_from_the_hugging_face_cache(hub, hub_env, revision):
    """KVPLAN_NO_CACHE=1 online, then HF_HUB_OFFLINE=1 with the Hub gone: the standard cache alone answers."""
    # a sharded bfloat16 checkpoint, with the Hub's safetensors summary as the real Hub sends it:
    # 2 shards of 100 × 8 and 100 × 8 + 8 BF16 values = 1,608 parameters = index total_size 3,216 B / 2 B
    a = safetensors_file({"model.embed_tokens.weight": ("BF16", [100, 8])})
    b = safetensors_file({"lm_head.weight": ("BF16", [100, 8]), "model.norm.weight": ("BF16", [8])})
    index = {"metadata": {"total_size": 3216}, "weight_map": {
        "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
        "lm_head.weight": "model-00002-of-00002.safetensors", "model.norm.weight": "model-00002-of-00002.safetensors"}}
    repo = hub.add(FakeRepo("org/sharded-bf16", {
        "config.json": json.dumps(TINY_LLAMA_CONFIG).encode(), "model.safetensors.index.json": json.dumps(index).encode(),
        "model-00001-of-00002.safetensors": a, "model-00002-of-00002.safetensors": b},
        safetensors={"parameters": {"BF16": 1608}, "total": 1608}, tags=("v1.0",)))
    ref = "hf:org/sharded-bf16" + (f"@{revision}" if revision else "")
    env = {**hub_env, "KVPLAN_NO_CACHE": "1"}
    online = resolve_in_subprocess(ref, env)
    assert online["ok"], online
    assert online["mapping"]["params"] == 1608 and not online["from_cache"]
    root = Path(hub_env["HF_HUB_CACHE"]) / "models--org--sharded-bf16"
    assert (root / "refs" / (revision or "main")).read_text() == repo.commit
    assert (root / "snapshots" / repo.commit / "model.safetensors.index.json").is_file()
    assert not any(Path(hub_env["KVPLAN_CACHE_DIR"]).glob("**/*.json"))  # kvplan's cache stayed off
    assert hub.bytes_served("model-00001-of-00002.safetensors") == 0  # the summary sufficed: no shard read

    _shut_down(hub)
    served = len(hub.log)
    offline = resolve_in_subprocess(ref, env, HF_HUB_OFFLINE="1")
    assert offline["ok"], offline
    assert _figures(offline["mapping"]) == _figures(online["mapping"])
    assert {k: v for k, v in offline["record"].items() if k != "sources"} == \
        {k: v for k, v in online["record"].items() if k != "sources"}
    assert offline["origin"] == online["origin"] == f"hf:org/sharded-bf16@{repo.commit}/config.json"
    assert "total_size 3,216 bytes / 2 bytes per BF16 value = 1,608" in offline["mapping"]["sources"]["params"]
    assert len(hub.log) == served


def test_online_without_kvplans_cache_then_offline_config_only(hub, hub_env):
    """No safetensors at all: the offline profile is the online one, params derived from the config both times."""
    hub.add(config_repo("org/plain"))
    env = {**hub_env, "KVPLAN_NO_CACHE": "1"}
    online = resolve_in_subprocess("hf:org/plain", env)
    assert online["ok"] and online["mapping"]["params"] == LLAMA_DERIVED_PARAMS, online
    _shut_down(hub)
    offline = resolve_in_subprocess("hf:org/plain", env, HF_HUB_OFFLINE="1")
    assert offline["ok"], offline
    assert _figures(offline["mapping"]) == _figures(online["mapping"])


def test_offline_from_a_prepared_hugging_face_cache(tmp_path, hub_env):
    """The cache layout huggingface_hub documents: blobs/<etag>, snapshots/<commit>/<file> → blob, refs/main."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    root = tmp_path / "prepared-cache" / "models--org--cached-model"
    config = json.dumps(LLAMA_CONFIG).encode()
    index = json.dumps({"metadata": {"total_size": 2 * LLAMA_DERIVED_PARAMS}, "weight_map": {}}).encode()
    (root / "blobs").mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(commit)
    snap = root / "snapshots" / commit
    snap.mkdir(parents=True)
    for name, data, etag in (("config.json", config, "a" * 40), ("model.safetensors.index.json", index, "b" * 40)):
        (root / "blobs" / etag).write_bytes(data)
        (snap / name).symlink_to(f"../../blobs/{etag}")
    env = {**hub_env, "HF_HUB_CACHE": str(tmp_path / "prepared-cache"), "HF_HUB_OFFLINE": "1"}
    out = resolve_in_subprocess("hf:org/cached-model", env)
    assert out["ok"], out
    assert out["mapping"]["params"] == LLAMA_DERIVED_PARAMS  # index total_size / 2 bytes per bfloat16
    assert "model.safetensors.index.json (cached)" in out["mapping"]["sources"]["params"]
    assert out["origin"] == f"hf:org/cached-model@{commit}/config.json"
    again = resolve_in_subprocess("hf:org/cached-model", env)
    assert again["from_cache"] and not again["hub_imported"] and again["mapping"] == out["mapping"]


# --- GGUF headers by range ------------------------------------------------------------------------------

@pytest.fixture
def gguf_repo(hub, tmp_path):
    path = write_tiny_llama_gguf(tmp_path / "Tiny-Llama-Q8_0.gguf", vocab=60000, hidden=256)
    other = write_tiny_llama_gguf(tmp_path / "Tiny-Llama-F16.gguf", vocab=100, hidden=64)
    return hub.add(FakeRepo("someone/Tiny-Llama-GGUF", {"Tiny-Llama-Q8_0.gguf": path, "Tiny-Llama-F16.gguf": other,
                                                      "README.md": b"# gguf\n"})), path


def test_gguf_header_by_range_never_reads_the_weights(hub, hub_env, gguf_repo):
    from kvplan.hub.gguf_remote import INITIAL_BLOCK, read_local_header

    repo, path = gguf_repo
    header = read_local_header(path)
    size = path.stat().st_size
    assert header.data_offset > INITIAL_BLOCK  # the header needs a second, larger request
    assert size > header.data_offset + 4 * INITIAL_BLOCK  # and the weights are much larger than one block

    out = resolve_in_subprocess("hf:someone/Tiny-Llama-GGUF:q8_0", hub_env)
    assert out["ok"], out
    m = out["mapping"]
    assert m["name"] == "tiny-llama-q8_0" and m["architecture"] == "llama"
    assert (m["layers"], m["attention_heads"], m["kv_heads"], m["head_dim"], m["vocab_size"]) == (4, 8, 2, 32, 60000)
    assert out["record"]["weights"] == sum(t.nbytes for t in header.tensors)  # base units
    assert out["origin"] == f"hf:someone/Tiny-Llama-GGUF@{repo.commit}/Tiny-Llama-Q8_0.gguf"

    served = hub.bytes_served("Tiny-Llama-Q8_0.gguf")
    ranges = [(r.start, r.end) for r in hub.log if r.path.endswith("Tiny-Llama-Q8_0.gguf") and r.method == "GET"]
    assert all(r.status == 206 for r in hub.log if r.path.endswith(".gguf") and r.method == "GET")
    assert ranges[0] == (0, INITIAL_BLOCK) and len(ranges) == 2  # 2 MiB, then the next 4 MiB
    last_block = ranges[-1][1] - ranges[-1][0]
    assert served < header.header_bytes + last_block  # < header size + one block
    assert served < size / 2 and hub.max_offset_served("Tiny-Llama-Q8_0.gguf") < size
    assert not hub.requests("GET") or all("/resolve/" not in r.path or r.path.endswith(".gguf")
                                          for r in hub.requests("GET"))
    assert hub.bytes_served("Tiny-Llama-F16.gguf") == 0
    assert "the tensor data was not downloaded" in m["sources"]["config"]


def test_second_call_offline_comes_from_kvplans_cache(hub, hub_env, gguf_repo):
    first = resolve_in_subprocess("hf:someone/Tiny-Llama-GGUF:Q8_0", hub_env)
    assert first["ok"] and not first["from_cache"]
    requests_before = len(hub.log)
    second = resolve_in_subprocess("hf:someone/Tiny-Llama-GGUF:Q8_0", hub_env, HF_HUB_OFFLINE="1")
    assert second["ok"] and second["from_cache"] and not second["hub_imported"]
    assert second["mapping"] == first["mapping"] and second["record"] == first["record"]
    assert len(hub.log) == requests_before  # no request at all
    assert second["seconds"] < 1.0
    # online again: one model_info request finds the same commit, and the header is not read again
    third = resolve_in_subprocess("hf:someone/Tiny-Llama-GGUF:Q8_0", hub_env)
    assert third["from_cache"]
    assert [r.path for r in hub.log[requests_before:]] == ["/api/models/someone/Tiny-Llama-GGUF"]


def test_pinned_commit_is_answered_from_the_cache_without_a_request(hub, hub_env):
    repo = hub.add(config_repo("org/pinned", safetensors=SUMMARY))
    first = resolve_in_subprocess(f"hf:org/pinned@{repo.commit}", hub_env)
    assert first["ok"] and first["mapping"]["params"] == SUMMARY["total"]
    n = len(hub.log)
    again = resolve_in_subprocess(f"hf:org/pinned@{repo.commit}", hub_env)
    assert again["from_cache"] and not again["hub_imported"] and len(hub.log) == n


def test_gguf_errors(hub, hub_env, gguf_repo):
    out = resolve_in_subprocess("hf:someone/Tiny-Llama-GGUF:Q4_K_M", hub_env)
    assert not out["ok"] and "no GGUF file matches 'Q4_K_M'" in out["message"]
    assert "Tiny-Llama-F16.gguf, Tiny-Llama-Q8_0.gguf" in out["message"]
    out = resolve_in_subprocess("hf:someone/Tiny-Llama-GGUF", hub_env)  # no config.json, two GGUF models
    assert not out["ok"] and "2 GGUF models; name one with :QUANT" in out["message"]


def test_split_gguf_reads_every_shard_header(hub, hub_env, tmp_path):
    write_tiny_llama_gguf(tmp_path / "Split-Q8_0.gguf", vocab=300, hidden=64, split_max_tensors=20)
    shards = sorted(tmp_path.glob("Split-Q8_0-*-of-*.gguf"))
    assert len(shards) == 2
    hub.add(FakeRepo("org/split-GGUF", {f"Q8_0/{p.name}": p for p in shards}))
    out = resolve_in_subprocess("hf:org/split-GGUF:Q8_0", hub_env)
    assert out["ok"], out
    from kvplan.hub.gguf_remote import read_local_header

    headers = [read_local_header(p) for p in shards]
    assert out["record"]["weights"] == sum(t.nbytes for h in headers for t in h.tensors)
    assert any("header of every shard was read" in n for n in out["notes"])
    for p, h in zip(shards, headers):
        assert hub.bytes_served(p.name) <= p.stat().st_size  # tiny files: one request each


def test_resolved_profile_validates_as_a_kvplan_model(hub, hub_env, tmp_path):
    hub.add(config_repo("org/m", safetensors=SUMMARY))
    out = resolve_in_subprocess("hf:org/m", hub_env)
    from kvplan.profiles.catalog import load_profile
    from kvplan.profiles.records import ModelRecord

    yaml_path = tmp_path / "m.yaml"
    import yaml

    yaml_path.write_text(yaml.safe_dump(out["mapping"], sort_keys=False))
    model = load_profile("model", yaml_path)
    assert model.params == SUMMARY["total"] and model.layers == 22
    assert ModelRecord(out["record"]) == model
