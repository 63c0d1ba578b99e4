/*
 * mpi.c - a sweep across MPI ranks (Open MPI): `mpirun -n N tune run CONFIG`.
 *
 * Rank 0 is the controller: it runs the study as on one machine (searcher,
 * scheduler, store, CSV files, report), but each of its worker threads runs
 * its trials on one "slot" of another rank instead of calling the objective:
 * slot k of rank r is served by a thread on rank r, and the two talk with
 * tag k + 1 only, so threads never see each other's messages. Only rank 0
 * touches the store. Messages (native byte order: one kind of machine):
 *   0 -> r  'T' i64 id, i32 attempt, u64 seed, u32 n, then per parameter
 *               u8 kind and f64 | i64 | i32 | u32 len + bytes     (run a trial)
 *           'Q'                                                  (no more trials)
 *   r -> 0  'R' u32 n { u16 len, name bytes, f64 value } * n       (a report)
 *           'D' i32 status, u16 len, error text                  (objective done)
 *   0 -> r  i32 status                                             (a report's answer)
 * A report is answered only after rank 0 made it durable, as in a local run,
 * so nothing a worker was told is lost when the job dies; `tune resume`
 * continues it (with mpirun again, or on one machine).
 *
 * The MPI library needs MPI_THREAD_MULTIPLE: several threads per rank send
 * and receive at once. Checkpoints stay on the rank that made them, so
 * trials on other ranks do not save any (the schedulers that pause fall back
 * to fast-forwarding; a scheduler that copies checkpoints, PBT, is refused).
 */
#include "engine/study.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rank's place among the ranks on its node, from tune_mpi_init() (MPI is
 * process-wide state already); -1 before it. */
static int node_rank = -1;

#define MAX_MSG_METRICS TUNE_REPORT_MAX_METRICS

