// kvplan mmproj probe (tests/harness/mmproj_buffers.py builds it): clip_init() on a projector GGUF, as
// llama-mtmd-cli does it (CPU, flash attention auto, warmup on), then print the exact bytes clip.cpp counts:
// clip_ctx::mem_usage (sum of ggml_nbytes of the weights loaded, the "model size" log line) and
// clip_ctx::mem_compute (ggml_backend_sched_get_buffer_size after warmup's reserve_compute_meta, the
// "compute buffer size" log line). It includes clip.cpp to read those private fields.
// usage: mmproj_probe MMPROJ.gguf [IMAGE_MAX_TOKENS [WIDTHxHEIGHT|- [off]]]   (off: -fa off)
// With WIDTHxHEIGHT it then reserves the graph of one image of that size (what encoding it makes the
// scheduler reserve) and prints that buffer too.
#include "clip.cpp"
#include <cstdio>
#include <cstdlib>
int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: mmproj_probe MMPROJ.gguf [IMAGE_MAX_TOKENS]\n"); return 2; }
    clip_context_params p{};
    p.use_gpu = false;
    p.device = nullptr;
    p.flash_attn_type = argc > 4 && std::string(argv[4]) == "off" ? CLIP_FLASH_ATTN_TYPE_DISABLED
                                                                  : CLIP_FLASH_ATTN_TYPE_AUTO;
    p.image_min_tokens = -1;
    p.image_max_tokens = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : -1;
    p.warmup = true;
    p.no_alloc = false;
    auto r = clip_init(argv[1], p);
    if (!r.ctx_v) { fprintf(stderr, "load failed\n"); return 1; }
    clip_ctx * c = r.ctx_v;
    size_t w = 0, cb = 0;
    for (auto & kv : c->mem_usage) w += kv.second;
    for (auto & kv : c->mem_compute) cb += kv.second;
    printf("PROBE weights_bytes=%zu compute_bytes=%zu warmup_image_size=%d flash_attn=%d\n",
           w, cb, c->model.hparams.warmup_image_size, (int)(c->flash_attn_type == CLIP_FLASH_ATTN_TYPE_ENABLED));
    if (argc > 3 && std::string(argv[3]) != "-") {
        int iw = 0, ih = 0;
        if (sscanf(argv[3], "%dx%d", &iw, &ih) != 2) { fprintf(stderr, "bad size\n"); return 2; }
        clip_image_f32_batch batch;
        clip_image_f32 img;
        img.set_size({iw, ih}, false, false);
        batch.entries.push_back(img);
        clip_model_loader::warmup(*c, batch);
        size_t cb2 = 0;
        for (auto & kv : c->mem_compute) cb2 += kv.second;
        printf("PROBE image=%dx%d compute_bytes=%zu\n", iw, ih, cb2);
    }
    clip_free(c);
    return 0;
}
