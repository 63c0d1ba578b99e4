/*
 * bert_step.c - one BERT fine-tuning step on the CPU backend, timed the way
 * ../shared/bench/peers/torch_bert_step.py times PyTorch, so that
 * bench/run_bert.sh can run the two side by side.
 *
 *   bench_bert_step [--config tiny|mini|small|medium|base] [--batch 32] [--seq 128]
 *                   [--threads 2] [--steps 10] [--warmup 3] [--lr 2e-5] [--no-breakdown]
 *                   [--isa generic|avx2|avx512] [--cpu-clock]
 *   bench_bert_step --sgemm 1024,2048 [--threads 2]
 *   bench_bert_step --env-advice
 *   bench_bert_step --data FILE.tsv --checkpoint DIR [--batch 32] [--seq 128] [--threads 2]
 *                   [--steps 30] [--warmup 3] [--lr 2e-5] [--seed 42]
 *
 * The step: forward with dropout 0.1 and mean cross-entropy, backward, AdamW
 * (weight decay 0.01 where the tensor table says decay, as the peer's BERT
 * no-decay groups) with global-norm clipping at 1.0, zero_grad; fp32, vocab
 * 30522, 2 labels, the peer's batch (random ids with [CLS] = 101 first,
 * segment 0 then 1, no padding, random labels). Reported: median and min
 * ms/step over --steps steps after --warmup, the forward / backward /
 * AdamW+zero_grad split, tokens/s, GFLOP/s with the peer's FLOP count
 * (matmuls only; train step = 3 x forward, forward = T*L*(8H^2 + 4HI + 4SH)
 * + B*(2H^2 + 2HC), T = B*S), peak RSS (getrusage ru_maxrss), and how many
 * cores' worth of CPU other processes used during the timed steps
 * (foreign_cpu, from /proc/stat including steal: on a shared 2-core machine
 * anything above ~0.1 disturbs OpenMP code, whose barriers wait for a
 * descheduled thread).
 *
 * Per-kernel breakdown: the model runs on a copy of the CPU backend whose
 * kernel table (and memzero) are thin wrappers that time each call with
 * CLOCK_MONOTONIC and forward it to the real kernel; GEMM-carrying kernels
 * are kept apart per shape. Two clock reads per call (~100-300 calls per
 * step) cost microseconds against steps of 100+ ms; --no-breakdown runs on
 * the unwrapped backend to check that.
 *
 * --env-advice prints tune_cpu_env_advice(), the environment the tune CLI
 * re-executes itself with (e.g. "OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=
 * SkylakeX" where OpenBLAS does not know the CPU), for bench/run_bert.sh.
 *
 * --eval times the evaluation forward instead (eval mode, no dropout, logits
 * and their argmax on the host; batch 256 unless --batch), as the peer's
 * torch.inference_mode() forward (torch_bert_step.py's eval part).
 *
 * --cpu-clock times everything with the process's CPU time instead of the
 * wall clock: with --threads 1 on a machine that other jobs share, this
 * compares kernel variants without counting the time the process waited
 * for a core (not for the step figures that are held against PyTorch).
 *
 * --isa runs the float kernels built for that x86-64 level instead of the
 * best one the CPU supports (the backend's choice), to compare them.
 *
 * --sgemm times tunep_cpu_gemm (the model's own GEMM path: the rows split
 * across --threads OpenMP threads, one single-threaded OpenBLAS sgemm each)
 * on square C = A.B problems, the "SGEMM peak" bert-small is held against.
 *
 * --data runs the bert trainer's own step on real batches instead: a Hugging
 * Face folder (--checkpoint: config.json, vocab.txt, model.safetensors; a
 * classifier it lacks is initialised from --seed) fine-tuned on the TSV
 * file's examples in the order of the trainer's first epoch under --seed
 * (tunep_dataset_order), --batch at a time, each batch padded to its longest
 * example (dynamic padding; --seq is max_seq_len, the truncation). Each step
 * is what the trainer does: assemble the batch, zero_grad, forward with the
 * checkpoint's dropout, backward, AdamW with clipping at 1.0 and weight decay
 * 0.01. Reported over the --steps steps after --warmup, timed from the end of
 * the last warm-up step to the end of the last step: real (non-pad) tokens/s,
 * padded tokens/s (B x T of each batch), examples/s, the mean real and padded
 * lengths, median and min ms per step. bench/sst2_tokens.py runs the same
 * batches through transformers' Trainer (bench/run_sst2_tokens.sh).
 *
 * Output: one JSON object per line on stdout (same field names as the peer
 * where the quantity is the same); progress and errors on stderr.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"
#include "models/bert/bert.h"
#include "models/bert/bert_io.h"
#include "models/cpu/cpu_backend.h"
#include "models/cpu/cpu_matmul.h"
#include "models/text/dataset_tsv.h"
#include "models/text/tokenizer.h"

#define VOCAB     30522
#define MAX_POS   512
#define LABELS    2
#define MAX_STEPS 1000
#define MAX_SLOTS 128

/* CLOCK_MONOTONIC, or the process's CPU time with --cpu-clock (set once in main). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *xs, int n)
{
    double tmp[MAX_STEPS];
    memcpy(tmp, xs, (size_t)n * sizeof *tmp);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

static double min_of(const double *xs, int n)
{
    double m = xs[0];
    for (int i = 1; i < n; i++)
        m = xs[i] < m ? xs[i] : m;
    return m;
}

/* The thread/BLAS environment, which changes these figures a lot. */
static void print_env(void)
{
    static const char *const keys[] = {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                       "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
    printf("\"env\": {");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = getenv(keys[i]);
        printf("%s\"%s\": ", i ? ", " : "", keys[i]);
        if (!v) {
            printf("null");
            continue;
        }
        putchar('"');
        for (; *v; v++)
            if (*v != '"' && *v != '\\' && (unsigned char)*v >= 0x20)
                putchar(*v);
        putchar('"');
    }
    printf("}");
}