/* A received message: MPI_Probe for its size, then MPI_Recv. NULL on OOM. */
static char *recv_msg(int source, int tag, int *ret_len)
{
    MPI_Status status;
    int len = 0;
    if (MPI_Probe(source, tag, MPI_COMM_WORLD, &status) != MPI_SUCCESS ||
        MPI_Get_count(&status, MPI_BYTE, &len) != MPI_SUCCESS)
        return NULL;
    char *buf = tunep_malloc(len > 0 ? (size_t)len : 1);
    if (!buf)
        return NULL;
    if (MPI_Recv(buf, len, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS) {
        tunep_free(buf);
        return NULL;
    }
    *ret_len = len;
    return buf;
}

static int send_buf(const struct tunep_buf *b, int dest, int tag)
{
    if (b->oom)
        return -1;
    return MPI_Send(b->data, (int)b->len, MPI_BYTE, dest, tag, MPI_COMM_WORLD) == MPI_SUCCESS ? 0
                                                                                              : -1;
}

/* A cursor over a received message. */
struct rd {
    const char *p, *end;
    int bad;
};

static void take(struct rd *r, void *out, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
}

/* ---- rank 0: the controller's side ---------------------------------------- */

static void put_values(struct tunep_buf *b, size_t n, const struct tunep_value *v)
{
    uint32_t n32 = (uint32_t)n;
    tunep_buf_append(b, (const char *)&n32, sizeof n32);
    for (size_t i = 0; i < n; i++) {
        uint8_t kind = (uint8_t)v[i].type;
        tunep_buf_append(b, (const char *)&kind, 1);
        switch (v[i].type) {
            case TUNEP_V_DOUBLE: tunep_buf_append(b, (const char *)&v[i].u.d, 8); break;
            case TUNEP_V_INT: tunep_buf_append(b, (const char *)&v[i].u.i, 8); break;
            case TUNEP_V_BOOL: {
                int32_t x = v[i].u.b;
                tunep_buf_append(b, (const char *)&x, 4);
                break;
            }
            case TUNEP_V_STRING: {
                const char *s = v[i].u.s ? v[i].u.s : "";
                uint32_t len = (uint32_t)strlen(s);
                tunep_buf_append(b, (const char *)&len, 4);
                tunep_buf_append(b, s, len);
                break;
            }
            case TUNEP_V_ABSENT: break; /* the kind says it all */
        }
    }
}

/* Answers one 'R' message through the normal report path. 0, or -1 on a broken message. */
static int serve_report(struct tune_trial *t, struct rd *r, int rank, int tag)
{
    uint32_t n = 0;
    take(r, &n, sizeof n);
    if (r->bad || n > MAX_MSG_METRICS)
        return -1;
    char *names[MAX_MSG_METRICS] = {NULL};
    double values[MAX_MSG_METRICS] = {0};
    uint32_t i;
    for (i = 0; i < n; i++) {
        uint16_t len = 0;
        take(r, &len, sizeof len);
        if (r->bad || (size_t)(r->end - r->p) < len || !(names[i] = tunep_malloc(len + 1u)))
            break;
        memcpy(names[i], r->p, len);
        names[i][len] = '\0';
        r->p += len;
        take(r, &values[i], sizeof values[i]);
    }
    int32_t answer =
        i == n && !r->bad
            ? (int32_t)tune_trial_report(t, n, (const char *const *)names, values, NULL)
            : (int32_t)TUNE_EINVAL;
    for (uint32_t k = 0; k < i; k++)
        tunep_free(names[k]);
    if (MPI_Send(&answer, 1, MPI_INT32_T, rank, tag, MPI_COMM_WORLD) != MPI_SUCCESS)
        return -1;
    return i == n && !r->bad ? 0 : -1;
}

tune_status tunep_run_remote(struct tune_study *s, struct tune_trial *t, int slot)
{
    int rank = 1 + slot / s->mpi_per_rank, tag = 1 + slot % s->mpi_per_rank;
    struct tunep_buf b;
    tunep_buf_init(&b);
    int64_t id = t->rec->id;
    int32_t attempt = t->rec->attempt;
    uint64_t seed = s->cfg.seed;
    tunep_buf_append(&b, "T", 1);
    tunep_buf_append(&b, (const char *)&id, sizeof id);
    tunep_buf_append(&b, (const char *)&attempt, sizeof attempt);
    tunep_buf_append(&b, (const char *)&seed, sizeof seed);
    put_values(&b, s->n_params, t->rec->values);
    int sent = send_buf(&b, rank, tag);
    tunep_buf_done(&b);
    if (sent) {
        snprintf(t->error, sizeof t->error, "cannot send trial %lld to MPI rank %d", (long long)id,
                 rank);
        return TUNE_EFAILED;
    }
    for (;;) {
        int len = 0;
        char *msg = recv_msg(rank, tag, &len);
        if (!msg || len < 1) {
            tunep_free(msg);
            snprintf(t->error, sizeof t->error, "lost MPI rank %d during trial %lld", rank,
                     (long long)id);
            return TUNE_EFAILED;
        }
        struct rd r = {msg + 1, msg + len, 0};
        if (msg[0] == 'R') {
            int bad = serve_report(t, &r, rank, tag);
            tunep_free(msg);
            if (bad) {
                snprintf(t->error, sizeof t->error, "a broken report from MPI rank %d", rank);
                return TUNE_EFAILED;
            }
            continue;
        }
        int32_t status = TUNE_EFAILED;
        uint16_t elen = 0;
        int done = msg[0] == 'D';
        take(&r, &status, sizeof status);
        take(&r, &elen, sizeof elen);
        if (done && !r.bad && (size_t)(r.end - r.p) >= elen && elen > 0) {
            size_t n = elen < sizeof t->error ? elen : sizeof t->error - 1;
            memcpy(t->error, r.p, n);
            t->error[n] = '\0';
        }
        tunep_free(msg);
        if (!done || r.bad) {
            snprintf(t->error, sizeof t->error, "a broken message from MPI rank %d", rank);
            return TUNE_EFAILED;
        }
        return (tune_status)status;
    }
}

/* Tells every slot of every other rank that there are no more trials. */
void tunep_mpi_quit_workers(struct tune_study *s)
{
    for (int r = 1; r < s->mpi_size; r++)
        for (int k = 1; k <= s->mpi_per_rank; k++)
            MPI_Send("Q", 1, MPI_BYTE, r, k, MPI_COMM_WORLD);
}

/* ---- ranks > 0: the workers' side ------------------------------------------ */

tune_status tunep_mpi_report(struct tune_trial *t, size_t n, const char *const *names,
                             const double *values)
{
    if (n > MAX_MSG_METRICS)
        return TUNE_EINVAL;
    struct tunep_buf b;
    tunep_buf_init(&b);
    tunep_report_msg_put(&b, n, names, values);
    int32_t answer = TUNE_ESTORE;
    int ok = send_buf(&b, 0, t->remote_tag) == 0 &&
             MPI_Recv(&answer, 1, MPI_INT32_T, 0, t->remote_tag, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE) == MPI_SUCCESS;
    tunep_buf_done(&b);
    if (ok && (answer == TUNE_OK || answer == TUNE_ESTOP))
        t->rec->iteration++; /* keeps tune_trial_iteration() right on this rank */
    return ok ? (tune_status)answer : TUNE_ESTORE;
}

/* Decodes a 'T' message into rec (strings owned). 0, or -1 when it is broken. */
static int read_trial(struct tune_study *s, struct rd *r, struct tunep_trial_rec *rec,
                      uint64_t *ret_seed)
{
    int32_t attempt = 0;
    uint32_t n = 0;
    take(r, &rec->id, sizeof rec->id);
    take(r, &attempt, sizeof attempt);
    take(r, ret_seed, sizeof *ret_seed);
    take(r, &n, sizeof n);
    if (r->bad || n != s->n_params)
        return -1;
    rec->attempt = attempt;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t kind = 0;
        take(r, &kind, 1);
        struct tunep_value *v = &rec->values[i];
        v->type = (enum tunep_vtype)kind;
        switch (kind) {
            case TUNEP_V_DOUBLE: take(r, &v->u.d, 8); break;
            case TUNEP_V_INT: take(r, &v->u.i, 8); break;
            case TUNEP_V_BOOL: {
                int32_t x = 0;
                take(r, &x, 4);
                v->u.b = x;
                break;
            }
            case TUNEP_V_STRING: {
                uint32_t len = 0;
                take(r, &len, 4);
                char *str = NULL;
                if (r->bad || (size_t)(r->end - r->p) < len || !(str = tunep_malloc(len + 1u))) {
                    v->type = TUNEP_V_INT; /* nothing owned to free */
                    return -1;
                }
                memcpy(str, r->p, len);
                str[len] = '\0';
                r->p += len;
                v->u.s = str;
                break;
            }
            case TUNEP_V_ABSENT: break;
            default: return -1;
        }
    }
    return r->bad ? -1 : 0;
}

