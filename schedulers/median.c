/*
 * median.c - the median stopping rule with the semantics of Ray Tune's
 * MedianStoppingRule (ray/tune/schedulers/median_stopping_rule.py), the rule
 * of Google Vizier (Golovin et al., KDD 2017).
 *
 * At a report at time t >= grace_period, the trial's best score so far is
 * compared with the median, over the other trials whose last report is at
 * time >= t, of their running means (the mean of their scores reported at
 * grace_period <= time <= t). Strictly below: STOP, or PAUSE without
 * hard_stop (such a trial is never judged again, as in Ray). With fewer than
 * min_samples_required such trials the trial yields (PAUSE) if other trials
 * wait to run and it ran more than min_time_slice since it last yielded.
 * Paused trials resume first-in first-out once no new trial is left.
 *
 * Cost: a trial keeps its reports (time, score, and the running sum of its
 * in-scope scores), 24 bytes each, so a running mean is one binary search
 * while its times never go back (the usual case; otherwise a scan of that
 * trial). A decision visits every trial with results, O(n log r) for n trials
 * of r reports (Ray's own rule is O(n r)): the median depends on t, so no
 * structure shared across reports would stay valid. The median itself is a
 * quickselect. Per-trial arrays grow while reporting; if that allocation
 * fails the report is not recorded and the trial goes on.
 *
 * The file ends with the rule's row (scheduler.h): its options as a table
 * with Ray's names and defaults.
 */
#include "schedulers/median.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct mtrial {
    double *t, *v, *cum; /* times, scores, cum[i] = sum of v[first..i] (see first) */
    size_t n, cap;
    size_t first;      /* index of the first report with t >= grace (n when none); monotonic only */
    double best;       /* best score so far (Ray's _best_result over every report) */
    double last_pause; /* time of the last yield, -inf before any (Ray's _last_pause) */
    int known;
    int has_results; /* listed in with_results */
    int monotonic;   /* report times never went back */
    int stopped;     /* judged below the median without hard_stop: FIFO from now on */
    int paused, queued;
};

struct tunep_median {
    struct tunep_median_config cfg;
    struct mtrial *trials; /* indexed by trial id */
    size_t cap;
    int64_t n_known;
    int64_t *with_results; /* ids of trials with at least one report, in first-report order */
    size_t n_with;
    double *scratch; /* running means for one decision; room for every known trial */
    int64_t *queue;  /* ring buffer of paused trials, oldest first; room for every known trial */
    size_t q_head, q_len;
    size_t room; /* capacity of with_results, scratch and queue */
    int64_t num_stopped, num_paused;
};

static tune_status median_new(const void *config, const tune_space *space, uint64_t seed,
                              void **ret, tune_error *err)
{
    const struct tunep_median_config *cfg = config;
    (void)space;
    (void)seed;
    if (!(cfg->grace_period >= 0) || cfg->min_samples_required < 1 || !(cfg->min_time_slice >= 0))
        return tunep_error_set(err, TUNE_EINVAL, "median_stopping: invalid options");
    struct tunep_median *m = tunep_calloc(1, sizeof *m);
    if (!m)
        return tunep_error_set(err, TUNE_ENOMEM, "median_stopping: out of memory");
    m->cfg = *cfg;
    m->cfg.time_attr[sizeof m->cfg.time_attr - 1] = '\0';
    *ret = m;
    return TUNE_OK;
}

static void median_free(void *self)
{
    struct tunep_median *m = self;
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++) {
        tunep_free(m->trials[i].t);
        tunep_free(m->trials[i].v);
        tunep_free(m->trials[i].cum);
    }
    tunep_free(m->trials);
    tunep_free(m->with_results);
    tunep_free(m->scratch);
    tunep_free(m->queue);
    tunep_free(m);
}

static struct mtrial *get(const struct tunep_median *m, int64_t id)
{
    if (id < 0 || (uint64_t)id >= m->cap || !m->trials[id].known)
        return NULL;
    return &m->trials[id];
}

