/*
 * bert_trainer.c - the `bert` trainer: each trial fine-tunes a BERT classifier
 * on a TSV dataset and reports val_accuracy after every evaluation.
 *
 * The loop is Hugging Face's Trainer for sequence classification: seeded
 * shuffling per epoch, dynamic padding, dropout, AdamW with decoupled weight
 * decay (none on biases and LayerNorm), gradient-norm clipping, and
 * get_linear_schedule_with_warmup (the update with index s uses
 * lr * s / warmup during warm-up, then lr * (total - s) / (total - warmup)).
 * One training_iteration is one evaluation on the dev set: each epoch, or
 * every eval_every steps.
 *
 * The tokenizer and the datasets are loaded once per study and shared
 * read-only by every trial (they are immutable once loaded); each trial owns
 * its backend and model and frees them as soon as it ends, so a trial that
 * ASHA stops gives its memory back at once. Per-trial hyperparameters come
 * from the trial's configuration, with Hugging Face's defaults when absent.
 */
#include "trainer.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/file_io.h"
#include "models/bert/bert.h"
#include "models/bert/bert_io.h"
#include "models/cpu/cpu_backend.h"
#include "models/cuda/cuda_backend.h"
#include "models/device/device.h"
#include "models/text/dataset_tsv.h"
#include "models/text/tokenizer.h"
#include "models/cuda/cuda_backend.h"
#include "tune_config.h"

#define MAX_CACHED_LENGTHS 8

/* The trainer's section: fixed settings (per-trial ones come from the trial's configuration). */
struct bert_config {
    char *train, *dev, *vocab; /* TSV files and vocab.txt */
    char *checkpoint;          /* a Hugging Face BERT folder, or NULL for random initialisation */
    int layers, hidden, heads, intermediate, max_position; /* the model without a checkpoint */
    int epochs;
    int64_t eval_every; /* steps between evaluations; 0: once per epoch */
    int64_t max_train_examples, max_eval_examples; /* 0: all */
    int max_seq_len;
    int eval_batch_size;
    int threads; /* per trial; 0: resources_per_trial.cpu, else the cores divided
                  * among concurrent trials */
    int lowercase;
    char *device_text;          /* "device": cpu (the default), auto, cuda, cuda:N */
    int tf32;                   /* "precision": "tf32" lets cuBLAS round to TF32 on CUDA */
    struct tunep_device device; /* device_text, parsed by check() */
    int largest_batch;          /* the largest batch_size the search space makes (check()) */
};

static const char *const precisions[] = {"fp32", "tf32", NULL};

#define ROW(name, type, field, lo, hi, def)                                                        \
    TUNEP_OPT_ROW(name, type, struct bert_config, field, lo, hi, def)
/* bert-tiny shapes (L2 H128 A2 I512) for random initialisation. */
static const struct tunep_option model_options[] = {
    ROW("layers", TUNEP_OPT_INT, layers, 1, 48, 2),
    ROW("hidden", TUNEP_OPT_INT, hidden, 8, 8192, 128),
    ROW("heads", TUNEP_OPT_INT, heads, 1, 128, 2),
    ROW("intermediate", TUNEP_OPT_INT, intermediate, 8, 65536, 512),
    ROW("max_position", TUNEP_OPT_INT, max_position, 8, 4096, 512),
    {0},
};
static const struct tunep_option bert_options[] = {
    ROW("train", TUNEP_OPT_FILE, train, 0, 0, 0),
    ROW("dev", TUNEP_OPT_FILE, dev, 0, 0, 0),
    ROW("vocab", TUNEP_OPT_FILE, vocab, 0, 0, 0),
    ROW("checkpoint", TUNEP_OPT_DIR, checkpoint, 0, 0, 0),
    {.name = "model",
     .type = TUNEP_OPT_OBJECT,
     .sub = model_options,
     .expected = "an object such as {\"layers\": 2}"},
    ROW("epochs", TUNEP_OPT_INT, epochs, 1, 1000, 3),
    ROW("eval_every", TUNEP_OPT_INT64, eval_every, 0, 0, 0),
    ROW("max_train_examples", TUNEP_OPT_INT64, max_train_examples, 0, 0, 0),
    ROW("max_eval_examples", TUNEP_OPT_INT64, max_eval_examples, 0, 0, 0),
    ROW("max_seq_len", TUNEP_OPT_INT, max_seq_len, 8, 4096, 128),
    ROW("eval_batch_size", TUNEP_OPT_INT, eval_batch_size, 1, 4096, 128),
    ROW("threads", TUNEP_OPT_INT, threads, 0, 256, 0),
    ROW("lowercase", TUNEP_OPT_BOOL, lowercase, 0, 1, 1),
    ROW("device", TUNEP_OPT_STRING, device_text, 0, 64, 0),
    {.name = "precision",
     .type = TUNEP_OPT_CHOICE,
     .offset = offsetof(struct bert_config, tf32),
     .choices = precisions},
    {0},
};
#undef ROW

