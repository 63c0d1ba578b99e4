/*
 * fuzz_hf_config.c - libFuzzer harness for the Hugging Face config.json
 * reader (tunep_bert_hf_config_load() in models/bert/bert_io.c): the input
 * is the config.json, given through an in-memory file (fuzz_util.h).
 *
 * An accepted config must pass tunep_bert_config_check(), and its layout
 * for the largest batch and sequence it allows must compute without
 * overflow: every size and offset fits in the arena totals, which stay far
 * below 2^64, as the limits in bert.h promise (the layout is pure
 * arithmetic, so this costs nothing).
 */
#include "fuzz_util.h"

#include "models/bert/bert.h"
#include "models/bert/bert_io.h"

static struct fuzz_file file = FUZZ_FILE_INIT;

static void check_layout(const struct tunep_bert_config *cfg, int B, int T)
{
    struct tunep_bert_layout lay;
    tune_error err = {0};
    FUZZ_CHECK(tunep_bert_layout_compute(cfg, B, T, &lay, &err) == TUNE_OK);
    FUZZ_CHECK(lay.B == B && lay.T == T);
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        FUZZ_CHECK(lay.param_size[id] >= 1);
        FUZZ_CHECK(lay.param_offset[id] < lay.param_total);
        FUZZ_CHECK(lay.param_size[id] <= lay.param_total - lay.param_offset[id]);
    }
    for (int id = 0; id < BERT_ACT_COUNT; id++) {
        if (tunep_bert_act_info[id].act)
            FUZZ_CHECK(lay.act_offset[id] <= lay.act_total &&
                       lay.act_size[id] <= lay.act_total - lay.act_offset[id]);
        if (tunep_bert_act_info[id].grad)
            FUZZ_CHECK(lay.grad_offset[id] <= lay.grad_total);
    }
    /* The limits keep the largest product near 2^52 elements (bert.h), and the totals a
     * small multiple of it: far from wrapping around size_t. */
    FUZZ_CHECK(lay.param_total < ((size_t)1 << 60) && lay.act_total < ((size_t)1 << 60) &&
               lay.grad_total < ((size_t)1 << 60));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file_set(&file, data, size);
    struct tunep_bert_config cfg;
    memset(&cfg, 0xa5, sizeof cfg);
    const struct tunep_bert_config poison = cfg;
    tune_error err = {0};
    tune_status st = tunep_bert_hf_config_load(path, &cfg, &err);
    if (st != TUNE_OK) {
        fuzz_check_error(st, &err);
        FUZZ_CHECK(memcmp(&cfg, &poison, sizeof cfg) == 0);
        return 0;
    }
    FUZZ_CHECK(tunep_bert_config_check(&cfg, &err) == TUNE_OK);
    check_layout(&cfg, 1, 1);
    check_layout(&cfg, TUNEP_BERT_MAX_B, cfg.P);
    return 0;
}
