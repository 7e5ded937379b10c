"""kvplan check --images: the vision encoder's parts and the image tokens (figures: tests/unit/test_encoder.py)."""

from __future__ import annotations


def test_gemma3_images_on_pixel8(run_json, run):
    code, doc = run_json("check", "--device", "pixel8", "--model", "gemma-3-4b", "--images", "2", "--ctx", "8k")
    assert code == 0
    parts = doc["memory"]["parts"]
    # measured on llama.cpp build 11434 (tests/data/llamacpp/mmproj/measured.json)
    assert parts["encoder_weights"]["bytes"] == 851_226_048
    assert parts["encoder_compute"]["bytes"] == 127_139_840
    # 2 images × 256 tokens = 512 tokens; at 8,192 tokens the 29 local layers hold their 1,024-token window
    # already, so only the 5 global layers grow: 5 × 2 (K,V) × 4 heads × 256 × 2 B = 20,480 B/token × 512
    assert parts["image_kv"]["image_tokens"] == 512
    assert parts["image_kv"]["bytes"] == 512 * 20_480
    assert parts["encoder_weights"]["images"] == 2
    assert doc["memory"]["parts_bytes"] == 851_226_048 + 127_139_840 + 10_485_760
    text = run("check", "--device", "pixel8", "--model", "gemma-3-4b", "--images", "2", "--ctx", "8k").stdout
    assert "vision encoder (gemma3): weights (f16)" in text
    assert "compute buffer (one 896x896 image, flash attention)" in text
    assert "2 × 256 = 512 added to the context" in text


def test_images_need_an_encoder(run):
    r = run("check", "--device", "pixel8", "--model", "7b", "--images", "1", "--ctx", "4k")
    assert r.exit_code == 2
    assert "has no vision encoder" in r.stderr
    assert "--images" in r.stderr


def test_image_size_is_checked(run):
    r = run("check", "--device", "pixel8", "--model", "gemma-3-4b", "--images", "1", "--image-size", "896",
            "--ctx", "4k")
    assert r.exit_code == 2
    assert "--image-size" in r.stderr and "WIDTHxHEIGHT" in r.stderr


def test_without_images_nothing_changes(run_json):
    _, doc = run_json("check", "--device", "pixel8", "--model", "gemma-3-4b", "--ctx", "8k")
    assert "parts" not in doc["memory"]


def test_fit_suggests_fewer_images(run):
    # 500 images × 256 tokens = 128,000 tokens more on pixel8's 6 GB budget: over; fit offers the most images that
    # still fit, with the command line that applies it
    text = run("fit", "--device", "pixel8", "--model", "gemma-3-4b", "--images", "500", "--ctx", "32k").stdout
    assert "OVER" in text
    assert "436 images" in text
    assert "kvplan check --device pixel8 --model gemma-3-4b --ctx 32768 --images 436" in text
    # 437 images would not fit: the suggestion is the largest count
    code_436 = run("check", "--device", "pixel8", "--model", "gemma-3-4b", "--images", "436", "--ctx", "32k").exit_code
    code_437 = run("check", "--device", "pixel8", "--model", "gemma-3-4b", "--images", "437", "--ctx", "32k").exit_code
    assert code_436 == 0 and code_437 == 1


def test_sweep_and_gate_take_images(run, tmp_path):
    text = run("sweep", "-d", "pixel8", "-m", "gemma-3-4b", "--ctx", "8k", "--images", "2").stdout
    # parts: 851,226,048 + 127,139,840 + 10,485,760 = 988,851,648 B
    assert "988.85 MB" in text
    gate = tmp_path / "gate.yaml"
    gate.write_text("configurations:\n  - name: phone-vision\n    device: pixel8\n    model: gemma-3-4b\n"
                    "    ctx: 8k\n    images: 2\n    image_size: 1280x720\n")
    r = run("gate", str(gate))
    assert r.exit_code == 0 and "988.85 MB" in r.stdout


def test_llama_cpp_without_flash_attention(run_json):
    # -fa off: measured 1,186,988,032 B for Gemma 3's encoder (tests/data/llamacpp/mmproj/measured.json)
    code, doc = run_json("check", "-d", "pixel8", "-m", "gemma-3-4b", "--images", "1", "-c", "4k",
                         "--runtime", "llama.cpp", "--flash-attn", "off")
    part = doc["memory"]["parts"]["encoder_compute"]
    assert part["bytes"] == 1_186_988_032 and part["flash_attn"] is False


def test_qwen25vl_tokens_by_processor_and_under_llama_cpp(run_json):
    # 4000×3000: the processor's smart_resize (max 12,845,056 px) keeps 2996×4004 → 214·286/4 = 15,301 tokens;
    # llama.cpp bounds an image to 4,096 tokens (4,096·28² = 3,211,264 px): beta = √(12e6/3,211,264) = 1.9331,
    # floor(3000/1.9331/28)·28 = 1540, floor(4000/1.9331/28)·28 = 2044 → 110·146/4 = 4,015 tokens; its compute
    # buffer is that image's graph either way
    args = ("check", "-d", "macbook-pro-m4-pro-24gb", "-m", "qwen2.5-vl-3b", "--images", "1",
            "--image-size", "4000x3000", "-c", "8k")
    _, ideal = run_json(*args)
    _, llama = run_json(*args, "--runtime", "llama.cpp")
    assert ideal["memory"]["parts"]["image_kv"]["image_tokens"] == 15_301
    assert llama["memory"]["parts"]["image_kv"]["image_tokens"] == 4_015
    assert llama["memory"]["parts"]["image_kv"]["token_rule"] == "llama.cpp"
    assert ideal["memory"]["parts"]["encoder_compute"]["encoded_size"] == "2044x1540"
    # llama.cpp's cache: 8,192 + 4,015 = 12,207 tokens → 12,288 cells (padded to 256): 4,096 more cells × 36,864 B
    assert llama["memory"]["parts"]["image_kv"]["bytes"] == 4096 * 36_864
