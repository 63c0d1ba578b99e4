/*
 * bert_io.c - BERT checkpoints: Hugging Face config.json and
 * model.safetensors onto the model, and the trainer state (weights, AdamW
 * moments, step count, trainer metadata) to and from a safetensors file.
 *
 * Tensor names come only from the X-macro table of bert.h (its Hugging Face
 * name and BERT_MAT/BERT_VEC shape columns), so a new table row is loaded
 * and saved with no change here. Every load validates the whole file against
 * the model before the first tensor is copied, so a failed load leaves the
 * model as it was. config.json is parsed with jansson: this file, like
 * config/config.c, is a config loader, and keeps json_t to itself.
 * References: Hugging Face transformers BertConfig and
 * BertPreTrainedModel._load_pretrained_model (key renames gamma/beta,
 * base_model_prefix "bert", ignored unexpected keys); safetensors.h.
 */
#include "models/bert/bert_io.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "models/bert/safetensors.h"

/* The shared prefix of per-layer names in the table, "bert.encoder.layer.%d.". */
#define LAYER_PREFIX_LEN (sizeof BERT_LAYER - 1)

enum { NAME_MAX_LEN = 192 };

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* dir + "/" + file, freshly allocated; NULL on OOM. */
static char *join(const char *dir, const char *file)
{
    size_t n = strlen(dir);
    return tunep_asprintf("%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", file);
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
        case JSON_OBJECT: return "an object";
        case JSON_ARRAY: return "an array";
        case JSON_STRING: return "a string";
        case JSON_INTEGER: return "an integer";
        case JSON_REAL: return "a real number";
        case JSON_TRUE:
        case JSON_FALSE: return "a boolean";
        default: return "null";
    }
}

static void shape_text(char *buf, size_t size, int ndim, const int64_t *dims)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "", (long long)dims[d]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

/* ---- the tensor table as checkpoint slots ------------------------------ */

/* Slot of (id, layer): parameters in table order, layers consecutive. */
static size_t slot_count(const struct tunep_bert_config *cfg, size_t *ret_base)
{
    size_t n = 0;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        ret_base[id] = n;
        n += tunep_bert_param_info[id].layered ? (size_t)cfg->L : 1;
    }
    return n;
}

static int layers_of(const struct tunep_bert_config *cfg, int id)
{
    return tunep_bert_param_info[id].layered ? cfg->L : 1;
}

/* The table's name without the "bert." base-model prefix (HF base_model_prefix). */
static const char *strip_base(const char *name)
{
    return strncmp(name, "bert.", 5) == 0 ? name + 5 : name;
}

/*
 * Maps a checkpoint tensor name onto (id, layer): "bert." optional, LayerNorm
 * gamma/beta read as weight/bias. Returns 0 when mapped, -1 otherwise.
 */
static int map_name(const char *name, int L, int *ret_id, int *ret_layer)
{
    char canon[NAME_MAX_LEN];
    const char *s = strip_base(name);
    size_t len = strlen(s);
    if (len + 1 > sizeof canon)
        return -1;
    memcpy(canon, s, len + 1);
    static const struct {
        const char *from, *to;
    } renames[] = {{"LayerNorm.gamma", "LayerNorm.weight"}, {"LayerNorm.beta", "LayerNorm.bias"}};
    for (size_t r = 0; r < sizeof renames / sizeof renames[0]; r++) {
        size_t fl = strlen(renames[r].from), tl = strlen(renames[r].to);
        if (len >= fl && strcmp(canon + len - fl, renames[r].from) == 0 &&
            len - fl + tl + 1 <= sizeof canon) {
            memcpy(canon + len - fl, renames[r].to, tl + 1);
            break;
        }
    }

    static const char layer_prefix[] = "encoder.layer.";
    if (strncmp(canon, layer_prefix, sizeof layer_prefix - 1) == 0) {
        const char *p = canon + sizeof layer_prefix - 1;
        long layer = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 6) {
            layer = layer * 10 + (*p++ - '0');
            digits++;
        }
        /* canonical decimal only: "01" is not layer 1 */
        if (digits == 0 || *p != '.' || (digits > 1 && canon[sizeof layer_prefix - 1] == '0') ||
            layer >= L)
            return -1;
        p++;
        for (int id = 0; id < BERT_PARAM_COUNT; id++) {
            const struct tunep_bert_param_info *info = &tunep_bert_param_info[id];
            if (info->layered && strcmp(p, info->name + LAYER_PREFIX_LEN) == 0) {
                *ret_id = id;
                *ret_layer = (int)layer;
                return 0;
            }
        }
        return -1;
    }
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        const struct tunep_bert_param_info *info = &tunep_bert_param_info[id];
        if (!info->layered && strcmp(canon, strip_base(info->name)) == 0) {
            *ret_id = id;
            *ret_layer = 0;
            return 0;
        }
    }
    return -1;
}