/* The rules across keys, and the device, once the section is read. */
/* The examples of a TSV file (its lines but the header), or 0 when it cannot be read. */
static int64_t count_examples(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buf[65536];
    size_t n;
    int64_t lines = 0;
    char last = '\n';
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t i = 0; i < n; i++)
            lines += buf[i] == '\n';
        last = buf[n - 1];
    }
    fclose(f);
    lines += last != '\n'; /* a last line without its newline */
    return lines > 1 ? lines - 1 : 0;
}

/*
 * Warns when a trial's warmup_steps can exceed all its steps (the learning
 * rate would never reach lr): the largest warmup_steps of the space against
 * the steps of the trial with the largest batch_size (the fewest steps).
 * The config stays valid; the data's size is known only here by counting.
 */
static void warn_long_warmup(const struct bert_config *b, const struct tunep_trainer_check_ctx *ctx)
{
    double w_lo, w_hi, b_lo = 32, b_hi = 32; /* Hugging Face's default batch_size */
    if (!ctx->param_range || ctx->param_range(ctx, "warmup_steps", &w_lo, &w_hi) != 0)
        return;
    int has_batch = 0;
    for (size_t i = 0; i < ctx->n_params; i++)
        has_batch |= strcmp(ctx->param_names[i], "batch_size") == 0;
    if (has_batch && ctx->param_range(ctx, "batch_size", &b_lo, &b_hi) != 0)
        return;
    int64_t n = count_examples(b->train);
    if (b->max_train_examples > 0 && b->max_train_examples < n)
        n = b->max_train_examples;
    if (n <= 0 || !(b_hi >= 1) || !isfinite(b_hi))
        return;
    int64_t batch = (int64_t)b_hi;
    int64_t steps = (int64_t)b->epochs * ((n + batch - 1) / batch);
    if (w_hi > (double)steps)
        tunep_log(TUNE_LOG_WARN,
                  "%s: param_space.warmup_steps up to %g is beyond the %lld steps of a bert trial "
                  "with batch_size %lld (%d epoch(s) of %lld examples): such a trial never "
                  "reaches its full learning rate",
                  ctx->source ? ctx->source : "<string>", w_hi, (long long)steps, (long long)batch,
                  b->epochs, (long long)n);
}

/* The largest batch_size a trial can take: the space's bound, else Hugging Face's default. */
static int largest_batch(const struct tunep_trainer_check_ctx *ctx)
{
    double lo, hi;
    for (size_t i = 0; ctx && i < ctx->n_params; i++)
        if (strcmp(ctx->param_names[i], "batch_size") == 0)
            return ctx->param_range && ctx->param_range(ctx, "batch_size", &lo, &hi) == 0 &&
                           hi >= 1 && hi <= 4096
                       ? (int)hi
                       : 4096; /* unknown: the most a trial accepts */
    return 32;
}