/* Grows the per-study arrays to hold `need` trials; the ring buffer is unrolled on the way. */
static tune_status reserve_room(struct tunep_median *m, size_t need)
{
    if (m->room >= need)
        return TUNE_OK;
    size_t room = m->room ? m->room : 64;
    while (room < need)
        room *= 2;
    int64_t *with = tunep_realloc(m->with_results, m->room * sizeof *with, room * sizeof *with);
    if (!with)
        return TUNE_ENOMEM;
    m->with_results = with;
    double *scratch = tunep_realloc(m->scratch, m->room * sizeof *scratch, room * sizeof *scratch);
    if (!scratch)
        return TUNE_ENOMEM;
    m->scratch = scratch;
    int64_t *q = tunep_malloc(room * sizeof *q);
    if (!q)
        return TUNE_ENOMEM;
    for (size_t i = 0; i < m->q_len; i++)
        q[i] = m->queue[(m->q_head + i) % m->room];
    tunep_free(m->queue);
    m->queue = q;
    m->q_head = 0;
    m->room = room;
    return TUNE_OK;
}

static tune_status median_on_trial_add(void *self, int64_t trial_id, double u)
{
    struct tunep_median *m = self;
    (void)u;
    if (trial_id < 0)
        return TUNE_EINVAL;
    if (get(m, trial_id))
        return TUNE_OK; /* a retry keeps its reports, as Ray's _results does */
    if ((uint64_t)trial_id >= m->cap) {
        if ((uint64_t)trial_id >= SIZE_MAX / 4 / sizeof(struct mtrial))
            return TUNE_ENOMEM;
        size_t cap = m->cap ? m->cap : 64;
        while (cap <= (size_t)trial_id)
            cap *= 2;
        struct mtrial *tr = tunep_realloc(m->trials, m->cap * sizeof *tr, cap * sizeof *tr);
        if (!tr)
            return TUNE_ENOMEM;
        memset(tr + m->cap, 0, (cap - m->cap) * sizeof *tr);
        m->trials = tr;
        m->cap = cap;
    }
    if (reserve_room(m, (size_t)m->n_known + 1) != TUNE_OK)
        return TUNE_ENOMEM;
    struct mtrial *tr = &m->trials[trial_id];
    tr->known = 1;
    tr->monotonic = 1;
    tr->best = -HUGE_VAL;
    tr->last_pause = -HUGE_VAL;
    m->n_known++;
    return TUNE_OK;
}

/* Appends a report; 0 on OOM (the report is then not recorded). */
static int record(struct tunep_median *m, int64_t id, struct mtrial *tr, double t, double v)
{
    if (tr->n == tr->cap) {
        size_t cap = tr->cap ? tr->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof(double))
            return 0;
        double *nt = tunep_realloc(tr->t, tr->cap * sizeof *nt, cap * sizeof *nt);
        if (!nt)
            return 0;
        tr->t = nt;
        double *nv = tunep_realloc(tr->v, tr->cap * sizeof *nv, cap * sizeof *nv);
        if (!nv)
            return 0;
        tr->v = nv;
        double *nc = tunep_realloc(tr->cum, tr->cap * sizeof *nc, cap * sizeof *nc);
        if (!nc)
            return 0;
        tr->cum = nc;
        tr->cap = cap;
    }
    size_t i = tr->n;
    if (i > 0 && t < tr->t[i - 1])
        tr->monotonic = 0;
    tr->t[i] = t;
    tr->v[i] = v;
    /* While times only grow, the in-scope reports are a suffix starting at `first`. */
    if (tr->first == i && !(t >= m->cfg.grace_period))
        tr->first = i + 1;
    tr->cum[i] = (i > tr->first ? tr->cum[i - 1] : 0.0) + (i >= tr->first ? v : 0.0);
    tr->n++;
    if (v > tr->best)
        tr->best = v;
    if (!tr->has_results) {
        tr->has_results = 1;
        m->with_results[m->n_with++] = id; /* room reserved when the trial was added */
    }
    return 1;
}