/* Tensors a Hugging Face checkpoint may hold that are not model weights. */
static int ignorable(const char *name)
{
    const char *s = strip_base(name);
    return strncmp(s, "cls.", 4) == 0 ||                /* pretraining heads */
           strcmp(s, "embeddings.position_ids") == 0 || /* buffers of older transformers */
           strcmp(s, "embeddings.token_type_ids") == 0 ||
           strncmp(name, "adamw.", 6) == 0; /* moments in a tune state file */
}

/* Checks dtype and shape of checkpoint tensor t against (cfg, id). */
static tune_status check_tensor(const char *source, const struct tunep_st_tensor *t,
                                const struct tunep_bert_config *cfg, int id, int f32_only,
                                tune_error *err)
{
    int floaty = t->dtype == TUNEP_ST_F32 ||
                 (!f32_only && (t->dtype == TUNEP_ST_F16 || t->dtype == TUNEP_ST_BF16 ||
                                t->dtype == TUNEP_ST_F64));
    if (!floaty)
        return tunep_error_set_at(
            err, TUNE_ECONFIG, source, 0, 0, "tensor '%s' has dtype %s, expected %s", t->name,
            tunep_st_dtype_name(t->dtype), f32_only ? "F32" : "F32, F16, BF16 or F64");
    int64_t dims[2];
    int ndim = tunep_bert_param_shape(cfg, (enum bert_param)id, dims);
    int same = ndim == t->ndim;
    for (int d = 0; same && d < ndim; d++)
        same = dims[d] == t->shape[d];
    if (!same) {
        char got[160], want[64];
        shape_text(got, sizeof got, t->ndim, t->shape);
        shape_text(want, sizeof want, ndim, dims);
        return tunep_error_set_at(err, TUNE_ECONFIG, source, 0, 0,
                                  "tensor '%s' has shape %s, expected %s", t->name, got, want);
    }
    return TUNE_OK;
}

/* Copies checkpoint tensors onto the model: slots[s] (NULL = skip) into
 * arena. buf holds the largest tensor. */
static tune_status copy_in(struct tunep_bert *model, const tunep_st_file *f,
                           const struct tunep_st_tensor *const *slots, enum tunep_bert_arena arena,
                           float *buf, tune_error *err)
{
    const struct tunep_bert_config *cfg = tunep_bert_config_of(model);
    size_t s = 0;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        for (int l = 0; l < layers_of(cfg, id); l++, s++) {
            const struct tunep_st_tensor *t = slots[s];
            if (!t)
                continue;
            tune_status st = tunep_st_read_f32(f, t, buf, t->count, err);
            if (st == TUNE_OK)
                st =
                    tunep_bert_tensor_set(model, arena, (enum bert_param)id, l, buf, t->count, err);
            if (st != TUNE_OK)
                return st;
        }
    }
    return TUNE_OK;
}

static size_t largest_tensor(const struct tunep_bert_config *cfg)
{
    size_t largest = 1;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        int64_t dims[2];
        int ndim = tunep_bert_param_shape(cfg, (enum bert_param)id, dims);
        size_t n = (size_t)dims[0] * (ndim == 2 ? (size_t)dims[1] : 1);
        largest = n > largest ? n : largest;
    }
    return largest;
}

/* ---- config.json ---------------------------------------------------------- */