static tune_status bert_check(void *vcfg, const struct tunep_trainer_check_ctx *ctx,
                              struct tunep_opt_error *e)
{
    struct bert_config *b = vcfg;
    if (b->hidden % b->heads != 0)
        return tunep_opt_fail(e, "model", 0, "hidden (%d) must be a multiple of heads (%d)",
                              b->hidden, b->heads);
    if (b->device_text) {
        tune_error perr = {0};
        if (tunep_device_parse(b->device_text, &b->device, &perr) != TUNE_OK)
            return tunep_opt_fail(
                e, "device", 0, "%s",
                perr.text[0] ? perr.text : "expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"");
        if (b->device.kind == TUNEP_DEVICE_CUDA && !TUNE_HAVE_CUDA)
            return tunep_opt_fail(e, "device", 0,
                                  "this build has no CUDA backend (configure with -Dcuda=enabled)");
    } else {
        b->device = (struct tunep_device){TUNEP_DEVICE_CPU, -1};
    }
    /* Process isolation forks each trial from the controller, and preparing a
     * GPU run initialises CUDA there first (the device count, the pool), which
     * a forked child cannot use (NVIDIA does not support CUDA across fork).
     * "auto" is refused too: it takes a GPU whenever the machine running the
     * sweep has one, which validating elsewhere cannot tell. */
    if (ctx && ctx->isolation_process && b->device.kind != TUNEP_DEVICE_CPU)
        return tunep_opt_fail(e, "device", 0,
                              "\"%s\" cannot be used with \"isolation\": \"process\" (CUDA "
                              "does not survive the fork of each trial); use \"isolation\": "
                              "\"thread\", or \"device\": \"cpu\"",
                              b->device_text);
    if (!b->train)
        return tunep_opt_fail(e, "", 0, "missing key 'train' (a path)");
    if (!b->dev)
        return tunep_opt_fail(e, "", 0, "missing key 'dev' (a path)");
    if (!b->vocab && b->checkpoint) {
        /* A Hugging Face folder carries its vocabulary. */
        if (!(b->vocab = tunep_asprintf("%s/vocab.txt", b->checkpoint)))
            return tunep_opt_oom(e);
        if (access(b->vocab, R_OK) != 0)
            return tunep_opt_fail(e, "", 0,
                                  "missing key 'vocab', and the checkpoint has no vocab.txt");
    }
    if (!b->vocab)
        return tunep_opt_fail(e, "", 0, "missing key 'vocab' (a path)");
    if (!b->checkpoint && b->max_seq_len > b->max_position)
        return tunep_opt_fail(e, "max_seq_len", 0, "%d is longer than model.max_position (%d)",
                              b->max_seq_len, b->max_position);
    b->largest_batch = largest_batch(ctx);
    if (ctx)
        warn_long_warmup(b, ctx);
    return TUNE_OK;
}

/* A dataset pair tokenized for one max_seq_len. */
struct cached_data {
    int max_seq_len;
    tunep_dataset *train, *dev;
};

struct bert_trainer {
    const struct bert_config *cfg; /* borrowed from the study's config */
    int threads;                   /* per trial */
    double resources_gpu;          /* resources_per_trial.gpu; 0: not given */
    pthread_mutex_t lock;          /* guards loading */
    tunep_tokenizer *tok;
    struct cached_data cache[MAX_CACHED_LENGTHS];
    int n_cache;
    tune_error load_err; /* a failed load is remembered: every trial reports it */
    int load_failed;
    int device_logged; /* "auto" said once why it runs on the CPU (under lock) */
    /* Which GPU a trial takes (prepare()): pinned >= 0 under MPI (the rank's own
     * GPU by its rank on the node), else with `placed` the engine's placement
     * packs trials by resources_per_trial.gpu (tune_trial_gpu()); neither when
     * trials run on the CPU. */
    int placed;
    int pinned;
    size_t gpu_mem_need; /* device memory a placed trial takes (prepare()) */
};

/* Threads per trial: the setting, else resources_per_trial.cpu, else the cores
 * shared among the trials that run at once instead of oversubscribing them. */
static int threads_per_trial(const struct bert_config *cfg, const struct tunep_trainer_env *env)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    int concurrency = env && env->concurrency > 0 ? env->concurrency : 1;
    int n = cfg->threads > 0                ? cfg->threads
            : env && env->resources_cpu > 0 ? env->resources_cpu
                                            : (int)(cores / concurrency);
    return n < 1 ? 1 : n;
}

static tune_status bert_create(const void *vcfg, const char *source, void **ret_state,
                               tune_error *err)
{
    (void)source;
    struct bert_trainer *t = tunep_calloc(1, sizeof *t);
    if (!t)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    if (pthread_mutex_init(&t->lock, NULL)) {
        tunep_free(t);
        return tunep_error_set(err, TUNE_ENOMEM, "cannot create a mutex");
    }
    t->cfg = vcfg;
    t->pinned = -1;
    t->threads = threads_per_trial(t->cfg, NULL);
    *ret_state = t;
    return TUNE_OK;
}

static void bert_free(void *state)
{
    struct bert_trainer *t = state;
    if (!t)
        return;
    for (int i = 0; i < t->n_cache; i++) {
        tunep_dataset_free(t->cache[i].train);
        tunep_dataset_free(t->cache[i].dev);
    }
    tunep_tokenizer_free(t->tok);
    pthread_mutex_destroy(&t->lock);
    tunep_free(t);
}