/* Ray's _running_mean: the mean of the scores reported at grace <= time <= t. */
static int running_mean(const struct tunep_median *m, const struct mtrial *tr, double t,
                        double *ret)
{
    if (tr->monotonic) {
        /* k = the number of reports at time <= t */
        size_t lo = 0, hi = tr->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (tr->t[mid] <= t)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo <= tr->first)
            return 0;
        *ret = tr->cum[lo - 1] / (double)(lo - tr->first);
        return 1;
    }
    double sum = 0;
    size_t count = 0;
    for (size_t i = 0; i < tr->n; i++) {
        if (tr->t[i] >= m->cfg.grace_period && tr->t[i] <= t) {
            sum += tr->v[i];
            count++;
        }
    }
    if (count == 0)
        return 0;
    *ret = sum / (double)count;
    return 1;
}

/* The k-th smallest of v[0..n) (0-based), reordering v: Hoare's quickselect. */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        /* median of three as pivot keeps sorted input linear */
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo], b = v[mid], c = v[hi];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double tmp = v[i];
                v[i] = v[j];
                v[j] = tmp;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* numpy.median: the middle value, or the mean of the two middle values. n > 0. */
static double median_of(double *v, size_t n)
{
    double upper = select_kth(v, n, n / 2);
    if (n % 2)
        return upper;
    double lower = v[0];
    for (size_t i = 1; i < n / 2; i++) /* select_kth left the smaller half in front */
        if (v[i] > lower)
            lower = v[i];
    return (lower + upper) / 2.0;
}

int tunep_median_running_mean(const struct tunep_median *m, int64_t trial_id, double t,
                              double *ret_mean)
{
    const struct mtrial *tr = get(m, trial_id);
    return tr ? running_mean(m, tr, t, ret_mean) : 0;
}

static enum tunep_decision median_on_result(void *self, int64_t trial_id, int has_t, double t,
                                            double score, int64_t n_waiting)
{
    struct tunep_median *m = self;
    struct mtrial *tr = get(m, trial_id);
    if (!has_t || !tr || isnan(t))
        return TUNEP_CONTINUE;
    if (tr->stopped)
        return TUNEP_CONTINUE; /* Ray: "Fall back to FIFO" */
    if (isnan(score))
        score = -HUGE_VAL;
    if (!record(m, trial_id, tr, t, score))
        return TUNEP_CONTINUE;
    if (t < m->cfg.grace_period)
        return TUNEP_CONTINUE;

    /* Ray's _trials_beyond_time(t) less this trial. A trial whose reports at or past
     * grace all lie after t has no running mean (numpy: mean of nothing is NaN, which
     * would stop everyone); it is left out. */
    size_t count = 0;
    for (size_t i = 0; i < m->n_with; i++) {
        int64_t id = m->with_results[i];
        const struct mtrial *o = &m->trials[id];
        double mean;
        if (id == trial_id || !(o->t[o->n - 1] >= t))
            continue;
        if (running_mean(m, o, t, &mean))
            m->scratch[count++] = mean;
    }
    if (count < (size_t)m->cfg.min_samples_required) {
        /* Ray's _on_insufficient_samples: yield to trials that wait (PENDING or PAUSED). */
        int others_wait = n_waiting > 0 || m->num_paused > 0;
        if (t - tr->last_pause > m->cfg.min_time_slice && others_wait) {
            tr->last_pause = t;
            return TUNEP_PAUSE;
        }
        return TUNEP_CONTINUE;
    }
    double median = median_of(m->scratch, count);
    /* Ray: compare_op(median, best) != best, i.e. for "max" median > best. */
    if (median > tr->best) {
        m->num_stopped++;
        if (m->cfg.hard_stop)
            return TUNEP_STOP;
        tr->stopped = 1;
        return TUNEP_PAUSE;
    }
    return TUNEP_CONTINUE;
}

static void median_on_trial_complete(void *self, int64_t trial_id, int has_result, double last_t,
                                     double last_score)
{
    struct tunep_median *m = self;
    struct mtrial *tr = get(m, trial_id);
    if (!tr)
        return;
    if (tr->paused) {
        tr->paused = 0; /* its queue entry goes stale */
        m->num_paused--;
    }
    if (isnan(last_score))
        last_score = -HUGE_VAL;
    /* Ray appends the final result again (on_trial_complete), counting it twice in the
     * running mean; we record it only when on_result did not see it. */
    if (has_result && !isnan(last_t) &&
        (tr->n == 0 || tr->t[tr->n - 1] != last_t || tr->v[tr->n - 1] != last_score))
        (void)record(m, trial_id, tr, last_t, last_score);
}