static tune_status read_text(const char *path, char **ret_text, size_t *ret_len, tune_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tunep_error_set_at(err, errno == ENOENT ? TUNE_ENOTFOUND : TUNE_EIO, path, 0, 0,
                                  "cannot open: %s", strerror(errno));
    struct tunep_buf b;
    tunep_buf_init(&b);
    char chunk[16384];
    size_t n;
    tune_status st = TUNE_OK;
    while (!st && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > TUNEP_BERT_MAX_CONFIG_BYTES)
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                    "file is larger than the limit of %u bytes",
                                    TUNEP_BERT_MAX_CONFIG_BYTES);
        else
            tunep_buf_append(&b, chunk, n);
    }
    if (!st && ferror(f))
        st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "read error");
    fclose(f);
    if (!st && b.oom)
        st = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
    if (st) {
        tunep_buf_done(&b);
        return st;
    }
    size_t len = b.len;
    char *text = len ? tunep_buf_take(&b) : tunep_strdup("");
    tunep_buf_done(&b);
    if (!text)
        return tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
    *ret_text = text;
    *ret_len = len;
    return TUNE_OK;
}

/* Reads root[key] as an integer in [lo, hi] when present (required: else an error). */
static tune_status cfg_int(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                           const json_t *root, const char *key, int required, int lo, int hi,
                           int *ret)
{
    const json_t *v = json_object_get(root, key); /* borrowed */
    if (!v)
        return required ? tunep_cfg_error(ctx, path, 0, "missing key '%s'", key) : TUNE_OK;
    tunep_cfgpath_push_key(path, key);
    tune_status st = TUNE_OK;
    if (!json_is_integer(v)) {
        st = tunep_cfg_error(ctx, path, 0, "expected an integer, got %s", json_kind(v));
    } else {
        json_int_t x = json_integer_value(v);
        if (x < lo || x > hi)
            st = tunep_cfg_error(ctx, path, 0, "%lld is outside [%d, %d]", (long long)x, lo, hi);
        else
            *ret = (int)x;
    }
    tunep_cfgpath_pop(path);
    return st;
}

/* Reads root[key] as a number in [lo, hi) (or (lo, hi) when open_lo) when present. */
static tune_status cfg_real(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                            const json_t *root, const char *key, double lo, int open_lo, double hi,
                            double *ret)
{
    const json_t *v = json_object_get(root, key); /* borrowed */
    if (!v)
        return TUNE_OK;
    tunep_cfgpath_push_key(path, key);
    tune_status st = TUNE_OK;
    if (!json_is_number(v)) {
        st = tunep_cfg_error(ctx, path, 0, "expected a number, got %s", json_kind(v));
    } else {
        double x = json_number_value(v);
        if (!(open_lo ? x > lo : x >= lo) || !(x < hi))
            st = tunep_cfg_error(ctx, path, 0, "%g is outside %c%g, %g)", x, open_lo ? '(' : '[',
                                 lo, hi);
        else
            *ret = x;
    }
    tunep_cfgpath_pop(path);
    return st;
}

/* root[key], when present, must be the string want. */
static tune_status cfg_fixed_string(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                    const json_t *root, const char *key, const char *want,
                                    const char *why)
{
    const json_t *v = json_object_get(root, key); /* borrowed */
    if (!v)
        return TUNE_OK;
    tunep_cfgpath_push_key(path, key);
    tune_status st = TUNE_OK;
    if (!json_is_string(v))
        st = tunep_cfg_error(ctx, path, 0, "expected a string, got %s", json_kind(v));
    else if (strcmp(json_string_value(v), want) != 0)
        st = tunep_cfg_error(ctx, path, 0, "only \"%s\"%s is supported, got \"%s\"", want, why,
                             json_string_value(v));
    tunep_cfgpath_pop(path);
    return st;
}