/* The datasets for max_seq_len, loading them on first use. */
static tune_status get_data(struct bert_trainer *t, int max_seq_len, struct cached_data **ret,
                            tune_error *err)
{
    tune_status st = TUNE_OK;
    pthread_mutex_lock(&t->lock);
    if (t->load_failed) {
        if (err)
            *err = t->load_err;
        st = t->load_err.code;
        goto out;
    }
    for (int i = 0; i < t->n_cache; i++)
        if (t->cache[i].max_seq_len == max_seq_len) {
            *ret = &t->cache[i];
            goto out;
        }
    if (t->n_cache == MAX_CACHED_LENGTHS) {
        st = tunep_error_set(err, TUNE_ECONFIG, "more than %d different max_seq_len values",
                             MAX_CACHED_LENGTHS);
        goto out;
    }
    if (!t->tok &&
        (st = tunep_tokenizer_new(t->cfg->vocab, t->cfg->lowercase, &t->tok, &t->load_err)))
        goto failed;
    struct tunep_tsv_options opt;
    tunep_tsv_options_default(&opt);
    opt.max_seq_len = (size_t)max_seq_len;
    struct cached_data *c = &t->cache[t->n_cache];
    c->max_seq_len = max_seq_len;
    if ((st = tunep_dataset_tsv_load(t->cfg->train, t->tok, &opt, &c->train, &t->load_err)))
        goto failed;
    /* The dev set must use the training set's labels. */
    opt.num_labels = tunep_dataset_num_labels(c->train);
    if ((st = tunep_dataset_tsv_load(t->cfg->dev, t->tok, &opt, &c->dev, &t->load_err))) {
        tunep_dataset_free(c->train);
        c->train = NULL;
        goto failed;
    }
    *ret = &t->cache[t->n_cache++];
    goto out;
failed:
    /* Data errors are the same for every trial: remember, so they are not retried. */
    t->load_failed = 1;
    if (err)
        *err = t->load_err;
out:
    pthread_mutex_unlock(&t->lock);
    return st;
}

/* The model's shapes: the checkpoint's config.json, else the trainer's "model" section. */
static tune_status model_config(const struct bert_trainer *t, const struct cached_data *data,
                                struct tunep_bert_config *mc, tune_error *err)
{
    const struct bert_config *cfg = t->cfg;
    tune_status st;
    tunep_bert_config_default(mc);
    if (cfg->checkpoint) {
        /* Shapes (and, unless the trial sets dropout, dropouts) from the checkpoint. */
        if ((st = tunep_bert_hf_config_load(cfg->checkpoint, mc, err)))
            return st;
        if (mc->V != (int)tunep_tokenizer_vocab_size(t->tok))
            return tunep_error_set_at(err, TUNE_ECONFIG, cfg->checkpoint, 0, 0,
                                      "vocab_size %d differs from the %zu entries of '%s'", mc->V,
                                      tunep_tokenizer_vocab_size(t->tok), cfg->vocab);
    } else {
        mc->L = cfg->layers;
        mc->C = cfg->hidden;
        mc->NH = cfg->heads;
        mc->I = cfg->intermediate;
        mc->P = cfg->max_position;
        mc->V = (int)tunep_tokenizer_vocab_size(t->tok);
    }
    mc->K = tunep_dataset_num_labels(data->train);
    if (mc->K < 2)
        mc->K = 2;
    return TUNE_OK;
}

/* Says once per study why "device": "auto" runs on the CPU (why: the reason). */
static void log_device_fallback(struct bert_trainer *t, const char *why)
{
    if (!why[0])
        return;
    pthread_mutex_lock(&t->lock);
    int first = !t->device_logged;
    t->device_logged = 1;
    pthread_mutex_unlock(&t->lock);
    if (first)
        tunep_log(TUNE_LOG_WARN, "trainer.device \"auto\": %s; trials run on the CPU", why);
}

static double gpu_share(const struct bert_trainer *t)
{
    return t->resources_gpu > 0 ? t->resources_gpu : 1.0;
}

