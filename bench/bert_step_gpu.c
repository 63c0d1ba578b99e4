/*
 * bert_step_gpu.c - BERT fine-tuning steps on the CUDA backend: one trial's
 * step time, or the throughput of N trials sharing the GPU.
 *
 *   bench_bert_step_gpu [--config tiny|mini|small|medium|base] [--batch 32] [--seq 128]
 *                       [--steps 20] [--warmup 5] [--tf32] [--device 0]
 *   bench_bert_step_gpu --concurrent N --seconds S [--config tiny] [--batch 32] [--seq 128] ...
 *
 * The step is bench/bert_step.c's and ../shared/bench/peers/torch_bert_step.py's
 * (and bench/torch_gpu_step.py's on the GPU): zero_grad, forward with dropout
 * 0.1 and mean cross-entropy, backward, AdamW (weight decay 0.01 where the
 * tensor table says decay) with global-norm clipping at 1.0; fp32 (or TF32
 * GEMMs with --tf32), vocab 30522, 2 labels, random ids with [CLS] = 101
 * first, segment 0 then 1, no padding, random labels. A step is timed from
 * its zero_grad until the GPU has finished it (the backend's sync).
 * Reported: median and min ms/step after --warmup, examples/s, tokens/s,
 * TFLOP/s with the peers' matmul FLOP count (train step = 3 x forward,
 * forward = T*L*(8H^2 + 4HI + 4SH) + B*(2H^2 + 2HC), T = B*S tokens), and the
 * device memory the model took (free memory before minus after its first step).
 *
 * --concurrent N: N trials at once in this process, one thread, one backend
 * (stream, cuBLAS handle) and one model each, as a sweep with N concurrent
 * trials on one GPU runs them; after every trial's warm-up they all step for
 * --seconds, and the total examples/s and each trial's are reported
 * (bench/gpu_util.sh samples the GPU's utilisation meanwhile).
 *
 * Output: one JSON object per line on stdout; errors on stderr, exit 1.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tune.h"
#include "base/base.h"
#include "models/bert/bert.h"
#include "models/cuda/cuda_backend.h"

#define VOCAB      30522
#define MAX_POS    512
#define LABELS     2
#define MAX_STEPS  10000
#define MAX_TRIALS 64

struct named_config {
    const char *name;
    int L, H, A, I;
};

/* The BERT miniatures (Turc et al. 2019) and bert-base. */
static const struct named_config configs[] = {
    {"tiny", 2, 128, 2, 512},    {"mini", 4, 256, 4, 1024},   {"small", 4, 512, 8, 2048},
    {"medium", 8, 512, 8, 2048}, {"base", 12, 768, 12, 3072},
};

struct opts {
    const struct named_config *nc;
    int B, S, steps, warmup, tf32, device, concurrent;
    double seconds;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds since the Unix epoch, to line the timed window up with
 * nvidia-smi's timestamps (bench/gpu_util.sh). */
static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double train_flops(const struct named_config *nc, int B, int S)
{
    double T = (double)B * S, H = nc->H, I = nc->I, L = nc->L;
    double fwd = T * L * (8 * H * H + 4 * H * I + 4 * S * H) + B * (2 * H * H + 2 * H * LABELS);
    return 3 * fwd;
}

/* One trial: its backend, model and batch. */
struct trial {
    struct tunep_backend *be;
    struct tunep_bert *m;
    int32_t *ids, *types, *labels;
    struct tunep_bert_batch batch;
    struct tunep_adamw opt;
    uint64_t step;
};

static void trial_free(struct trial *t)
{
    tunep_bert_free(t->m);
    tunep_cuda_backend_free(t->be);
    free(t->ids);
    free(t->types);
    free(t->labels);
    memset(t, 0, sizeof *t);
}

static tune_status trial_new(const struct opts *o, uint64_t seed, struct trial *t, tune_error *err)
{
    memset(t, 0, sizeof *t);
    struct tunep_cuda_options co = {.device = o->device, .tf32 = o->tf32};
    tune_status st = tunep_cuda_backend_new(&co, &t->be, err);
    if (st)
        return st;
    struct tunep_bert_config cfg;
    tunep_bert_config_default(&cfg);
    cfg.L = o->nc->L;
    cfg.C = o->nc->H;
    cfg.NH = o->nc->A;
    cfg.I = o->nc->I;
    cfg.P = MAX_POS;
    cfg.V = VOCAB;
    cfg.K = LABELS;
    cfg.hidden_dropout = cfg.attn_dropout = 0.1;
    size_t ntok = (size_t)o->B * (size_t)o->S;
    t->ids = malloc(ntok * sizeof *t->ids);
    t->types = malloc(ntok * sizeof *t->types);
    t->labels = malloc((size_t)o->B * sizeof *t->labels);
    if (!t->ids || !t->types || !t->labels)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < ntok; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t pos = i % (size_t)o->S;
        t->ids[i] = pos == 0 ? 101 : 1000 + (int32_t)(x % (VOCAB - 1000));
        t->types[i] = pos >= (size_t)o->S / 2;
    }
    for (int b = 0; b < o->B; b++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        t->labels[b] = (int32_t)(x % LABELS);
    }
    t->batch = (struct tunep_bert_batch){o->B, o->S, t->ids, t->types, NULL, t->labels};
    tunep_adamw_default(&t->opt);
    t->opt.weight_decay = 0.01;
    t->opt.clip_norm = 1.0;
    if ((st = tunep_bert_new(&cfg, o->B, o->S, t->be, &t->m, err)) ||
        (st = tunep_bert_init_weights(t->m, seed, err)))
        return st;
    return TUNE_OK;
}