/* Labels from num_labels and id2label ({"0": name, ..., "K-1": name}). */
static tune_status cfg_labels(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *root, int *ret_k)
{
    int k_num = 0;
    tune_status st = cfg_int(ctx, path, root, "num_labels", 0, 1, TUNEP_BERT_MAX_K, &k_num);
    if (st != TUNE_OK)
        return st;
    json_t *map = json_object_get(root, "id2label"); /* borrowed */
    int k_map = 0;
    if (map) {
        tunep_cfgpath_push_key(path, "id2label");
        size_t n = json_is_object(map) ? json_object_size(map) : 0;
        int ok = n >= 1 && n <= TUNEP_BERT_MAX_K;
        const char *key;
        json_t *v; /* borrowed */
        json_object_foreach(map, key, v)
        {
            char *end;
            errno = 0;
            long id = strtol(key, &end, 10);
            char canon[32];
            snprintf(canon, sizeof canon, "%ld", id);
            if (!ok || errno || *end || id < 0 || (size_t)id >= n || strcmp(canon, key) != 0 ||
                !json_is_string(v))
                ok = 0;
        }
        if (!ok)
            st = tunep_cfg_error(ctx, path, 0,
                                 "expected an object mapping \"0\" ... \"K-1\" to label names, "
                                 "with 1 <= K <= %d",
                                 TUNEP_BERT_MAX_K);
        tunep_cfgpath_pop(path);
        if (st != TUNE_OK)
            return st;
        k_map = (int)n;
    }
    if (k_num && k_map && k_num != k_map) {
        tunep_cfgpath_push_key(path, "num_labels");
        st = tunep_cfg_error(ctx, path, 0, "%d disagrees with the %d labels of id2label", k_num,
                             k_map);
        tunep_cfgpath_pop(path);
        return st;
    }
    *ret_k = k_map ? k_map : k_num ? k_num : 2;
    return TUNE_OK;
}

static tune_status parse_hf_config(const struct tunep_cfgctx *ctx, const json_t *root,
                                   struct tunep_bert_config *cfg)
{
    struct tunep_cfgpath path = {.depth = 0};
    if (!json_is_object(root))
        return tunep_cfg_error(ctx, &path, 0, "expected a JSON object");
    const struct {
        const char *key;
        int *dst, max, required;
    } ints[] = {
        {"hidden_size", &cfg->C, TUNEP_BERT_MAX_C, 1},
        {"num_hidden_layers", &cfg->L, TUNEP_BERT_MAX_L, 1},
        {"num_attention_heads", &cfg->NH, TUNEP_BERT_MAX_NH, 1},
        {"intermediate_size", &cfg->I, TUNEP_BERT_MAX_I, 1},
        {"max_position_embeddings", &cfg->P, TUNEP_BERT_MAX_P, 1},
        {"vocab_size", &cfg->V, TUNEP_BERT_MAX_V, 1},
        {"type_vocab_size", &cfg->TV, TUNEP_BERT_MAX_TV, 0},
    };
    tune_status st;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        st = cfg_int(ctx, &path, root, ints[i].key, ints[i].required, 1, ints[i].max, ints[i].dst);
        if (st != TUNE_OK)
            return st;
    }
    if ((st = cfg_real(ctx, &path, root, "hidden_dropout_prob", 0.0, 0, 1.0,
                       &cfg->hidden_dropout)) != TUNE_OK ||
        (st = cfg_real(ctx, &path, root, "attention_probs_dropout_prob", 0.0, 0, 1.0,
                       &cfg->attn_dropout)) != TUNE_OK ||
        (st = cfg_real(ctx, &path, root, "layer_norm_eps", 0.0, 1, 1.0, &cfg->ln_eps)) != TUNE_OK ||
        (st = cfg_fixed_string(ctx, &path, root, "hidden_act", "gelu", " (exact erf GELU)")) !=
            TUNE_OK ||
        (st = cfg_fixed_string(ctx, &path, root, "model_type", "bert", "")) != TUNE_OK ||
        (st = cfg_fixed_string(ctx, &path, root, "position_embedding_type", "absolute", "")) !=
            TUNE_OK ||
        (st = cfg_labels(ctx, &path, root, &cfg->K)) != TUNE_OK)
        return st;
    /* BertForSequenceClassification's own dropout before the classifier;
     * this model uses hidden_dropout_prob there. */
    const json_t *cd = json_object_get(root, "classifier_dropout"); /* borrowed */
    if (cd && !json_is_null(cd)) {
        tunep_cfgpath_push_key(&path, "classifier_dropout");
        if (!json_is_number(cd))
            return tunep_cfg_error(ctx, &path, 0, "expected a number or null, got %s",
                                   json_kind(cd));
        if (json_number_value(cd) != cfg->hidden_dropout)
            tunep_log(TUNE_LOG_WARN,
                      "%s: classifier_dropout %g is not supported: the classifier uses "
                      "hidden_dropout_prob %g",
                      ctx->source, json_number_value(cd), cfg->hidden_dropout);
    }
    return TUNE_OK;
}