static void median_on_trial_paused(void *self, int64_t trial_id)
{
    struct tunep_median *m = self;
    struct mtrial *tr = get(m, trial_id);
    if (!tr || tr->paused)
        return;
    tr->paused = 1;
    m->num_paused++;
    if (!tr->queued) {
        tr->queued = 1;
        m->queue[(m->q_head + m->q_len++) % m->room] = trial_id; /* one entry per trial */
    }
}

static enum tunep_next median_choose(void *self, int new_left, int64_t n_running, int64_t *ret_id)
{
    struct tunep_median *m = self;
    (void)n_running;
    /* Ray's FIFOScheduler.choose_trial_to_run: PENDING trials first, then PAUSED ones. */
    if (new_left)
        return TUNEP_NEXT_NEW;
    while (m->q_len > 0) {
        int64_t id = m->queue[m->q_head];
        m->q_head = (m->q_head + 1) % m->room;
        m->q_len--;
        struct mtrial *tr = &m->trials[id];
        tr->queued = 0;
        if (tr->paused) {
            tr->paused = 0;
            m->num_paused--;
            if (ret_id)
                *ret_id = id;
            return TUNEP_NEXT_RESUME;
        }
    }
    return TUNEP_NEXT_NEW;
}

static void median_describe(const void *self, double sign, struct tunep_buf *buf)
{
    const struct tunep_median *m = self;
    (void)sign;
    tunep_buf_printf(buf, "Median stopping: %zu trials with results, %lld %s, %lld paused\n",
                     m->n_with, (long long)m->num_stopped,
                     m->cfg.hard_stop ? "stopped" : "below the median", (long long)m->num_paused);
}

int64_t tunep_median_num_stopped(const struct tunep_median *m)
{
    return m->num_stopped;
}

int64_t tunep_median_num_paused(const struct tunep_median *m)
{
    return m->num_paused;
}

/* ---- the config and the row ------------------------------------------------ */

#define ROW(name_, type_, field, lo_, hi_, def_)                                                   \
    TUNEP_OPT_ROW(name_, type_, struct tunep_median_config, field, lo_, hi_, def_)

/* Ray's MedianStoppingRule options and defaults. */
static const struct tunep_option median_options[] = {
    {.name = "time_attr",
     .type = TUNEP_OPT_NAME,
     .offset = offsetof(struct tunep_median_config, time_attr),
     .hi = sizeof(((struct tunep_median_config *)0)->time_attr),
     .def_text = "time_total_s"},
    ROW("grace_period", TUNEP_OPT_REAL, grace_period, 0, HUGE_VAL, 60),
    ROW("min_samples_required", TUNEP_OPT_WHOLE, min_samples_required, 1, 1e9, 3),
    ROW("min_time_slice", TUNEP_OPT_REAL, min_time_slice, 0, HUGE_VAL, 0),
    ROW("hard_stop", TUNEP_OPT_BOOL, hard_stop, 0, 1, 1),
    {0},
};

static const char *median_time_attr(const void *config)
{
    return ((const struct tunep_median_config *)config)->time_attr;
}

static const char *const median_aliases[] = {"median_stopping_rule", NULL};

const struct tunep_scheduler_type tunep_median_type = {
    .name = "median_stopping",
    .aliases = median_aliases,
    .title = "Median stopping",
    .options = median_options,
    .config_size = sizeof(struct tunep_median_config),
    .time_attr = median_time_attr,
    .create = median_new,
    .free = median_free,
    .on_trial_add = median_on_trial_add,
    .on_result = median_on_result,
    .on_trial_complete = median_on_trial_complete,
    .on_trial_paused = median_on_trial_paused,
    .choose = median_choose,
    .describe = median_describe,
};

struct tunep_median *tunep_scheduler_median(struct tunep_scheduler *s)
{
    return tunep_scheduler_type_of(s) == &tunep_median_type ? tunep_scheduler_state(s) : NULL;
}