static tune_status bert_prepare(void *state, const struct tunep_trainer_env *env, tune_error *err)
{
    struct bert_trainer *t = state;
    t->threads = threads_per_trial(t->cfg, env);
    t->resources_gpu = env->resources_gpu;
    /* A "cuda" device that is not there stops the run before any trial. */
    int cuda = -1;
    char why[300];
    tune_status st = tunep_device_resolve(&t->cfg->device, -1, &cuda, why, sizeof why, err);
    if (st)
        return st;
    log_device_fallback(t, why);
    if (cuda >= 0 && t->cfg->device.index < 0 && t->resources_gpu != 0 && !t->placed) {
        /* An MPI worker rank takes its own GPU by its rank on the node; else the engine packs
         * trials onto the GPUs by the share resources() reports. */
        if (env->local_rank >= 0) {
            int n = 0;
            if ((st = tunep_cuda_device_count(&n, err)))
                return st;
            t->pinned = n > 0 ? env->local_rank % n : -1;
        } else {
            t->placed = 1;
        }
    }
    struct cached_data *data;
    if ((st = get_data(t, t->cfg->max_seq_len, &data, err)))
        return st;
    if (!t->placed)
        return TUNE_OK;
    /* What the largest trial holds on its GPU: its batch (or the evaluation's) at the longest
     * sequences, weights, gradients, AdamW state, activations and the cuBLAS workspace. */
    struct tunep_bert_config mc;
    struct tunep_bert_memory mem;
    int batch = t->cfg->largest_batch > t->cfg->eval_batch_size ? t->cfg->largest_batch
                                                                : t->cfg->eval_batch_size;
    if ((st = model_config(t, data, &mc, err)) ||
        (st =
             tunep_bert_memory_estimate(&mc, batch, t->cfg->max_seq_len, sizeof(float), &mem, err)))
        return st;
    t->gpu_mem_need = mem.total;
    return TUNE_OK;
}

static size_t bert_gpu_mem_need(const void *state)
{
    const struct bert_trainer *t = state;
    return t->gpu_mem_need;
}

static void bert_resources(const void *state, const struct tunep_trainer_env *env,
                           struct tunep_trial_resources *ret)
{
    const struct bert_trainer *t = state;
    (void)env;
    ret->cpu_threads = t->threads;
    ret->gpu_share = t->placed ? gpu_share(t) : 0;
}

/* The engine checks a GPU's free memory with this before it places a trial there. */
static tune_status bert_gpu_mem(int device, size_t *ret_free, size_t *ret_total, tune_error *err)
{
    return tunep_cuda_mem_info(device, ret_free, ret_total, err);
}

/* get_linear_schedule_with_warmup's multiplier for the update with index s (0-based). */
static double lr_factor(int64_t s, int64_t warmup, int64_t total)
{
    if (s < warmup)
        return (double)s / (double)(warmup > 1 ? warmup : 1);
    double left = (double)(total - s) / (double)(total - warmup > 1 ? total - warmup : 1);
    return left > 0 ? left : 0;
}

struct eval_result {
    double accuracy, loss;
};

/* Accuracy and mean loss on (the first max_examples of) the dev set. */
static tune_status evaluate(struct tunep_bert *m, const tunep_dataset *dev, size_t max_examples,
                            int batch_size, size_t *order, struct tunep_batch *b, float *logits,
                            int K, struct eval_result *ret, tune_error *err)
{
    size_t n = tunep_dataset_size(dev);
    if (max_examples > 0 && max_examples < n)
        n = max_examples;
    size_t correct = 0;
    double loss_sum = 0;
    tune_status st;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t start = 0; start < n; start += (size_t)batch_size) {
        size_t count = n - start < (size_t)batch_size ? n - start : (size_t)batch_size;
        if ((st = tunep_dataset_batch(dev, order + start, count, b, err)))
            return st;
        struct tunep_bert_batch bb = {(int)b->B,         (int)b->T,         b->input_ids,
                                      b->token_type_ids, b->attention_mask, b->labels};
        double loss;
        if ((st = tunep_bert_forward(m, &bb, 0, 0, &loss, err)) ||
            (st = tunep_bert_logits(m, logits, b->B * (size_t)K, err)))
            return st;
        loss_sum += loss * (double)count;
        for (size_t r = 0; r < count; r++) {
            int best = 0;
            for (int k = 1; k < K; k++)
                if (logits[r * (size_t)K + (size_t)k] > logits[r * (size_t)K + (size_t)best])
                    best = k;
            correct += best == b->labels[r];
        }
    }
    ret->accuracy = n ? (double)correct / (double)n : 0;
    ret->loss = n ? loss_sum / (double)n : 0;
    return TUNE_OK;
}

