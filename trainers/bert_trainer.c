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
#include "models/device/device.h"
#include "models/text/dataset_tsv.h"
#include "models/text/tokenizer.h"
#include "config/config.h"
#include "models/device/gpu_pool.h"

#define MAX_CACHED_LENGTHS 8

/* A dataset pair tokenized for one max_seq_len. */
struct cached_data {
    int max_seq_len;
    tunep_dataset *train, *dev;
};

struct tunep_bert_trainer {
    const struct tunep_bert_trainer_config *cfg; /* borrowed from the study's config */
    int threads;                                 /* per trial */
    pthread_mutex_t lock;                        /* guards loading */
    tunep_tokenizer *tok;
    struct cached_data cache[MAX_CACHED_LENGTHS];
    int n_cache;
    tune_error load_err; /* a failed load is remembered: every trial reports it */
    int load_failed;
    int device_logged; /* "auto" said once why it runs on the CPU (under lock) */
    /* Which GPU a trial takes (prepare()): pinned >= 0 under MPI (the rank's own
     * GPU by its rank on the node), else the pool packs trials by
     * resources_per_trial.gpu; neither when trials run on the CPU. */
    struct tunep_gpu_pool *pool;
    int pinned;
};

tune_status tunep_bert_trainer_new(const struct tunep_bert_trainer_config *cfg, int concurrency,
                                   struct tunep_bert_trainer **ret, tune_error *err)
{
    struct tunep_bert_trainer *t = tunep_calloc(1, sizeof *t);
    if (!t)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    if (pthread_mutex_init(&t->lock, NULL)) {
        tunep_free(t);
        return tunep_error_set(err, TUNE_ENOMEM, "cannot create a mutex");
    }
    t->cfg = cfg;
    t->pinned = -1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    /* Concurrent trials share the cores instead of oversubscribing them. */
    t->threads = cfg->threads > 0         ? cfg->threads
                 : cfg->resources_cpu > 0 ? cfg->resources_cpu
                                          : (int)(cores / (concurrency > 0 ? concurrency : 1));
    if (t->threads < 1)
        t->threads = 1;
    *ret = t;
    return TUNE_OK;
}

void tunep_bert_trainer_free(struct tunep_bert_trainer *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_cache; i++) {
        tunep_dataset_free(t->cache[i].train);
        tunep_dataset_free(t->cache[i].dev);
    }
    tunep_tokenizer_free(t->tok);
    tunep_gpu_pool_free(t->pool);
    pthread_mutex_destroy(&t->lock);
    tunep_free(t);
}