struct slot_arg {
    struct tune_study *s;
    int tag;
};

/* One slot of this rank: runs the trials rank 0 sends on this tag until 'Q'. */
static void *slot_main(void *arg)
{
    struct slot_arg *a = arg;
    struct tune_study *s = a->s;
    for (;;) {
        int len = 0;
        char *msg = recv_msg(0, a->tag, &len);
        if (!msg || len < 1 || msg[0] != 'T') {
            tunep_free(msg);
            break; /* 'Q', or the controller is gone */
        }
        struct tunep_trial_rec *rec = tunep_calloc(1, sizeof *rec);
        struct rd r = {msg + 1, msg + len, 0};
        uint64_t seed = 0;
        tune_status st = TUNE_ENOMEM;
        if (rec &&
            (rec->values = tunep_calloc(s->n_params ? s->n_params : 1, sizeof *rec->values))) {
            rec->own_strings = 1;
            rec->status = TUNE_TRIAL_RUNNING;
            st = read_trial(s, &r, rec, &seed) ? TUNE_EINVAL : TUNE_OK;
        }
        tunep_free(msg);
        struct tune_trial t = {.study = s,
                               .rec = rec,
                               .ipc_req = -1,
                               .ipc_resp = -1,
                               .donor = -1,
                               .remote_tag = a->tag,
                               .remote_seed = seed};
        if (st == TUNE_OK)
            st = s->fn(&t, s->fn_data);
        else
            snprintf(t.error, sizeof t.error, "rank could not read its trial: %s",
                     tune_strerror(st));
        int32_t st32 = st;
        uint16_t elen = (uint16_t)strlen(t.error);
        struct tunep_buf b;
        tunep_buf_init(&b);
        tunep_buf_append(&b, "D", 1);
        tunep_buf_append(&b, (const char *)&st32, sizeof st32);
        tunep_buf_append(&b, (const char *)&elen, sizeof elen);
        tunep_buf_append(&b, t.error, elen);
        int sent = send_buf(&b, 0, a->tag);
        tunep_buf_done(&b);
        tunep_trial_rec_free(rec, s->n_params);
        if (sent)
            break;
    }
    return NULL;
}