tune_status tunep_bert_hf_config_load(const char *dir_or_file, struct tunep_bert_config *ret_cfg,
                                      tune_error *err)
{
    if (!dir_or_file || !ret_cfg)
        return tunep_error_set(err, TUNE_EINVAL, "bert config: NULL argument");
    char *path = is_dir(dir_or_file) ? join(dir_or_file, "config.json") : tunep_strdup(dir_or_file);
    char *text = NULL;
    size_t len = 0;
    json_t *root = NULL;
    tune_status st;
    if (!path) {
        st = tunep_error_set(err, TUNE_ENOMEM, "bert config: out of memory");
        goto out;
    }
    if ((st = read_text(path, &text, &len, err)) != TUNE_OK)
        goto out;
    json_error_t jerr;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr); /* new ref */
    if (!root) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, path, jerr.line, jerr.column, "%s", jerr.text);
        goto out;
    }
    struct tunep_cfgctx ctx = {text, len, path, err};
    struct tunep_bert_config cfg;
    tunep_bert_config_default(&cfg);
    cfg.hidden_dropout = 0.1;
    cfg.attn_dropout = 0.1;
    cfg.ln_eps = 1e-12;
    cfg.TV = 2;
    cfg.K = 2;
    if ((st = parse_hf_config(&ctx, root, &cfg)) != TUNE_OK)
        goto out;
    tune_error cerr = {0};
    if ((st = tunep_bert_config_check(&cfg, &cerr)) != TUNE_OK) {
        st = tunep_error_set_at(err, st, path, 0, 0, "%s", cerr.text);
        goto out;
    }
    *ret_cfg = cfg;
out:
    json_decref(root);
    tunep_free(text);
    tunep_free(path);
    return st;
}

/* ---- Hugging Face weights -------------------------------------------------- */

/* The checkpoint path of dir_or_file, or an error for what this build cannot read. */
static tune_status hf_weights_path(const char *dir_or_file, char **ret_path, tune_error *err)
{
    if (!is_dir(dir_or_file)) {
        *ret_path = tunep_strdup(dir_or_file);
        return *ret_path ? TUNE_OK : tunep_error_set(err, TUNE_ENOMEM, "bert: out of memory");
    }
    static const struct {
        const char *file, *why;
    } others[] = {
        {"model.safetensors.index.json", "sharded checkpoints are not supported"},
        {"pytorch_model.bin", "PyTorch pickles are not supported; convert the checkpoint to "
                              "model.safetensors"},
    };
    char *path = join(dir_or_file, "model.safetensors");
    if (!path)
        return tunep_error_set(err, TUNE_ENOMEM, "bert: out of memory");
    if (!exists(path)) {
        for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
            char *alt = join(dir_or_file, others[i].file);
            int found = alt && exists(alt);
            tunep_free(alt);
            if (found) {
                tune_status st =
                    tunep_error_set_at(err, TUNE_EUNSUPPORTED, path, 0, 0, "not found, and %s (%s)",
                                       others[i].why, others[i].file);
                tunep_free(path);
                return st;
            }
        }
    }
    *ret_path = path;
    return TUNE_OK;
}