/*
 * Checkpoints go through the engine as bytes (tune_trial_save_checkpoint),
 * so the trainer state (tunep_bert_state_save: weights, AdamW moments, the
 * step) is written to a temporary file and read back. The "trainer" metadata
 * holds the number of batches done, so that a restored run skips exactly
 * those and draws the same dropout masks as one that never stopped.
 */
static tune_status temp_path(char *buf, size_t size, tune_error *err)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, size, "%s/tune-bert-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(buf);
    if (fd < 0)
        return tunep_error_set_at(err, TUNE_EIO, buf, 0, 0, "cannot create a temporary file");
    close(fd);
    return TUNE_OK;
}

static tune_status save_state(tune_trial *trial, const struct tunep_bert *m, int64_t step,
                              tune_error *err)
{
    char path[4096], meta[64];
    tune_status st = temp_path(path, sizeof path, err);
    if (st)
        return st;
    snprintf(meta, sizeof meta, "{\"batches_done\": %lld}", (long long)step);
    char *bytes = NULL;
    size_t size = 0;
    if (!(st = tunep_bert_state_save(m, path, meta, err)) &&
        !(st = tunep_read_file(path, 0, &bytes, &size, err)))
        st = tune_trial_save_checkpoint(trial, bytes, size, err);
    tunep_free(bytes);
    unlink(path);
    return st;
}