/* ---- the public entry points ----------------------------------------------- */

int tune_mpi_available(void)
{
    return 1;
}

tune_status tune_mpi_init(int *argc, char ***argv, int *ret_rank, int *ret_size, tune_error *err)
{
    int provided = 0, rank = 0, size = 1;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return tunep_error_set(err, TUNE_EUNSUPPORTED, "MPI_Init_thread failed");
    if (provided < MPI_THREAD_MULTIPLE) {
        MPI_Finalize();
        return tunep_error_set(err, TUNE_EUNSUPPORTED,
                               "this MPI library does not support MPI_THREAD_MULTIPLE, which "
                               "tune needs (several trials per rank talk at once)");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* This rank's place among the ranks of its node (collective: every rank
     * passes here), for trainers that give each rank its own GPU. */
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &node_rank);
        MPI_Comm_free(&node);
    }
    *ret_rank = rank;
    *ret_size = size;
    return TUNE_OK;
}

void tune_mpi_finalize(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

void tune_mpi_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
}

tune_status tune_study_set_mpi(tune_study *s, int trials_per_rank, tune_error *err)
{
    if (!s || trials_per_rank < 1 || s->readonly || s->has_run)
        return tunep_error_set(err, TUNE_EINVAL, "tune_study_set_mpi: bad arguments");
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0 || size < 2)
        return tunep_error_set(err, TUNE_EINVAL,
                               "the controller runs on rank 0 of at least 2 MPI ranks");
    const struct tunep_scheduler_type *sched = s->cfg.scheduler.type;
    if (sched->checkpoint_interval)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "the %s scheduler copies checkpoints between trials, which "
                               "trials on other MPI ranks cannot share: run %s on one machine",
                               sched->name, sched->title);
    s->mpi_size = size;
    s->mpi_per_rank = trials_per_rank;
    return TUNE_OK;
}

tune_status tune_mpi_serve(tune_study *s, int trials_per_rank, tune_error *err)
{
    if (!s || trials_per_rank < 1 || !s->fn)
        return tunep_error_set(err, TUNE_EINVAL, "tune_mpi_serve: no study or objective");
    tune_status prep = tunep_study_prepare_trainer(s, trials_per_rank, node_rank, err);
    if (prep)
        return prep;
    struct slot_arg *args = tunep_calloc((size_t)trials_per_rank, sizeof *args);
    pthread_t *threads = tunep_calloc((size_t)trials_per_rank, sizeof *threads);
    if (!args || !threads) {
        tunep_free(args);
        tunep_free(threads);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    /* Slots 1 .. n-1 get threads, the last runs here: all must be served at
     * once, or rank 0 would wait on a slot nobody listens to. */
    int started = 0;
    tune_status st = TUNE_OK;
    for (int k = 0; k < trials_per_rank; k++)
        args[k] = (struct slot_arg){s, k + 1};
    for (; started < trials_per_rank - 1; started++)
        if (pthread_create(&threads[started], NULL, slot_main, &args[started])) {
            st = tunep_error_set(err, TUNE_ENOMEM, "cannot start a thread for MPI slot %d",
                                 started + 1);
            break;
        }
    if (!st)
        slot_main(&args[trials_per_rank - 1]);
    for (int k = 0; k < started; k++)
        pthread_join(threads[k], NULL);
    tunep_free(args);
    tunep_free(threads);
    return st;
}