tune_status tunep_bert_load_hf(struct tunep_bert *model, const char *dir_or_file, int num_labels,
                               tune_error *err)
{
    if (!model || !dir_or_file)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL argument");
    const struct tunep_bert_config *cfg = tunep_bert_config_of(model);
    if (num_labels != 0 && num_labels != cfg->K)
        return tunep_error_set(err, TUNE_EINVAL,
                               "bert: num_labels %d does not match the model's %d labels",
                               num_labels, cfg->K);
    char *path = NULL;
    tunep_st_file *f = NULL;
    const struct tunep_st_tensor **slots = NULL;
    float *buf = NULL;
    size_t base[BERT_PARAM_COUNT];
    size_t n_slots = slot_count(cfg, base);
    tune_status st;
    if ((st = hf_weights_path(dir_or_file, &path, err)) != TUNE_OK ||
        (st = tunep_st_open(path, &f, err)) != TUNE_OK)
        goto out;
    slots = tunep_calloc(n_slots, sizeof *slots);
    buf = tunep_malloc(largest_tensor(cfg) * sizeof *buf);
    if (!slots || !buf) {
        st = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
        goto out;
    }

    /* Every tensor of the file: mapped (checked), ignorable, or an error. */
    size_t ignored = 0;
    int prefixed = 1; /* the style of the first mapped name, for messages */
    int seen_mapped = 0;
    for (size_t i = 0; i < tunep_st_count(f); i++) {
        const struct tunep_st_tensor *t = tunep_st_at(f, i);
        int id, layer;
        if (map_name(t->name, cfg->L, &id, &layer) != 0) {
            if (ignorable(t->name)) {
                ignored++;
                continue;
            }
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0, "unexpected tensor '%s'",
                                    t->name);
            goto out;
        }
        size_t s = base[id] + (size_t)layer;
        if (slots[s]) {
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                    "tensors '%s' and '%s' are the same parameter", slots[s]->name,
                                    t->name);
            goto out;
        }
        if ((st = check_tensor(path, t, cfg, id, 0, err)) != TUNE_OK)
            goto out;
        slots[s] = t;
        if (!seen_mapped && id != BERT_P_CLS_W && id != BERT_P_CLS_B) {
            prefixed = strncmp(t->name, "bert.", 5) == 0;
            seen_mapped = 1;
        }
    }

    /* Missing tensors; the pooler and the classifier may be absent as pairs. */
    const int optional[2][2] = {{BERT_P_POOL_W, BERT_P_POOL_B}, {BERT_P_CLS_W, BERT_P_CLS_B}};
    int absent[2];
    for (int h = 0; h < 2; h++)
        absent[h] = !slots[base[optional[h][0]]] && !slots[base[optional[h][1]]];
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        if ((absent[0] && (id == optional[0][0] || id == optional[0][1])) ||
            (absent[1] && (id == optional[1][0] || id == optional[1][1])))
            continue;
        for (int l = 0; l < layers_of(cfg, id); l++) {
            if (slots[base[id] + (size_t)l])
                continue;
            char name[NAME_MAX_LEN];
            tunep_bert_param_name((enum bert_param)id, l, name, sizeof name);
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0, "missing tensor '%s'",
                                    prefixed ? name : strip_base(name));
            goto out;
        }
    }

    if ((st = copy_in(model, f, slots, TUNEP_BERT_ARENA_PARAMS, buf, err)) != TUNE_OK)
        goto out;
    if (absent[0])
        tunep_log(TUNE_LOG_INFO, "%s: no pooler tensors: the pooler keeps its initialisation",
                  path);
    if (absent[1])
        tunep_log(TUNE_LOG_INFO,
                  "%s: no classifier tensors: the classifier keeps its random initialisation",
                  path);
    if (ignored)
        tunep_log(TUNE_LOG_DEBUG, "%s: ignored %zu tensors that are not model weights", path,
                  ignored);
out:
    tunep_free(buf);
    tunep_free(slots);
    tunep_st_close(f);
    tunep_free(path);
    return st;
}

/* ---- trainer state ---------------------------------------------------------- */

static const char *const arena_prefix[3] = {"", "adamw.m.", "adamw.v."};
static const enum tunep_bert_arena state_arenas[3] = {
    TUNEP_BERT_ARENA_PARAMS, TUNEP_BERT_ARENA_ADAM_M, TUNEP_BERT_ARENA_ADAM_V};

/* The config's integer fields under their Hugging Face keys. */
#define STATE_CONFIG_INTS(cfg)                                                                     \
    {                                                                                              \
        {"num_hidden_layers", (cfg)->L}, {"hidden_size", (cfg)->C},                                \
            {"num_attention_heads", (cfg)->NH}, {"intermediate_size", (cfg)->I},                   \
            {"max_position_embeddings", (cfg)->P}, {"vocab_size", (cfg)->V},                       \
            {"type_vocab_size", (cfg)->TV}, {"num_labels", (cfg)->K},                              \
    }

struct cfg_int_field {
    const char *key;
    int value;
};

/* JSON of the config, numbers locale-independent and shortest (tunep_buf;
 * release with tunep_free()), or NULL on OOM. */
static char *config_json(const struct tunep_bert_config *cfg)
{
    const struct cfg_int_field ints[] = STATE_CONFIG_INTS(cfg);
    const struct {
        const char *key;
        double value;
    } reals[] = {{"hidden_dropout_prob", cfg->hidden_dropout},
                 {"attention_probs_dropout_prob", cfg->attn_dropout},
                 {"layer_norm_eps", cfg->ln_eps}};
    struct tunep_buf b;
    tunep_buf_init(&b);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        tunep_buf_printf(&b, "%s\"%s\":%d", i ? "," : "{", ints[i].key, ints[i].value);
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        char num[32];
        tunep_format_double(num, sizeof num, reals[i].value);
        tunep_buf_printf(&b, ",\"%s\":%s", reals[i].key, num);
    }
    tunep_buf_puts(&b, ",\"hidden_act\":\"gelu\"}");
    return tunep_buf_take(&b);
}