/* Restores the trial's checkpoint into m; *ret_step = batches done (0 when there is none). */
static tune_status load_state(tune_trial *trial, struct tunep_bert *m, int64_t *ret_step,
                              tune_error *err)
{
    void *bytes = NULL;
    size_t size = 0;
    *ret_step = 0;
    tune_status st = tune_trial_load_checkpoint(trial, &bytes, &size, err);
    if (st == TUNE_ENOTFOUND)
        return TUNE_OK;
    if (st)
        return st;
    char path[4096];
    char *meta = NULL;
    if (!(st = temp_path(path, sizeof path, err))) {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(bytes, 1, size, f) != size)
            st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot write");
        if (f && fclose(f) != 0 && !st)
            st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot write");
        if (!st)
            st = tunep_bert_state_load(m, path, &meta, err);
        unlink(path);
    }
    tune_free(bytes);
    if (!st && meta) {
        const char *p = strstr(meta, "\"batches_done\":");
        if (p)
            *ret_step = strtoll(p + strlen("\"batches_done\":"), NULL, 10);
    }
    tune_free(meta);
    return st;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static tune_status bert_objective(tune_trial *trial, void *user_data)
{
    struct bert_trainer *t = user_data;
    const struct bert_config *cfg = t->cfg;
    tune_error err = {0};
    struct tunep_backend *be = NULL;
    /* The GPU the engine placed this attempt on (it gives it back when the attempt ends). */
    int gpu = t->placed ? tune_trial_gpu(trial, 0) : -1;
    struct tunep_bert *m = NULL;
    size_t *order = NULL, *eval_order = NULL;
    float *logits = NULL;
    struct tunep_batch batch;
    tunep_batch_init(&batch);
    tune_status st;

    /* Hyperparameters: the trial's configuration, with Hugging Face's defaults. */
    double lr = tune_trial_get_double_or(trial, "lr", 5e-5);
    int64_t batch_size = tune_trial_get_int_or(trial, "batch_size", 32);
    double weight_decay = tune_trial_get_double_or(trial, "weight_decay", 0.01);
    double dropout = tune_trial_get_double_or(trial, "dropout", 0.1);
    double max_grad_norm = tune_trial_get_double_or(trial, "max_grad_norm", 1.0);
    int64_t max_seq_len = tune_trial_get_int_or(trial, "max_seq_len", cfg->max_seq_len);
    uint64_t seed = (uint64_t)tune_trial_get_int_or(trial, "seed", (int64_t)tune_trial_seed(trial));
    if (!(lr > 0) || batch_size < 1 || batch_size > 4096 || !(dropout >= 0 && dropout < 1) ||
        !(weight_decay >= 0) || max_seq_len < 8 || max_seq_len > cfg->max_seq_len) {
        tune_trial_set_error(trial,
                             "invalid hyperparameters: lr %g, batch_size %lld, dropout %g, "
                             "weight_decay %g, max_seq_len %lld (at most trainer.max_seq_len %d)",
                             lr, (long long)batch_size, dropout, weight_decay,
                             (long long)max_seq_len, cfg->max_seq_len);
        return TUNE_EINVAL;
    }

    struct cached_data *data = NULL;
    if ((st = get_data(t, (int)max_seq_len, &data, &err)))
        goto fail;
    size_t n_train = tunep_dataset_size(data->train);
    if (cfg->max_train_examples > 0 && (size_t)cfg->max_train_examples < n_train)
        n_train = (size_t)cfg->max_train_examples;
    if (n_train == 0) {
        st = tunep_error_set(&err, TUNE_ECONFIG, "'%s' has no examples", cfg->train);
        goto fail;
    }

    struct tunep_bert_config mc;
    if ((st = model_config(t, data, &mc, &err)))
        goto fail;
    if (cfg->checkpoint && max_seq_len > mc.P) {
        st = tunep_error_set_at(&err, TUNE_ECONFIG, cfg->checkpoint, 0, 0,
                                "max_seq_len %lld exceeds max_position_embeddings %d",
                                (long long)max_seq_len, mc.P);
        goto fail;
    }
    if (!cfg->checkpoint || tune_trial_get_double_or(trial, "dropout", -1) >= 0) {
        mc.hidden_dropout = dropout;
        mc.attn_dropout = dropout;
    }
    int B_max = (int)(batch_size > cfg->eval_batch_size ? batch_size : cfg->eval_batch_size);
    /* The device: cfg->device ("cpu", "auto", "cuda[:N]"); a missing "cuda"
     * device fails the trial with the reason (prepare() already stopped a
     * whole run). The engine's placement gives the device index. */
    char why[300] = "";
    /* resources_per_trial {"gpu": 0} keeps "auto" trials on the CPU, as in Ray. */
    const struct tunep_device cpu_only = {TUNEP_DEVICE_CPU, -1};
    const struct tunep_device *device =
        t->resources_gpu == 0 && cfg->device.kind == TUNEP_DEVICE_AUTO ? &cpu_only : &cfg->device;
    if ((st = tunep_device_open(device, gpu >= 0 ? gpu : t->pinned, t->threads, cfg->tf32, &be, why,
                                sizeof why, &err)) ||
        (st = tunep_bert_new(&mc, B_max, (int)max_seq_len, be, &m, &err)) ||
        (st = tunep_bert_init_weights(m, seed, &err)) ||
        (cfg->checkpoint && (st = tunep_bert_load_hf(m, cfg->checkpoint, 0, &err))))
        goto fail;
    log_device_fallback(t, why);
    int64_t resume_step = 0; /* batches a restored checkpoint has done already */
    if ((st = load_state(trial, m, &resume_step, &err)))
        goto fail;

    size_t n_dev = tunep_dataset_size(data->dev);
    order = tunep_malloc(tunep_dataset_size(data->train) * sizeof *order);
    eval_order = tunep_malloc((n_dev ? n_dev : 1) * sizeof *eval_order);
    logits = tunep_malloc((size_t)B_max * (size_t)mc.K * sizeof *logits);
    if (!order || !eval_order || !logits) {
        st = tunep_error_set(&err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }

    int64_t steps_per_epoch = (int64_t)((n_train + (size_t)batch_size - 1) / (size_t)batch_size);
    int64_t total = steps_per_epoch * cfg->epochs;
    int64_t warmup = tune_trial_get_int_or(trial, "warmup_steps", -1);
    if (warmup < 0)
        warmup =
            (int64_t)ceil(tune_trial_get_double_or(trial, "warmup_ratio", 0.0) * (double)total);
    int64_t eval_every = cfg->eval_every > 0 ? cfg->eval_every : steps_per_epoch;
    struct tunep_adamw opt;
    tunep_adamw_default(&opt);
    opt.weight_decay = weight_decay;
    opt.clip_norm = max_grad_norm;

    int64_t step = 0;
    double train_loss_sum = 0, t_window = now_s();
    size_t train_loss_n = 0, examples_window = 0;
    for (int epoch = 0; epoch < cfg->epochs; epoch++) {
        if (step + steps_per_epoch <= resume_step) { /* a whole epoch done before the checkpoint */
            step += steps_per_epoch;
            continue;
        }
        if ((st = tunep_dataset_order(data->train, seed, (uint64_t)epoch, 1, order, &err)))
            goto fail;
        /* With max_train_examples, each epoch takes the first n of its own shuffle. */
        for (size_t start = 0; start < n_train; start += (size_t)batch_size) {
            if (step < resume_step) {
                step++;
                continue;
            }
            size_t count =
                n_train - start < (size_t)batch_size ? n_train - start : (size_t)batch_size;
            if ((st = tunep_dataset_batch(data->train, order + start, count, &batch, &err)))
                goto fail;
            struct tunep_bert_batch bb = {(int)batch.B,         (int)batch.T,
                                          batch.input_ids,      batch.token_type_ids,
                                          batch.attention_mask, batch.labels};
            double loss;
            uint64_t drop_seed =
                tunep_splitmix64(seed ^ (uint64_t)(step + 1) * 0x9e3779b97f4a7c15ULL);
            if ((st = tunep_bert_zero_grad(m, &err)) ||
                (st = tunep_bert_forward(m, &bb, 1, drop_seed, &loss, &err)) ||
                (st = tunep_bert_backward(m, &err)) ||
                (st = tunep_bert_adamw_step(m, &opt, lr * lr_factor(step, warmup, total), NULL,
                                            &err))) {
                if (st == TUNE_ENUMERIC)
                    tunep_error_set(&err, st, "loss or gradient is not finite at step %lld",
                                    (long long)step + 1);
                goto fail;
            }
            step++;
            train_loss_sum += loss * (double)count;
            train_loss_n += count;
            examples_window += count;
            int last = epoch == cfg->epochs - 1 && start + (size_t)batch_size >= n_train;
            if (step % eval_every != 0 && !last)
                continue;

            double train_s = now_s() - t_window;
            struct eval_result ev;
            if ((st = evaluate(m, data->dev, (size_t)cfg->max_eval_examples, cfg->eval_batch_size,
                               eval_order, &batch, logits, mc.K, &ev, &err)))
                goto fail;
            const char *names[] = {"epoch",    "step",       "val_accuracy",
                                   "val_loss", "train_loss", "examples_per_s"};
            double values[] = {(double)step / (double)steps_per_epoch,
                               (double)step,
                               ev.accuracy,
                               ev.loss,
                               train_loss_n ? train_loss_sum / (double)train_loss_n : (double)NAN,
                               train_s > 0 ? (double)examples_window / train_s : 0.0};
            st = tune_trial_report(trial, sizeof names / sizeof *names, names, values, NULL);
            if ((st == TUNE_OK || st == TUNE_ESTOP) && tune_trial_checkpoint_wanted(trial)) {
                tune_status cs = save_state(trial, m, step, &err);
                if (cs != TUNE_OK && cs != TUNE_EUNSUPPORTED) {
                    st = cs;
                    goto fail;
                }
            }
            if (st == TUNE_ESTOP) {
                st = TUNE_OK;
                goto out;
            }
            if (st)
                goto out;
            train_loss_sum = 0;
            train_loss_n = 0;
            examples_window = 0;
            t_window = now_s();
        }
    }
    st = TUNE_OK;
    goto out;
fail : {
    char buf[700];
    tune_trial_set_error(trial, "%s", tune_error_format(&err, buf, sizeof buf));
}
out:
    tunep_batch_done(&batch);
    tunep_free(order);
    tunep_free(eval_order);
    tunep_free(logits);
    tunep_bert_free(m);
    tunep_device_close(be);
    return st;
}

/* One report per epoch without eval_every; with it the count depends on the
 * data's size and the trial's batch_size, unknown until the data is read. */
static int64_t bert_max_iterations(const void *config)
{
    const struct bert_config *cfg = config;
    return cfg->eval_every > 0 ? 0 : cfg->epochs;
}

const struct tunep_trainer_type tunep_trainer_bert = {
    .name = "bert",
    .options = bert_options,
    .config_size = sizeof(struct bert_config),
    .check = bert_check,
    .create = bert_create,
    .prepare = bert_prepare,
    .objective = bert_objective,
    .resources = bert_resources,
    .free = bert_free,
    .max_iterations = bert_max_iterations,
    .gpu_mem = bert_gpu_mem,
    .gpu_mem_need = bert_gpu_mem_need,
    .gpu_broken = tunep_cuda_device_broken,
    .can_checkpoint = 1,
    .uses_cpu = 1,
    .uses_gpu = 1,
};