/*
 * CPU seconds all CPUs spent busy (user, nice, system, irq, softirq, and
 * steal: time the hypervisor gave to someone else) from /proc/stat, and this
 * process's own CPU seconds. Their difference over the timed steps is the
 * work of other processes that shared the cores with the benchmark.
 */
static int cpu_sample(double *ret_busy_s, double *ret_self_s)
{
    unsigned long long v[8];
    FILE *f = fopen("/proc/stat", "r");
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    struct rusage ru;
    long hz = sysconf(_SC_CLK_TCK);
    if (n != 8 || hz <= 0 || getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    *ret_busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
    *ret_self_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    return 0;
}

static long max_rss_kib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* ---- per-kernel timing ---------------------------------------------------- */

enum phase { PH_FORWARD, PH_BACKWARD, PH_ADAMW, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {"forward", "backward", "adamw"};

struct slot {
    enum phase phase;
    const char *kernel;
    char shape[48]; /* "" for element-wise kernels: one slot per kernel */
    long calls;
    double seconds, flops;
};

static struct {
    const struct tunep_kernels *real;
    tune_status (*real_memzero)(void *ctx, void *dst, size_t size, tune_error *err);
    int on; /* account only the timed steps */
    enum phase phase;
    int nslots;
    struct slot slots[MAX_SLOTS];
} timing;

static void account(const char *kernel, const char *shape, double flops, double seconds)
{
    if (!timing.on)
        return;
    struct slot *s = NULL;
    for (int i = 0; i < timing.nslots && !s; i++) {
        struct slot *t = &timing.slots[i];
        if (t->phase == timing.phase && strcmp(t->kernel, kernel) == 0 &&
            strcmp(t->shape, shape) == 0)
            s = t;
    }
    if (!s) {
        if (timing.nslots == MAX_SLOTS)
            return;
        s = &timing.slots[timing.nslots++];
        s->phase = timing.phase;
        s->kernel = kernel;
        snprintf(s->shape, sizeof s->shape, "%s", shape);
    }
    s->calls++;
    s->seconds += seconds;
    s->flops += flops;
}

/* Wraps one call: `call` is the forwarded expression, `shape` a string. */
#define TIMED(kname, shape, flops, call)                                                           \
    do {                                                                                           \
        double t0_ = now();                                                                        \
        tune_status st_ = (call);                                                                  \
        account(kname, shape, flops, now() - t0_);                                                 \
        return st_;                                                                                \
    } while (0)

static tune_status t_embed_fwd(void *ctx, float *out, const int32_t *ids, const int32_t *types,
                               const float *wte, const float *wpe, const float *wtt, int B, int T,
                               int C)
{
    TIMED("embed_fwd", "", 0.0,
          timing.real->embed_fwd(ctx, out, ids, types, wte, wpe, wtt, B, T, C));
}

static tune_status t_embed_bwd(void *ctx, float *dwte, float *dwpe, float *dwtt, const float *dout,
                               const int32_t *ids, const int32_t *types, int B, int T, int C)
{
    TIMED("embed_bwd", "", 0.0,
          timing.real->embed_bwd(ctx, dwte, dwpe, dwtt, dout, ids, types, B, T, C));
}

static tune_status t_layernorm_fwd(void *ctx, float *out, float *mean, float *rstd,
                                   const float *inp, const float *w, const float *b, int N, int C,
                                   double eps)
{
    TIMED("layernorm_fwd", "", 0.0,
          timing.real->layernorm_fwd(ctx, out, mean, rstd, inp, w, b, N, C, eps));
}

static tune_status t_layernorm_bwd(void *ctx, float *dinp, float *dw, float *db, const float *dout,
                                   const float *inp, const float *w, const float *mean,
                                   const float *rstd, int N, int C)
{
    TIMED("layernorm_bwd", "", 0.0,
          timing.real->layernorm_bwd(ctx, dinp, dw, db, dout, inp, w, mean, rstd, N, C));
}

static void gemm_shape(char *buf, size_t size, int N, int IC, int OC)
{
    snprintf(buf, size, "%dx%dx%d", N, IC, OC);
}

static tune_status t_matmul_fwd(void *ctx, float *out, const float *inp, const float *w,
                                const float *b, int N, int IC, int OC)
{
    char shape[48];
    gemm_shape(shape, sizeof shape, N, IC, OC);
    TIMED("matmul_fwd", shape, 2.0 * N * IC * OC,
          timing.real->matmul_fwd(ctx, out, inp, w, b, N, IC, OC));
}

static tune_status t_matmul_bwd(void *ctx, float *dinp, float *dw, float *db, const float *dout,
                                const float *inp, const float *w, int N, int IC, int OC,
                                int accumulate)
{
    char shape[48];
    gemm_shape(shape, sizeof shape, N, IC, OC);
    TIMED("matmul_bwd", shape, (dinp ? 4.0 : 2.0) * N * IC * OC,
          timing.real->matmul_bwd(ctx, dinp, dw, db, dout, inp, w, N, IC, OC, accumulate));
}

static tune_status t_attention_fwd(void *ctx, float *out, float *att, float *att_drop,
                                   const float *q, const float *k, const float *v,
                                   const int32_t *mask, int B, int T, int C, int NH, int ld,
                                   double p, uint64_t seed, uint64_t stream)
{
    char shape[48];
    snprintf(shape, sizeof shape, "B%d T%d C%d NH%d", B, T, C, NH);
    TIMED("attention_fwd", shape, 4.0 * B * T * T * C,
          timing.real->attention_fwd(ctx, out, att, att_drop, q, k, v, mask, B, T, C, NH, ld, p,
                                     seed, stream));
}

static tune_status t_attention_bwd(void *ctx, float *dq, float *dk, float *dv, float *dpreatt,
                                   float *datt, float *datt_drop, const float *dout, const float *q,
                                   const float *k, const float *v, const float *att,
                                   const float *att_drop, const int32_t *mask, int B, int T, int C,
                                   int NH, int ld, double p, uint64_t seed, uint64_t stream)
{
    char shape[48];
    snprintf(shape, sizeof shape, "B%d T%d C%d NH%d", B, T, C, NH);
    TIMED("attention_bwd", shape, 8.0 * B * T * T * C,
          timing.real->attention_bwd(ctx, dq, dk, dv, dpreatt, datt, datt_drop, dout, q, k, v, att,
                                     att_drop, mask, B, T, C, NH, ld, p, seed, stream));
}

static tune_status t_gelu_fwd(void *ctx, float *out, const float *inp, size_t n)
{
    TIMED("gelu_fwd", "", 0.0, timing.real->gelu_fwd(ctx, out, inp, n));
}

static tune_status t_gelu_bwd(void *ctx, float *dinp, const float *dout, const float *inp, size_t n)
{
    TIMED("gelu_bwd", "", 0.0, timing.real->gelu_bwd(ctx, dinp, dout, inp, n));
}

static tune_status t_softmax_xent_fwd(void *ctx, float *losses, float *probs, const float *logits,
                                      const int32_t *labels, int B, int K)
{
    TIMED("softmax_xent_fwd", "", 0.0,
          timing.real->softmax_xent_fwd(ctx, losses, probs, logits, labels, B, K));
}

static tune_status t_softmax_xent_bwd(void *ctx, float *dlogits, const float *dlosses,
                                      const float *probs, const int32_t *labels, int B, int K)
{
    TIMED("softmax_xent_bwd", "", 0.0,
          timing.real->softmax_xent_bwd(ctx, dlogits, dlosses, probs, labels, B, K));
}

static tune_status t_pooler_fwd(void *ctx, float *out, float *pre, const float *inp, const float *w,
                                const float *b, int B, int T, int C)
{
    TIMED("pooler_fwd", "", 2.0 * B * C * C,
          timing.real->pooler_fwd(ctx, out, pre, inp, w, b, B, T, C));
}

static tune_status t_pooler_bwd(void *ctx, float *dinp, float *dw, float *db, float *dpre,
                                const float *dout, const float *out, const float *inp,
                                const float *w, int B, int T, int C)
{
    TIMED("pooler_bwd", "", 4.0 * B * C * C,
          timing.real->pooler_bwd(ctx, dinp, dw, db, dpre, dout, out, inp, w, B, T, C));
}

static tune_status t_dropout_fwd(void *ctx, float *out, const float *inp, const float *res,
                                 size_t n, double p, uint64_t seed, uint64_t stream)
{
    TIMED("dropout_fwd", "", 0.0, timing.real->dropout_fwd(ctx, out, inp, res, n, p, seed, stream));
}

static tune_status t_dropout_bwd(void *ctx, float *dinp, float *dres, const float *dout, size_t n,
                                 double p, uint64_t seed, uint64_t stream)
{
    TIMED("dropout_bwd", "", 0.0,
          timing.real->dropout_bwd(ctx, dinp, dres, dout, n, p, seed, stream));
}

static tune_status t_adamw_step(void *ctx, float *param, float *m, float *v, const float *grad,
                                size_t n, double lr, double beta1, double beta2, double eps,
                                double weight_decay, double grad_scale, long step)
{
    TIMED("adamw_step", "", 0.0,
          timing.real->adamw_step(ctx, param, m, v, grad, n, lr, beta1, beta2, eps, weight_decay,
                                  grad_scale, step));
}

static tune_status t_grad_sumsq(void *ctx, double *ret_sumsq, const float *g, size_t n)
{
    TIMED("grad_sumsq", "", 0.0, timing.real->grad_sumsq(ctx, ret_sumsq, g, n));
}

static tune_status t_memzero(void *ctx, void *dst, size_t size, tune_error *err)
{
    TIMED("memzero", "", 0.0, timing.real_memzero(ctx, dst, size, err));
}

static const struct tunep_kernels timed_kernels = {
    .embed_fwd = t_embed_fwd,
    .embed_bwd = t_embed_bwd,
    .layernorm_fwd = t_layernorm_fwd,
    .layernorm_bwd = t_layernorm_bwd,
    .matmul_fwd = t_matmul_fwd,
    .matmul_bwd = t_matmul_bwd,
    .attention_fwd = t_attention_fwd,
    .attention_bwd = t_attention_bwd,
    .gelu_fwd = t_gelu_fwd,
    .gelu_bwd = t_gelu_bwd,
    .softmax_xent_fwd = t_softmax_xent_fwd,
    .softmax_xent_bwd = t_softmax_xent_bwd,
    .pooler_fwd = t_pooler_fwd,
    .pooler_bwd = t_pooler_bwd,
    .dropout_fwd = t_dropout_fwd,
    .dropout_bwd = t_dropout_bwd,
    .adamw_step = t_adamw_step,
    .grad_sumsq = t_grad_sumsq,
};

/* What a GEMM shape is in the model, for the report. */
static const char *gemm_role(const char *shape, int B, int T, int C, int I, int K)
{
    static const struct {
        const char *role;
        int n, ic, oc; /* 0: B*T, 1: B, 2: C, 3: I, 4: K, 5: 3C */
    } roles[] = {{"q/k/v proj (fused)", 0, 2, 5},
                 {"attn out proj", 0, 2, 2},
                 {"ffn up", 0, 2, 3},
                 {"ffn down", 0, 3, 2},
                 {"classifier", 1, 2, 4}};
    const int v[6] = {B * T, B, C, I, K, 3 * C};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        char want[48];
        gemm_shape(want, sizeof want, v[roles[i].n], v[roles[i].ic], v[roles[i].oc]);
        if (strcmp(want, shape) == 0)
            return roles[i].role;
    }
    return "";
}

/* ---- the benchmark --------------------------------------------------------- */

struct named_config {
    const char *name;
    int L, C, NH, I;
};

static const struct named_config configs[] = {
    {"tiny", 2, 128, 2, 512},    {"mini", 4, 256, 4, 1024},   {"small", 4, 512, 8, 2048},
    {"medium", 8, 512, 8, 2048}, {"base", 12, 768, 12, 3072},
};

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int fail(const char *what, tune_status st, const tune_error *err)
{
    fprintf(stderr, "bench_bert_step: %s: %s%s%s\n", what, tune_strerror(st),
            err && err->text[0] ? ": " : "", err && err->text[0] ? err->text : "");
    return 1;
}

static double flops_forward(int L, int H, int I, int B, int S)
{
    double T = (double)B * S;
    return T * L * (8.0 * H * H + 4.0 * H * I + 4.0 * S * H) + B * (2.0 * H * H + 2.0 * H * LABELS);
}

static void print_breakdown(double step_s_total, int steps, int B, int T, int C, int I)
{
    printf(", \"kernels\": [");
    double accounted = 0.0;
    int first = 1;
    for (int ph = 0; ph < PH_COUNT; ph++) {
        for (int i = 0; i < timing.nslots; i++) {
            const struct slot *s = &timing.slots[i];
            if ((int)s->phase != ph)
                continue;
            accounted += s->seconds;
            printf("%s{\"phase\": \"%s\", \"kernel\": \"%s\", \"shape\": \"%s\", \"role\": \"%s\", "
                   "\"calls_per_step\": %.1f, \"ms_per_step\": %.3f, \"share\": %.4f",
                   first ? "" : ", ", phase_names[ph], s->kernel, s->shape,
                   s->shape[0] && strncmp(s->kernel, "matmul", 6) == 0
                       ? gemm_role(s->shape, B, T, C, I, LABELS)
                       : "",
                   (double)s->calls / steps, 1e3 * s->seconds / steps, s->seconds / step_s_total);
            if (s->flops > 0.0)
                printf(", \"gflops\": %.2f", s->flops / s->seconds / 1e9);
            printf("}");
            first = 0;
        }
    }
    printf("], \"unaccounted_ms_per_step\": %.3f", 1e3 * (step_s_total - accounted) / steps);
}

/*
 * --eval: the evaluation forward, as the peer's bench_eval (eval mode, no
 * dropout, no labels, logits to the host and their argmax), at batch B: one
 * JSON line "tune_bert_eval_forward" with the median and min ms per forward.
 */
static int run_eval_bench(const struct named_config *nc, int B, int S, int threads, int steps,
                          int warmup)
{
    tune_error err = {0};
    struct tunep_backend *be = NULL;
    struct tunep_bert *m = NULL;
    int32_t *ids = NULL, *types = NULL;
    float *logits = NULL;
    double ts[MAX_STEPS];
    int rc = 1;
    tune_status st = tunep_cpu_backend_new(threads, &be, &err);
    if (st != TUNE_OK)
        return fail("backend", st, &err);
    struct tunep_bert_config cfg;
    tunep_bert_config_default(&cfg);
    cfg.L = nc->L;
    cfg.C = nc->C;
    cfg.NH = nc->NH;
    cfg.I = nc->I;
    cfg.P = MAX_POS;
    cfg.V = VOCAB;
    cfg.K = LABELS;
    size_t ntok = (size_t)B * (size_t)S;
    ids = malloc(ntok * sizeof *ids);
    types = malloc(ntok * sizeof *types);
    logits = malloc((size_t)B * LABELS * sizeof *logits);
    if (!ids || !types || !logits) {
        fprintf(stderr, "bench_bert_step: out of memory\n");
        goto out;
    }
    if ((st = tunep_bert_new(&cfg, B, S, be, &m, &err)) != TUNE_OK ||
        (st = tunep_bert_init_weights(m, 0, &err)) != TUNE_OK) {
        fail("model", st, &err);
        goto out;
    }
    uint64_t rng = 0;
    for (size_t i = 0; i < ntok; i++) {
        size_t t = i % (size_t)S;
        ids[i] = t == 0 ? 101 : (int32_t)(splitmix64(&rng) % VOCAB);
        types[i] = t >= (size_t)(S / 2);
    }
    struct tunep_bert_batch batch = {.B = B, .T = S, .ids = ids, .types = types};
    int n_class1 = 0;
    for (int i = 0; i < warmup + steps; i++) {
        double t0 = now();
        if ((st = tunep_bert_forward(m, &batch, 0, 0, NULL, &err)) != TUNE_OK ||
            (st = tunep_bert_logits(m, logits, (size_t)B * LABELS, &err)) != TUNE_OK) {
            fail("forward", st, &err);
            goto out;
        }
        n_class1 = 0;
        for (int b = 0; b < B; b++)
            n_class1 += logits[b * LABELS + 1] > logits[b * LABELS];
        if (i >= warmup)
            ts[i - warmup] = now() - t0;
    }
    double med = median(ts, steps);
    printf("{\"bench\": \"tune_bert_eval_forward\", \"engine\": \"tune\", \"config\": \"%s\", "
           "\"batch\": %d, \"seq_len\": %d, \"threads\": %d, \"steps\": %d, \"warmup\": %d, "
           "\"median_ms\": %.2f, \"min_ms\": %.2f, \"tokens_per_s\": %.1f, \"n_pred_class1\": %d, "
           "\"max_rss_kib\": %ld}\n",
           nc->name, B, S, threads, steps, warmup, 1e3 * med, 1e3 * min_of(ts, steps),
           (double)ntok / med, n_class1, max_rss_kib());
    rc = 0;
out:
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
    free(ids);
    free(types);
    free(logits);
    return rc;
}

static int run_step_bench(const struct named_config *nc, int B, int S, int threads, int steps,
                          int warmup, double lr, int breakdown, const char *isa_name)
{
    tune_error err = {0};
    struct tunep_backend *be = NULL;
    struct tunep_bert *m = NULL;
    int32_t *ids = NULL, *types = NULL, *mask = NULL, *labels = NULL;
    int rc = 1;
    tune_status st = tunep_cpu_backend_new(threads, &be, &err);
    if (st != TUNE_OK)
        return fail("backend", st, &err);

    struct tunep_backend timed_be = *be;
    enum tunep_cpu_isa isa = tunep_cpu_isa_best();
    if (isa_name) {
        for (isa = 0; isa < TUNEP_CPU_ISA_COUNT; isa++)
            if (strcmp(isa_name, tunep_cpu_isa_name(isa)) == 0)
                break;
        if (isa == TUNEP_CPU_ISA_COUNT || !tunep_cpu_kernels_for(isa)) {
            fprintf(stderr, "bench_bert_step: kernels '%s' are not available here\n", isa_name);
            tunep_cpu_backend_free(be);
            return 1;
        }
        timed_be.kernels = tunep_cpu_kernels_for(isa);
    }
    if (breakdown) {
        timing.real = timed_be.kernels;
        timing.real_memzero = be->memzero;
        timed_be.kernels = &timed_kernels;
        timed_be.memzero = t_memzero;
    }

    struct tunep_bert_config cfg;
    tunep_bert_config_default(&cfg);
    cfg.L = nc->L;
    cfg.C = nc->C;
    cfg.NH = nc->NH;
    cfg.I = nc->I;
    cfg.P = MAX_POS;
    cfg.V = VOCAB;
    cfg.TV = 2;
    cfg.K = LABELS;
    cfg.hidden_dropout = 0.1;
    cfg.attn_dropout = 0.1;
    cfg.ln_eps = 1e-12;

    double t_setup = now();
    if ((st = tunep_bert_new(&cfg, B, S, &timed_be, &m, &err)) != TUNE_OK) {
        fail("model", st, &err);
        goto out;
    }
    if ((st = tunep_bert_init_weights(m, 0, &err)) != TUNE_OK) {
        fail("init", st, &err);
        goto out;
    }
    t_setup = now() - t_setup;

    size_t ntok = (size_t)B * (size_t)S;
    ids = malloc(ntok * sizeof *ids);
    types = malloc(ntok * sizeof *types);
    mask = malloc(ntok * sizeof *mask);
    labels = malloc((size_t)B * sizeof *labels);
    if (!ids || !types || !mask || !labels) {
        fprintf(stderr, "bench_bert_step: out of memory\n");
        goto out;
    }
    /* The peer's batch: random ids, [CLS] first, segment B from the middle, no padding. */
    uint64_t rng = 0;
    for (size_t i = 0; i < ntok; i++) {
        size_t t = i % (size_t)S;
        ids[i] = t == 0 ? 101 : (int32_t)(splitmix64(&rng) % VOCAB);
        types[i] = t >= (size_t)(S / 2);
        mask[i] = 1;
    }
    for (int b = 0; b < B; b++)
        labels[b] = (int32_t)(splitmix64(&rng) % LABELS);
    struct tunep_bert_batch batch = {
        .B = B, .T = S, .ids = ids, .types = types, .mask = mask, .labels = labels};

    struct tunep_adamw opt;
    tunep_adamw_default(&opt);
    opt.weight_decay = 0.01;
    opt.clip_norm = 1.0;

    static double t_fwd[MAX_STEPS], t_bwd[MAX_STEPS], t_opt[MAX_STEPS], t_step[MAX_STEPS];
    double loss_first = 0.0, loss_last = 0.0, norm_last = 0.0, timed_total = 0.0;
    double busy0 = 0.0, self0 = 0.0, busy1 = 0.0, self1 = 0.0, wall0 = 0.0;
    int have_cpu = 0;
    if ((st = tunep_bert_zero_grad(m, &err)) != TUNE_OK) {
        fail("zero_grad", st, &err);
        goto out;
    }
    for (int i = 0; i < warmup + steps; i++) {
        double loss;
        if (i == warmup) {
            have_cpu = cpu_sample(&busy0, &self0) == 0;
            wall0 = now();
        }
        timing.on = breakdown && i >= warmup;
        timing.phase = PH_FORWARD;
        double t0 = now();
        if ((st = tunep_bert_forward(m, &batch, 1, (uint64_t)i + 1, &loss, &err)) != TUNE_OK) {
            fail("forward", st, &err);
            goto out;
        }
        double t1 = now();
        timing.phase = PH_BACKWARD;
        if ((st = tunep_bert_backward(m, &err)) != TUNE_OK) {
            fail("backward", st, &err);
            goto out;
        }
        double t2 = now();
        timing.phase = PH_ADAMW;
        if ((st = tunep_bert_adamw_step(m, &opt, lr, &norm_last, &err)) != TUNE_OK ||
            (st = tunep_bert_zero_grad(m, &err)) != TUNE_OK) {
            fail("adamw", st, &err);
            goto out;
        }
        double t3 = now();
        if (i == 0)
            loss_first = loss;
        loss_last = loss;
        if (i >= warmup) {
            int k = i - warmup;
            t_fwd[k] = t1 - t0;
            t_bwd[k] = t2 - t1;
            t_opt[k] = t3 - t2;
            t_step[k] = t3 - t0;
            timed_total += t3 - t0;
        }
    }
    timing.on = 0;
    double wall = now() - wall0;
    have_cpu = have_cpu && cpu_sample(&busy1, &self1) == 0 && wall > 0.0;

    const struct tunep_bert_layout *lay = tunep_bert_layout_of(m);
    size_t emb = lay->param_size[BERT_P_WORD_EMB] + lay->param_size[BERT_P_POS_EMB] +
                 lay->param_size[BERT_P_TYPE_EMB] + lay->param_size[BERT_P_EMB_LN_W] +
                 lay->param_size[BERT_P_EMB_LN_B];
    double f_train = 3.0 * flops_forward(nc->L, nc->C, nc->I, B, S);
    double med = median(t_step, steps);
    printf("{\"bench\": \"tune_bert_train_step\", \"engine\": \"tune\", \"config\": \"%s\", "
           "\"L\": %d, \"H\": %d, \"A\": %d, \"I\": %d, \"vocab\": %d, \"batch\": %d, "
           "\"seq_len\": %d, \"dtype\": \"float32\", \"threads\": %d, \"steps\": %d, "
           "\"warmup\": %d, \"params_total\": %zu, \"params_embedding\": %zu, "
           "\"params_non_embedding\": %zu, \"matmul_params\": %ld, ",
           nc->name, nc->L, nc->C, nc->NH, nc->I, VOCAB, B, S, threads, steps, warmup,
           lay->param_total, emb, lay->param_total - emb,
           (long)nc->L * (4L * nc->C * nc->C + 2L * nc->C * nc->I));
    printf("\"median_ms_per_step\": %.2f, \"min_ms_per_step\": %.2f, "
           "\"median_ms_forward_loss\": %.2f, \"median_ms_backward\": %.2f, "
           "\"median_ms_adamw_step\": %.2f, \"tokens_per_s\": %.1f, \"sequences_per_s\": %.2f, "
           "\"gflop_per_step\": %.3f, \"achieved_gflops\": %.2f, \"loss_first\": %.4f, "
           "\"loss_last\": %.4f, \"grad_norm_last\": %.4f, \"clip_norm\": %.1f, "
           "\"setup_s\": %.2f, \"max_rss_kib\": %ld, \"kernels_isa\": \"%s\", "
           "\"blas\": \"%s\", \"blas_core\": \"%s\", "
           "\"blas_underuses_cpu\": %s, \"breakdown\": %s, \"clock\": \"%s\", ",
           1e3 * med, 1e3 * min_of(t_step, steps), 1e3 * median(t_fwd, steps),
           1e3 * median(t_bwd, steps), 1e3 * median(t_opt, steps), (double)ntok / med,
           (double)B / med, f_train / 1e9, f_train / med / 1e9, loss_first, loss_last, norm_last,
           opt.clip_norm, t_setup, max_rss_kib(), tunep_cpu_isa_name(isa), tunep_cpu_blas_name(),
           tunep_cpu_blas_corename(), tunep_cpu_blas_underuses_cpu() ? "true" : "false",
           breakdown ? "true" : "false", bench_clock == CLOCK_MONOTONIC ? "wall" : "cpu");
    /* Cores' worth of CPU used by this process and by everything else during the timed steps. */
    if (have_cpu)
        printf("\"self_cpu\": %.2f, \"foreign_cpu\": %.2f, ", (self1 - self0) / wall,
               ((busy1 - busy0) - (self1 - self0)) / wall);
    print_env();
    if (breakdown)
        print_breakdown(timed_total, steps, B, S, nc->C, nc->I);
    printf("}\n");
    fflush(stdout);
    rc = 0;
out:
    free(ids);
    free(types);
    free(mask);
    free(labels);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
    return rc;
}

/* ---- real batches (--data) ------------------------------------------------- */

static int run_data_bench(const char *data, const char *checkpoint, int B, int S, int threads,
                          int steps, int warmup, double lr, uint64_t seed)
{
    tune_error err = {0};
    struct tunep_bert_config cfg;
    tunep_tokenizer *tok = NULL;
    tunep_dataset *ds = NULL;
    struct tunep_backend *be = NULL;
    struct tunep_bert *m = NULL;
    size_t *order = NULL;
    struct tunep_batch batch;
    tunep_batch_init(&batch);
    static double t_step[MAX_STEPS];
    char vocab[4096];
    int rc = 1;
    tune_status st;
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", checkpoint);
    struct tunep_tsv_options opt;
    tunep_tsv_options_default(&opt);
    opt.max_seq_len = (size_t)S;
    double t_setup = now();
    if ((st = tunep_bert_hf_config_load(checkpoint, &cfg, &err)) ||
        (st = tunep_tokenizer_new(vocab, 1, &tok, &err)) ||
        (st = tunep_dataset_tsv_load(data, tok, &opt, &ds, &err))) {
        fail("data", st, &err);
        goto out;
    }
    size_t n = tunep_dataset_size(ds), need = (size_t)(warmup + steps) * (size_t)B;
    if (need > n) {
        fprintf(stderr, "bench_bert_step: %s has %zu examples, fewer than the %zu of %d steps\n",
                data, n, need, warmup + steps);
        goto out;
    }
    cfg.K = tunep_dataset_num_labels(ds) < 2 ? 2 : tunep_dataset_num_labels(ds);
    if ((st = tunep_cpu_backend_new(threads, &be, &err)) ||
        (st = tunep_bert_new(&cfg, B, S, be, &m, &err)) ||
        (st = tunep_bert_init_weights(m, seed, &err)) ||
        (st = tunep_bert_load_hf(m, checkpoint, 0, &err))) {
        fail("model", st, &err);
        goto out;
    }
    if (!(order = malloc(n * sizeof *order))) {
        fprintf(stderr, "bench_bert_step: out of memory\n");
        goto out;
    }
    if ((st = tunep_dataset_order(ds, seed, 0, 1, order, &err))) {
        fail("order", st, &err);
        goto out;
    }
    t_setup = now() - t_setup;

    struct tunep_adamw adamw;
    tunep_adamw_default(&adamw);
    adamw.weight_decay = 0.01;
    adamw.clip_norm = 1.0;
    double loss_first = 0.0, loss_last = 0.0, real = 0.0, padded = 0.0, wall0 = 0.0, t_prev = 0.0;
    double busy0 = 0.0, self0 = 0.0, busy1 = 0.0, self1 = 0.0;
    int have_cpu = 0;
    for (int i = 0; i < warmup + steps; i++) {
        if (i == warmup) {
            have_cpu = cpu_sample(&busy0, &self0) == 0;
            wall0 = now();
        }
        double t0 = i > warmup ? t_prev : now(), loss;
        if ((st =
                 tunep_dataset_batch(ds, order + (size_t)i * (size_t)B, (size_t)B, &batch, &err))) {
            fail("batch", st, &err);
            goto out;
        }
        struct tunep_bert_batch bb = {(int)batch.B,         (int)batch.T,         batch.input_ids,
                                      batch.token_type_ids, batch.attention_mask, batch.labels};
        if ((st = tunep_bert_zero_grad(m, &err)) ||
            (st = tunep_bert_forward(m, &bb, 1, (uint64_t)i + 1, &loss, &err)) ||
            (st = tunep_bert_backward(m, &err)) ||
            (st = tunep_bert_adamw_step(m, &adamw, lr, NULL, &err))) {
            fail("step", st, &err);
            goto out;
        }
        t_prev = now();
        if (i == 0)
            loss_first = loss;
        loss_last = loss;
        if (i >= warmup) {
            t_step[i - warmup] = t_prev - t0;
            for (size_t k = 0; k < batch.B * batch.T; k++)
                real += batch.attention_mask[k] != 0;
            padded += (double)(batch.B * batch.T);
        }
    }
    double wall = t_prev - wall0;
    have_cpu = have_cpu && cpu_sample(&busy1, &self1) == 0 && wall > 0.0;
    const char *name = strrchr(checkpoint, '/');
    name = name && name[1] ? name + 1 : checkpoint;
    printf("{\"bench\": \"tune_bert_data_step\", \"engine\": \"tune\", \"model\": \"%s\", "
           "\"L\": %d, \"H\": %d, \"A\": %d, \"I\": %d, \"data\": \"%s\", \"batch\": %d, "
           "\"max_seq_len\": %d, \"threads\": %d, \"steps\": %d, \"warmup\": %d, \"seed\": %llu, "
           "\"wall_s\": %.4f, \"real_tokens\": %.0f, \"padded_tokens\": %.0f, "
           "\"real_tokens_per_s\": %.1f, \"padded_tokens_per_s\": %.1f, "
           "\"examples_per_s\": %.2f, \"mean_real_len\": %.2f, \"mean_padded_len\": %.2f, "
           "\"median_ms_per_step\": %.2f, \"min_ms_per_step\": %.2f, \"loss_first\": %.4f, "
           "\"loss_last\": %.4f, \"setup_s\": %.2f, \"max_rss_kib\": %ld, \"blas\": \"%s\", "
           "\"blas_core\": \"%s\", ",
           name, cfg.L, cfg.C, cfg.NH, cfg.I, data, B, S, threads, steps, warmup,
           (unsigned long long)seed, wall, real, padded, real / wall, padded / wall,
           (double)steps * B / wall, real / ((double)steps * B), padded / ((double)steps * B),
           1e3 * median(t_step, steps), 1e3 * min_of(t_step, steps), loss_first, loss_last, t_setup,
           max_rss_kib(), tunep_cpu_blas_name(), tunep_cpu_blas_corename());
    if (have_cpu)
        printf("\"self_cpu\": %.2f, \"foreign_cpu\": %.2f, ", (self1 - self0) / wall,
               ((busy1 - busy0) - (self1 - self0)) / wall);
    print_env();
    printf("}\n");
    fflush(stdout);
    rc = 0;
out:
    free(order);
    tunep_batch_done(&batch);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
    tunep_dataset_free(ds);
    tunep_tokenizer_free(tok);
    return rc;
}

/* ---- SGEMM peak ------------------------------------------------------------ */

static int run_sgemm(const char *sizes, int threads)
{
    struct tunep_backend *be = NULL;
    tune_error err = {0};
    /* Creating a backend puts OpenBLAS in the single-threaded mode the model runs in. */
    tune_status st = tunep_cpu_backend_new(threads, &be, &err);
    if (st != TUNE_OK)
        return fail("backend", st, &err);
    char *list = strdup(sizes);
    int rc = list ? 0 : 1;
    for (char *save = NULL, *tok = list ? strtok_r(list, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save)) {
        int n = atoi(tok);
        if (n < 16 || n > 8192) {
            fprintf(stderr, "bench_bert_step: --sgemm size %s outside [16, 8192]\n", tok);
            rc = 1;
            break;
        }
        size_t nn = (size_t)n * (size_t)n;
        float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
        if (!a || !b || !c) {
            free(a);
            free(b);
            free(c);
            rc = 1;
            break;
        }
        uint64_t rng = 7;
        for (size_t i = 0; i < nn; i++) {
            a[i] = (float)((double)(splitmix64(&rng) >> 11) * 0x1p-53 - 0.5);
            b[i] = (float)((double)(splitmix64(&rng) >> 11) * 0x1p-53 - 0.5);
        }
        tunep_cpu_gemm(threads, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n); /* warm-up */
        double ts[MAX_STEPS], total = 0.0, busy0, self0, busy1, self1;
        int reps = 0, have_cpu = cpu_sample(&busy0, &self0) == 0;
        while (reps < 3 || (total < 0.5 && reps < 50)) {
            double t0 = now();
            tunep_cpu_gemm(threads, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            ts[reps] = now() - t0;
            total += ts[reps++];
        }
        have_cpu = have_cpu && cpu_sample(&busy1, &self1) == 0;
        double f = 2.0 * (double)n * n * n, med = median(ts, reps), best = min_of(ts, reps);
        printf("{\"bench\": \"tune_sgemm\", \"engine\": \"tune\", \"path\": \"tunep_cpu_gemm\", "
               "\"shape\": \"%dx%dx%d\", \"threads\": %d, \"reps\": %d, \"best_ms\": %.3f, "
               "\"median_ms\": %.3f, \"gflops_best\": %.2f, \"gflops_median\": %.2f, "
               "\"checksum\": %.4f, \"blas_core\": \"%s\", ",
               n, n, n, threads, reps, 1e3 * best, 1e3 * med, f / best / 1e9, f / med / 1e9,
               (double)c[0] + (double)c[nn - 1], tunep_cpu_blas_corename());
        if (have_cpu)
            printf("\"foreign_cpu\": %.2f, ", ((busy1 - busy0) - (self1 - self0)) / total);
        print_env();
        printf("}\n");
        fflush(stdout);
        free(a);
        free(b);
        free(c);
    }
    free(list);
    tunep_cpu_backend_free(be);
    return rc;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_bert_step [--config tiny|mini|small|medium|base] [--batch N] "
                    "[--seq N] [--threads N] [--steps N] [--warmup N] [--lr X] "
                    "[--no-breakdown] [--isa generic|avx2|avx512] [--cpu-clock] [--eval]\n"
                    "       bench_bert_step --sgemm N[,N...] [--threads N]\n"
                    "       bench_bert_step --env-advice\n"
                    "       bench_bert_step --data FILE.tsv --checkpoint DIR [--batch N] [--seq N] "
                    "[--threads N] [--steps N] [--warmup N] [--lr X] [--seed N]\n");
}

static void log_stderr(tune_log_level level, const char *message, void *user_data)
{
    (void)level;
    (void)user_data;
    fprintf(stderr, "bench_bert_step: %s\n", message);
}

int main(int argc, char **argv)
{
    const char *config = "tiny", *sgemm = NULL, *isa = NULL, *data = NULL, *checkpoint = NULL;
    int B = 32, S = 128, threads = 2, steps = 10, warmup = 3, breakdown = 1, eval = 0,
        batch_given = 0, steps_given = 0;
    uint64_t seed = 42;
    double lr = 2e-5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-breakdown") == 0) {
            breakdown = 0;
            continue;
        }
        if (strcmp(a, "--env-advice") == 0) {
            printf("%s\n", tune_cpu_env_advice());
            return 0;
        }
        if (strcmp(a, "--cpu-clock") == 0) {
            bench_clock = CLOCK_PROCESS_CPUTIME_ID;
            continue;
        }
        if (strcmp(a, "--eval") == 0) {
            eval = 1;
            continue;
        }
        if (!v) {
            usage();
            return 2;
        }
        if (strcmp(a, "--config") == 0)
            config = v;
        else if (strcmp(a, "--batch") == 0)
            B = atoi(v), batch_given = 1;
        else if (strcmp(a, "--seq") == 0)
            S = atoi(v);
        else if (strcmp(a, "--threads") == 0)
            threads = atoi(v);
        else if (strcmp(a, "--steps") == 0)
            steps = atoi(v), steps_given = 1;
        else if (strcmp(a, "--warmup") == 0)
            warmup = atoi(v);
        else if (strcmp(a, "--lr") == 0)
            lr = strtod(v, NULL);
        else if (strcmp(a, "--sgemm") == 0)
            sgemm = v;
        else if (strcmp(a, "--isa") == 0)
            isa = v;
        else if (strcmp(a, "--data") == 0)
            data = v;
        else if (strcmp(a, "--checkpoint") == 0)
            checkpoint = v;
        else if (strcmp(a, "--seed") == 0)
            seed = strtoull(v, NULL, 10);
        else {
            usage();
            return 2;
        }
        i++;
    }
    tune_set_log_callback(log_stderr, TUNE_LOG_WARN, NULL);
    if (sgemm)
        return run_sgemm(sgemm, threads);
    if (data || checkpoint) {
        if (!data || !checkpoint || B < 1 || S < 8 || S > MAX_POS || warmup < 0 || threads < 1 ||
            (steps_given && (steps < 1 || steps > MAX_STEPS))) {
            usage();
            return 2;
        }
        return run_data_bench(data, checkpoint, B, S, threads, steps_given ? steps : 30, warmup, lr,
                              seed);
    }
    const struct named_config *nc = NULL;
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        if (strcmp(configs[i].name, config) == 0)
            nc = &configs[i];
    if (!nc || B < 1 || S < 1 || S > MAX_POS || steps < 1 || steps > MAX_STEPS || warmup < 0 ||
        threads < 1) {
        usage();
        return 2;
    }
    if (eval)
        return run_eval_bench(nc, batch_given ? B : 256, S, threads, steps, warmup);
    return run_step_bench(nc, B, S, threads, steps, warmup, lr, breakdown, isa);
}