struct fill_ctx {
    const struct tunep_bert *model;
    enum tunep_bert_arena arena;
    int id, layer;
};

static tune_status fill_tensor(void *ctx, float *dst, size_t n, tune_error *err)
{
    const struct fill_ctx *c = ctx;
    return tunep_bert_tensor_get(c->model, c->arena, (enum bert_param)c->id, c->layer, dst, n, err);
}

tune_status tunep_bert_state_save(const struct tunep_bert *model, const char *path,
                                  const char *meta_json, tune_error *err)
{
    if (!model || !path)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL argument");
    const struct tunep_bert_config *cfg = tunep_bert_config_of(model);
    size_t base[BERT_PARAM_COUNT];
    size_t n_slots = slot_count(cfg, base);
    struct fill_ctx *ctxs = tunep_calloc(3 * n_slots, sizeof *ctxs);
    char *cfg_text = config_json(cfg);
    tunep_st_writer *w = NULL;
    tune_status st;
    if (!ctxs || !cfg_text) {
        st = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
        goto out;
    }
    char num[32];
    snprintf(num, sizeof num, "%ld", tunep_bert_step_count(model));
    char version[16];
    snprintf(version, sizeof version, "%d", TUNEP_BERT_STATE_VERSION);
    if ((st = tunep_st_writer_new(&w, err)) != TUNE_OK ||
        (st = tunep_st_writer_meta(w, "format", TUNEP_BERT_STATE_FORMAT, err)) != TUNE_OK ||
        (st = tunep_st_writer_meta(w, "format_version", version, err)) != TUNE_OK ||
        (st = tunep_st_writer_meta(w, "config", cfg_text, err)) != TUNE_OK ||
        (st = tunep_st_writer_meta(w, "step", num, err)) != TUNE_OK ||
        (meta_json && (st = tunep_st_writer_meta(w, "trainer", meta_json, err)) != TUNE_OK))
        goto out;
    size_t k = 0;
    for (int a = 0; a < 3; a++) {
        for (int id = 0; id < BERT_PARAM_COUNT; id++) {
            int64_t dims[2];
            int ndim = tunep_bert_param_shape(cfg, (enum bert_param)id, dims);
            for (int l = 0; l < layers_of(cfg, id); l++, k++) {
                char hf[NAME_MAX_LEN], name[NAME_MAX_LEN + 16];
                tunep_bert_param_name((enum bert_param)id, l, hf, sizeof hf);
                snprintf(name, sizeof name, "%s%s", arena_prefix[a], hf);
                ctxs[k] = (struct fill_ctx){model, state_arenas[a], id, l};
                if ((st = tunep_st_writer_add(w, name, ndim, dims, fill_tensor, &ctxs[k], err)) !=
                    TUNE_OK)
                    goto out;
            }
        }
    }
    st = tunep_st_writer_write(w, path, err);
out:
    tunep_st_writer_free(w);
    tunep_free(cfg_text);
    tunep_free(ctxs);
    return st;
}

/* The saved config's dimensions must be the model's. */
static tune_status check_state_config(const char *path, const char *text,
                                      const struct tunep_bert_config *cfg, tune_error *err)
{
    if (!text)
        return tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0, "metadata 'config' is missing");
    json_error_t jerr;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &jerr); /* new ref */
    if (!json_is_object(o)) {
        json_decref(o);
        return tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                  "metadata 'config' is not a JSON object");
    }
    const struct cfg_int_field ints[] = STATE_CONFIG_INTS(cfg);
    tune_status st = TUNE_OK;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0] && !st; i++) {
        const json_t *v = json_object_get(o, ints[i].key); /* borrowed */
        if (!json_is_integer(v))
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                    "metadata 'config' lacks the integer '%s'", ints[i].key);
        else if (json_integer_value(v) != ints[i].value)
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                    "config '%s' is %lld in the checkpoint but %d in the model",
                                    ints[i].key, (long long)json_integer_value(v), ints[i].value);
    }
    json_decref(o);
    return st;
}