/* One training step, finished on the GPU when it returns. */
static tune_status trial_step(struct trial *t, double *ret_loss, tune_error *err)
{
    double loss = 0;
    tune_status st;
    if ((st = tunep_bert_zero_grad(t->m, err)) ||
        (st = tunep_bert_forward(t->m, &t->batch, 1, ++t->step, &loss, err)) ||
        (st = tunep_bert_backward(t->m, err)) ||
        (st = tunep_bert_adamw_step(t->m, &t->opt, 2e-5, NULL, err)) ||
        (st = t->be->sync(t->be->ctx, err)))
        return st;
    if (ret_loss)
        *ret_loss = loss;
    return TUNE_OK;
}

static int fail(const char *what, const tune_error *err)
{
    char buf[800];
    fprintf(stderr, "bench_bert_step_gpu: %s: %s\n", what, tune_error_format(err, buf, sizeof buf));
    return 1;
}

static void print_device(int device)
{
    char name[256] = "";
    size_t fr = 0, tot = 0;
    tunep_cuda_device_name(device, name, sizeof name, NULL);
    tunep_cuda_mem_info(device, &fr, &tot, NULL);
    printf("\"device\": \"%s\", \"device_memory_mib\": %.0f", name, (double)tot / 1048576.0);
}

static int run_single(const struct opts *o)
{
    tune_error err = {0};
    size_t free0 = 0, free1 = 0, tot = 0;
    if (tunep_cuda_mem_info(o->device, &free0, &tot, &err))
        return fail("device", &err);
    struct trial t;
    if (trial_new(o, 42, &t, &err)) {
        trial_free(&t);
        return fail("model", &err);
    }
    static double ms[MAX_STEPS];
    double loss = 0;
    for (int s = 0; s < o->warmup + o->steps; s++) {
        double t0 = now();
        if (trial_step(&t, &loss, &err)) {
            trial_free(&t);
            return fail("step", &err);
        }
        if (s == 0)
            tunep_cuda_mem_info(o->device, &free1, &tot, NULL);
        if (s >= o->warmup)
            ms[s - o->warmup] = (now() - t0) * 1e3;
    }
    qsort(ms, (size_t)o->steps, sizeof ms[0], cmp_double);
    double med = o->steps % 2 ? ms[o->steps / 2] : 0.5 * (ms[o->steps / 2 - 1] + ms[o->steps / 2]);
    double tokens = (double)o->B * o->S;
    printf("{\"bench\": \"tune_bert_train_step_gpu\", \"engine\": \"tune\", \"config\": \"%s\", "
           "\"precision\": \"%s\", \"batch\": %d, \"seq\": %d, \"steps\": %d, "
           "\"median_ms\": %.3f, \"min_ms\": %.3f, \"examples_per_s\": %.1f, "
           "\"tokens_per_s\": %.0f, \"tflops\": %.2f, \"model_memory_mib\": %.0f, "
           "\"last_loss\": %.5f, ",
           o->nc->name, o->tf32 ? "tf32" : "fp32", o->B, o->S, o->steps, med, ms[0],
           o->B / (med * 1e-3), tokens / (med * 1e-3), train_flops(o->nc, o->B, o->S) / (med * 1e9),
           free0 > free1 ? (double)(free0 - free1) / 1048576.0 : 0.0, loss);
    print_device(o->device);
    printf("}\n");
    trial_free(&t);
    return 0;
}

/* ---- N trials at once ------------------------------------------------------ */

struct shared {
    const struct opts *o;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ready, failed;
    double t_start, t_end; /* the common timed window */
    double wall_start;
};

struct worker {
    struct shared *sh;
    int index;
    struct trial t;
    long steps;
    tune_error err;
    tune_status st;
};