/* The datasets for max_seq_len, loading them on first use. */
static tune_status get_data(struct tunep_bert_trainer *t, int max_seq_len, struct cached_data **ret,
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
    if (!t->tok && (st = tunep_tokenizer_new(t->cfg->vocab, t->cfg->lowercase, &t->tok, &t->load_err)))
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

/* Says once per study why "device": "auto" runs on the CPU (why: the reason). */
static void log_device_fallback(struct tunep_bert_trainer *t, const char *why)
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

tune_status tunep_bert_trainer_prepare(struct tunep_bert_trainer *t, tune_error *err)
{
    /* A "cuda" device that is not there stops the run before any trial. */
    int cuda = -1;
    char why[300];
    tune_status st = tunep_device_resolve(&t->cfg->device, -1, &cuda, why, sizeof why, err);
    if (st)
        return st;
    log_device_fallback(t, why);
    if (cuda >= 0 && t->cfg->device.index < 0 && t->cfg->resources_gpu != 0 && !t->pool) {
        /* Under MPI each rank on a node takes its own GPU; else trials are packed. */
        const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
        if (!lr)
            lr = getenv("SLURM_LOCALID");
        struct tunep_gpu_pool_options opt = {0};
        if ((st = tunep_gpu_pool_new(&opt, &t->pool, err)))
            return st;
        if (lr && getenv("TUNE_MPI_WORKER")) {
            t->pinned = atoi(lr) % tunep_gpu_pool_device_count(t->pool);
            tunep_gpu_pool_free(t->pool);
            t->pool = NULL;
        }
    }
    struct cached_data *data;
    return get_data(t, t->cfg->max_seq_len, &data, err);
}

static double gpu_share(const struct tunep_bert_trainer_config *cfg)
{
    return cfg->resources_gpu > 0 ? cfg->resources_gpu : 1.0;
}

/*
 * A share of a GPU from the pool for this trial (*ret_gpu = -1 when trials
 * do not use the pool). When none is free now, the trial waits for one: the
 * pool answers "wait" only while other trials hold GPUs, so a release comes.
 */
static tune_status take_gpu(struct tunep_bert_trainer *t, int *ret_gpu, tune_error *err)
{
    *ret_gpu = -1;
    if (!t->pool)
        return TUNE_OK;
    for (;;) {
        int dev = -1;
        tune_status st = tunep_gpu_pool_acquire(t->pool, gpu_share(t->cfg), 0, &dev, err);
        if (st || dev >= 0) {
            *ret_gpu = dev;
            return st;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
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
        struct tunep_bert_batch bb = {(int)b->B,         (int)b->T, b->input_ids, b->token_type_ids,
                                      b->attention_mask, b->labels};
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

tune_status tunep_bert_objective(tune_trial *trial, void *user_data)
{
    struct tunep_bert_trainer *t = user_data;
    const struct tunep_bert_trainer_config *cfg = t->cfg;
    tune_error err = {0};
    struct tunep_backend *be = NULL;
    int gpu = -1; /* the pool's GPU for this trial, released at the end */
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
    tunep_bert_config_default(&mc);
    if (cfg->checkpoint) {
        /* Shapes (and, unless the trial sets dropout, dropouts) from the checkpoint. */
        if ((st = tunep_bert_hf_config_load(cfg->checkpoint, &mc, &err)))
            goto fail;
        if (mc.V != (int)tunep_tokenizer_vocab_size(t->tok)) {
            st = tunep_error_set_at(&err, TUNE_ECONFIG, cfg->checkpoint, 0, 0,
                                    "vocab_size %d differs from the %zu entries of '%s'", mc.V,
                                    tunep_tokenizer_vocab_size(t->tok), cfg->vocab);
            goto fail;
        }
        if (max_seq_len > mc.P) {
            st = tunep_error_set_at(&err, TUNE_ECONFIG, cfg->checkpoint, 0, 0,
                                    "max_seq_len %lld exceeds max_position_embeddings %d",
                                    (long long)max_seq_len, mc.P);
            goto fail;
        }
    } else {
        mc.L = cfg->layers;
        mc.C = cfg->hidden;
        mc.NH = cfg->heads;
        mc.I = cfg->intermediate;
        mc.P = cfg->max_position;
        mc.V = (int)tunep_tokenizer_vocab_size(t->tok);
    }
    mc.K = tunep_dataset_num_labels(data->train);
    if (mc.K < 2)
        mc.K = 2;
    if (!cfg->checkpoint || tune_trial_get_double_or(trial, "dropout", -1) >= 0) {
        mc.hidden_dropout = dropout;
        mc.attn_dropout = dropout;
    }
    int B_max = (int)(batch_size > cfg->eval_batch_size ? batch_size : cfg->eval_batch_size);
    /* The device: cfg->device ("cpu", "auto", "cuda[:N]"); a missing "cuda"
     * device fails the trial with the reason (prepare() already stopped a
     * whole run). The GPU pool's per-trial device will replace the -1. */
    char why[300] = "";
    if ((st = take_gpu(t, &gpu, &err)))
        goto fail;
    /* resources_per_trial {"gpu": 0} keeps "auto" trials on the CPU, as in Ray. */
    const struct tunep_device cpu_only = {TUNEP_DEVICE_CPU, -1};
    const struct tunep_device *device =
        cfg->resources_gpu == 0 && cfg->device.kind == TUNEP_DEVICE_AUTO ? &cpu_only : &cfg->device;
    if ((st = tunep_device_open(device, gpu >= 0 ? gpu : t->pinned, t->threads, cfg->tf32, &be,
                                why, sizeof why, &err)) ||
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
        warmup = (int64_t)ceil(tune_trial_get_double_or(trial, "warmup_ratio", 0.0) * (double)total);
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
            size_t count = n_train - start < (size_t)batch_size ? n_train - start
                                                                 : (size_t)batch_size;
            if ((st = tunep_dataset_batch(data->train, order + start, count, &batch, &err)))
                goto fail;
            struct tunep_bert_batch bb = {(int)batch.B,         (int)batch.T,
                                          batch.input_ids,      batch.token_type_ids,
                                          batch.attention_mask, batch.labels};
            double loss;
            uint64_t drop_seed = tunep_splitmix64(seed ^ (uint64_t)(step + 1) * 0x9e3779b97f4a7c15ULL);
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
            const char *names[] = {"epoch",      "step",       "val_accuracy",
                                   "val_loss",   "train_loss", "examples_per_s"};
            double values[] = {(double)step / (double)steps_per_epoch,
                               (double)step,
                               ev.accuracy,
                               ev.loss,
                               train_loss_n ? train_loss_sum / (double)train_loss_n : (double)NAN,
                               train_s > 0 ? (double)examples_window / train_s : 0.0};
            st = tune_trial_report(trial, sizeof names / sizeof *names, names, values);
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
fail: {
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
    if (gpu >= 0)
        tunep_gpu_pool_release(t->pool, gpu, gpu_share(cfg));
    return st;
}