static tune_status parse_step(const char *path, const char *text, long *ret_step, tune_error *err)
{
    char *end;
    errno = 0;
    long step = text && *text >= '0' && *text <= '9' ? strtol(text, &end, 10) : -1;
    if (step < 0 || errno || *end)
        return tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                  "metadata 'step' is not a non-negative integer");
    *ret_step = step;
    return TUNE_OK;
}

tune_status tunep_bert_state_load(struct tunep_bert *model, const char *path, char **ret_meta_json,
                                  tune_error *err)
{
    if (!model || !path)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL argument");
    const struct tunep_bert_config *cfg = tunep_bert_config_of(model);
    size_t base[BERT_PARAM_COUNT];
    size_t n_slots = slot_count(cfg, base);
    tunep_st_file *f = NULL;
    const struct tunep_st_tensor **slots = NULL;
    unsigned char *used = NULL;
    float *buf = NULL;
    char *meta = NULL;
    tune_status st = tunep_st_open(path, &f, err);
    if (st != TUNE_OK)
        return st;

    const char *format = tunep_st_meta(f, "format");
    const char *version = tunep_st_meta(f, "format_version");
    long step = 0;
    if (!format || strcmp(format, TUNEP_BERT_STATE_FORMAT) != 0) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                "not a tune BERT state file (metadata 'format' is not '%s')",
                                TUNEP_BERT_STATE_FORMAT);
        goto out;
    }
    char want_version[16];
    snprintf(want_version, sizeof want_version, "%d", TUNEP_BERT_STATE_VERSION);
    if (!version || strcmp(version, want_version) != 0) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                "state format version '%s' is not supported (this build reads %s)",
                                version ? version : "", want_version);
        goto out;
    }
    if ((st = check_state_config(path, tunep_st_meta(f, "config"), cfg, err)) != TUNE_OK ||
        (st = parse_step(path, tunep_st_meta(f, "step"), &step, err)) != TUNE_OK)
        goto out;

    size_t n_file = tunep_st_count(f);
    slots = tunep_calloc(3 * n_slots, sizeof *slots);
    used = tunep_calloc(n_file ? n_file : 1, 1);
    buf = tunep_malloc(largest_tensor(cfg) * sizeof *buf);
    const char *trainer = tunep_st_meta(f, "trainer");
    if (trainer && ret_meta_json)
        meta = tunep_strdup(trainer);
    if (!slots || !used || !buf || (trainer && ret_meta_json && !meta)) {
        st = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
        goto out;
    }
    const struct tunep_st_tensor *first = n_file ? tunep_st_at(f, 0) : NULL;
    size_t k = 0;
    for (int a = 0; a < 3; a++) {
        for (int id = 0; id < BERT_PARAM_COUNT; id++) {
            for (int l = 0; l < layers_of(cfg, id); l++, k++) {
                char hf[NAME_MAX_LEN], name[NAME_MAX_LEN + 16];
                tunep_bert_param_name((enum bert_param)id, l, hf, sizeof hf);
                snprintf(name, sizeof name, "%s%s", arena_prefix[a], hf);
                const struct tunep_st_tensor *t = tunep_st_find(f, name);
                if (!t) {
                    st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0, "missing tensor '%s'",
                                            name);
                    goto out;
                }
                if ((st = check_tensor(path, t, cfg, id, 1, err)) != TUNE_OK)
                    goto out;
                slots[k] = t;
                used[t - first] = 1;
            }
        }
    }
    for (size_t i = 0; i < n_file; i++) {
        if (!used[i]) {
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0, "unexpected tensor '%s'",
                                    tunep_st_at(f, i)->name);
            goto out;
        }
    }

    for (int a = 0; a < 3; a++) {
        if ((st = copy_in(model, f, slots + (size_t)a * n_slots, state_arenas[a], buf, err)) !=
            TUNE_OK)
            goto out;
    }
    if ((st = tunep_bert_set_step_count(model, step, err)) != TUNE_OK)
        goto out;
    if (ret_meta_json) {
        *ret_meta_json = meta;
        meta = NULL;
    }
out:
    tunep_free(meta);
    tunep_free(buf);
    tunep_free(used);
    tunep_free(slots);
    tunep_st_close(f);
    return st;
}
