// kvplan mmproj probe (tests/harness/mmproj_buffers.py builds it): clip_init() on a projector GGUF, as
// llama-mtmd-cli does it (CPU, flash attention auto, warmup on), then print the exact bytes clip.cpp counts:
// clip_ctx::mem_usage (sum of ggml_nbytes of the weights loaded, the "model size" log line) and
// clip_ctx::mem_compute (ggml_backend_sched_get_buffer_size after warmup's reserve_compute_meta, the
// "compute buffer size" log line). It includes clip.cpp to read those private fields.
// An audio projector (no vision encoder) is probed the same way through its audio context (ctx_a).
// usage: mmproj_probe MMPROJ.gguf [IMAGE_MAX_TOKENS [WIDTHxHEIGHT|clips:S1,S2,…|- [off]]]   (off: -fa off)
// With WIDTHxHEIGHT it then reserves the graph of one image of that size (what encoding it makes the
// scheduler reserve) and prints that buffer too.
#include "clip.cpp"
#include "mtmd-audio.h"
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
    // a vision projector's context, else an audio projector's (clip.has_audio_encoder: ctx_a)
    clip_ctx * c = r.ctx_v ? r.ctx_v : r.ctx_a;
    if (!c) { fprintf(stderr, "load failed\n"); return 1; }
    size_t w = 0, cb = 0;
    for (auto & kv : c->mem_usage) w += kv.second;
    for (auto & kv : c->mem_compute) cb += kv.second;
    printf("PROBE weights_bytes=%zu compute_bytes=%zu warmup_image_size=%d flash_attn=%d\n",
           w, cb, c->model.hparams.warmup_image_size, (int)(c->flash_attn_type == CLIP_FLASH_ATTN_TYPE_ENABLED));
    if (c == r.ctx_a) {
        // the audio context: its warmup mel (frames x bins) and the tokens clip_n_output_tokens gives one such chunk
        clip_image_f32 mel;
        mel.set_size({c->model.hparams.warmup_audio_size, c->model.hparams.n_mel_bins}, true, true);
        printf("PROBE audio warmup_audio_size=%d n_mel_bins=%d chunk_tokens=%d\n", c->model.hparams.warmup_audio_size,
               c->model.hparams.n_mel_bins, clip_n_output_tokens(c, &mel));
        // with "clips:S1,S2,…" (seconds): the mel chunks mtmd's Whisper preprocessor makes of a silent clip of each
        // length, and the tokens clip_n_output_tokens gives them (what mtmd_tokenize inserts)
        if (argc > 3 && std::string(argv[3]).rfind("clips:", 0) == 0) {
            mtmd_audio_preprocessor_whisper pre(c);
            pre.initialize();
            std::string list = std::string(argv[3]).substr(6);
            size_t pos = 0;
            while (pos < list.size()) {
                size_t comma = list.find(',', pos);
                double sec = atof(list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos).c_str());
                std::vector<float> pcm((size_t) llround(sec * 16000.0), 0.0f);
                std::vector<mtmd_audio_mel> chunks;
                pre.preprocess(pcm.data(), pcm.size(), chunks);
                int tokens = 0;
                for (auto & m : chunks) {
                    clip_image_f32 f;
                    f.set_size({(int) m.n_len, (int) m.n_mel}, true, true);
                    tokens += clip_n_output_tokens(c, &f);
                }
                // reserve the graph of the clip's first chunk, as encoding it makes the scheduler do
                size_t cb_clip = 0;
                if (!chunks.empty()) {
                    clip_image_f32_batch batch;
                    clip_image_f32 f;
                    f.set_size({(int) chunks[0].n_len, (int) chunks[0].n_mel}, false, true);
                    batch.entries.push_back(f);
                    batch.is_audio = true;
                    clip_model_loader::warmup(*c, batch);
                    for (auto & kv : c->mem_compute) cb_clip += kv.second;
                }
                printf("PROBE clip seconds=%g samples=%zu chunks=%zu tokens=%d compute_bytes=%zu\n", sec, pcm.size(),
                       chunks.size(), tokens, cb_clip);
                if (comma == std::string::npos) break;
                pos = comma + 1;
            }
        }
        clip_free(c);
        return 0;
    }
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