static void *worker_main(void *v)
{
    struct worker *w = v;
    struct shared *sh = w->sh;
    const struct opts *o = sh->o;
    w->st = trial_new(o, 1000 + (uint64_t)w->index, &w->t, &w->err);
    for (int s = 0; s < o->warmup && !w->st; s++)
        w->st = trial_step(&w->t, NULL, &w->err);
    /* every trial is warm before the window opens */
    pthread_mutex_lock(&sh->lock);
    sh->ready++;
    sh->failed |= w->st != TUNE_OK;
    if (sh->ready == o->concurrent) {
        sh->t_start = now();
        sh->wall_start = wall();
        sh->t_end = sh->t_start + o->seconds;
        pthread_cond_broadcast(&sh->cond);
    }
    while (sh->ready < o->concurrent)
        pthread_cond_wait(&sh->cond, &sh->lock);
    double t_end = sh->t_end;
    int failed = sh->failed;
    pthread_mutex_unlock(&sh->lock);
    while (!failed && !w->st && now() < t_end) {
        w->st = trial_step(&w->t, NULL, &w->err);
        w->steps += w->st == TUNE_OK;
    }
    return NULL;
}

static int run_concurrent(const struct opts *o)
{
    struct shared sh = {.o = o};
    pthread_mutex_init(&sh.lock, NULL);
    pthread_cond_init(&sh.cond, NULL);
    struct worker *w = calloc((size_t)o->concurrent, sizeof *w);
    pthread_t *th = calloc((size_t)o->concurrent, sizeof *th);
    if (!w || !th) {
        fprintf(stderr, "bench_bert_step_gpu: out of memory\n");
        return 1;
    }
    for (int i = 0; i < o->concurrent; i++) {
        w[i].sh = &sh;
        w[i].index = i;
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < o->concurrent; i++)
        pthread_join(th[i], NULL);
    double elapsed = now() - sh.t_start, wall_end = sh.wall_start + elapsed;
    int rc = 0;
    long total = 0;
    for (int i = 0; i < o->concurrent; i++) {
        if (w[i].st) {
            rc = fail("trial", &w[i].err);
            break;
        }
        total += w[i].steps;
    }
    if (rc == 0) {
        printf(
            "{\"bench\": \"tune_bert_concurrent_gpu\", \"engine\": \"tune\", \"config\": \"%s\", "
            "\"precision\": \"%s\", \"batch\": %d, \"seq\": %d, \"trials\": %d, "
            "\"seconds\": %.2f, \"window_unix\": [%.3f, %.3f], \"steps\": %ld, "
            "\"examples_per_s\": %.1f, \"per_trial_examples_per_s\": [",
            o->nc->name, o->tf32 ? "tf32" : "fp32", o->B, o->S, o->concurrent, elapsed,
            sh.wall_start, wall_end, total, (double)total * o->B / elapsed);
        for (int i = 0; i < o->concurrent; i++)
            printf("%s%.1f", i ? ", " : "", (double)w[i].steps * o->B / elapsed);
        printf("], ");
        print_device(o->device);
        printf("}\n");
    }
    for (int i = 0; i < o->concurrent; i++)
        trial_free(&w[i].t);
    free(w);
    free(th);
    pthread_mutex_destroy(&sh.lock);
    pthread_cond_destroy(&sh.cond);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_bert_step_gpu [--config tiny|mini|small|medium|base] [--batch N] "
                    "[--seq N] [--steps N] [--warmup N] [--tf32] [--device N]\n"
                    "       bench_bert_step_gpu --concurrent N --seconds S [same options]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct opts o = {
        .nc = &configs[0], .B = 32, .S = 128, .steps = 20, .warmup = 5, .seconds = 10.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--tf32") == 0) {
            o.tf32 = 1;
            continue;
        }
        if (!v)
            return usage();
        i++;
        if (strcmp(a, "--config") == 0) {
            o.nc = NULL;
            for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++)
                if (strcmp(configs[k].name, v) == 0)
                    o.nc = &configs[k];
            if (!o.nc)
                return usage();
        } else if (strcmp(a, "--batch") == 0) {
            o.B = atoi(v);
        } else if (strcmp(a, "--seq") == 0) {
            o.S = atoi(v);
        } else if (strcmp(a, "--steps") == 0) {
            o.steps = atoi(v);
        } else if (strcmp(a, "--warmup") == 0) {
            o.warmup = atoi(v);
        } else if (strcmp(a, "--device") == 0) {
            o.device = atoi(v);
        } else if (strcmp(a, "--concurrent") == 0) {
            o.concurrent = atoi(v);
        } else if (strcmp(a, "--seconds") == 0) {
            o.seconds = atof(v);
        } else {
            return usage();
        }
    }
    if (o.B < 1 || o.S < 2 || o.S > MAX_POS || o.steps < 1 || o.steps > MAX_STEPS || o.warmup < 0 ||
        o.concurrent < 0 || o.concurrent > MAX_TRIALS || !(o.seconds > 0))
        return usage();
    int count = 0;
    tune_error err = {0};
    if (tunep_cuda_device_count(&count, &err))
        return fail("no GPU", &err);
    return o.concurrent > 0 ? run_concurrent(&o) : run_single(&o);
}
