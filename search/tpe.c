/*
 * tpe.c - the Tree-structured Parzen Estimator searcher (Bergstra et al.,
 * "Algorithms for Hyper-Parameter Optimization", NeurIPS 2011), as Optuna
 * 3.1's TPESampler (optuna/samplers/_tpe/sampler.py, parzen_estimator.py).
 *
 * The first n_startup_trials suggestions are tunep_space_sample() draws (so
 * they equal random search's). Then the completed trials are split into the
 * best gamma(n) = min(ceil(gamma * n), 25) ("below") and the rest ("above",
 * plus the pending trials under constant liar, as Optuna's constant_liar);
 * one Parzen estimator is fitted to each, n_ei_candidates points are drawn
 * from the "below" one and the point with the largest l(x) / g(x) wins.
 * With several objectives the split and the "below" weights are MOTPE's
 * (search/motpe.h; split() and weigh() below), the rest is unchanged.
 * Estimators work in an internal coordinate per parameter: the value for
 * linear ranges, its log for log ranges, the index of the value for integer
 * and quantized linear ranges, the normal CDF for randn (search/unit.c's
 * view, so the prior follows Ray's normal), the index of a choice.
 * Kernels are Optuna's: truncated normals at each observation with the
 * distance to the farther neighbour as width, clipped to [range / min(100,
 * n + 2), range] ("magic clip"), a prior N(mid, range) of weight prior_weight,
 * weights ramping down for all but the newest 25 trials; integer and
 * quantized linear values score by the kernel mass of their cell (Optuna
 * widens the bounds by step/2), choices by Optuna's categorical kernel.
 * multivariate = 1 is Optuna's multivariate TPE: one component index across
 * all dimensions, Scott-rule widths 0.2 n^(-1/(d+4)) * range.
 * Conditional parameters are sampled independently, as Optuna's univariate
 * TPE: the split into below and above is over all trials, and each
 * parameter's estimators hold the members where it was present; a
 * suggestion draws every parameter, then drops those whose option was not
 * chosen (tunep_space_mask).
 * The estimators are Optuna 3.1's to the last quirk: equal values get their
 * widths in numpy's argsort order (search/np_argsort.c), and two quirks that
 * later versions changed are kept on purpose: the truncated normal's
 * log-density lacks -log(sigma) (optuna#5109, "fixed" in 3.5), and log-integer
 * ranges score by the density at log(value), not by their cell's mass
 * (optuna#6258). With the normalised density the median regret at 200
 * evaluations was 0.136 (as 3.1: 0.072) on Hartmann-6 over 20 seeds and
 * 0.0079 (0.0062) on Branin over 100 (bench/search_bench); as they are, the
 * log-densities equal Optuna's (tests/test_tpe.c) and suggestions from a given
 * history follow Optuna's distribution (Kolmogorov-Smirnov and chi-square
 * p > 0.2 on Branin and the synthetic curve).
 * Cost: observations live in arrays kept sorted by score and, per
 * dimension, by internal value as they arrive, so a suggestion sorts only
 * among equal values (numpy's order, on rank keys); one pass gathers both
 * sets of a dimension; kernels with the same centre and width are merged,
 * and a density sums only the kernels that reach within TPE_CUT widths of
 * the point, found by binary search on running reach bounds (branch-free,
 * all candidates' searches interleaved). The loops over kernels (the sums,
 * widths, coefficients, reach bounds, the multivariate terms, the argsort's
 * partition scans) are search/tpe_kernel.h's, vectorised and run with AVX2
 * or AVX-512 where the CPU has them, with the same bits on every CPU; masses
 * of cells and truncations go through a memo of gauss_mass. Densities differ
 * from sequential libm sums in their last bits only (sums in lanes, exp's
 * rounding); the suggestions are the scalar version's (tests/test_tpe.c pins
 * them). 1,000 finished trials, 4 parameters: 0.05 ms per suggestion on a
 * 2-core AMD EPYC with AVX-512 (search_bench timing; 0.08 ms with AVX2, 0.11
 * with SSE2 only; it was 0.19 ms), 0.12 ms multivariate (it was 1.19 ms).
 */
#include "search/tpe.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "search/motpe.h"
#include "search/np_argsort.h"
#include "search/pareto.h"
#include "search/tpe_kernel.h"

/*
 * Kernels centred more than 9 widths from a point (or cell) are left out: each
 * would add at most exp(-40.5) = 2.6e-18 of its peak density (Phi(-9) =
 * 1.1e-19 of its mass), over a truncation mass Z >= 1/2, while the prior,
 * always summed, carries at least 1/(n+1) of the weight and 0.35 of its peak
 * density anywhere in the range. For n = 10^4 trials the relative error is
 * below 1e-12 for densities, and below 1e-8 for the mass of a cell of 10^-6
 * of the range: far from changing which candidate wins.
 */
#define TPE_CUT 9.0
/* Optuna's default_gamma and default_weights: at most 25 good trials, the newest 25 weigh 1. */
#define TPE_MAX_BELOW    25
#define TPE_FLAT_WEIGHTS 25
#define TPE_SQRT_2PI     2.5066282746310002
/*
 * gauss_mass's memo: 2^TPE_MEMO_BITS entries (128 KiB), direct-mapped; it keeps
 * integer ranges' cell masses and the truncation masses of kernels near a
 * bound, which mostly stay from one suggestion to the next
 */
#define TPE_MEMO_BITS 12

enum dim_kind {
    DIM_CONT, /* continuous: density at x */
    DIM_DISC, /* an index 0..kmax: the kernel mass of its cell (log ranges: density, as CONT) */
    DIM_CAT,  /* a choice: Optuna's categorical kernel */
};

enum slot_state { SLOT_PENDING = 1, SLOT_COMPLETE = 2, SLOT_GONE = 3 };

/* One non-constant parameter, modelled in internal coordinates on [low, high]. */
struct dim {
    size_t param; /* index in the space */
    enum dim_kind kind;
    int logd;         /* DISC: index i sits at log(v0 + i * step); else at i */
    double low, high; /* Parzen bounds (discrete: widened by half a step) */
    double v0, step;  /* DISC log: the value of index i is v0 + i * step */
    double kq_lo;     /* quantized floats: the value of index i is (kq_lo + i) * q */
    double kmax;      /* DISC: the largest index; CAT: number of choices - 1 */
    size_t n_cat;     /* CAT */
    size_t *order;    /* slots with a value, by internal value (ties: arrival order) */
    size_t n_order, cap_order;
};

/* A one-dimensional Parzen estimator over one set (scratch, rebuilt per suggestion). */
struct kde1 {
    size_t n; /* observation components, sorted by mu; the prior is kept apart */
    double *mu, *sig, *isig, *coef, *w;
    double *reach_hi; /* max over j <= k of mu_j + TPE_CUT sig_j */
    double *reach_lo; /* min over j >= k of mu_j - TPE_CUT sig_j */
    size_t *slot;     /* kde_fit: each member's slot, in value order */
    double prior_mu, prior_sig, prior_w, prior_coef;
    double *pmf;              /* CAT: the mixture's probability of each choice */
    double cat_hit, cat_miss; /* CAT: an observation's kernel at its own / another choice */
};

/* Multivariate: one set's estimator in one dimension (beyond the columns of struct mv_set). */
struct mv_dim {
    double sig;         /* Scott's width */
    double prior_lz;    /* the prior's log norm */
    double lhit, lmiss; /* CAT: log of a member's kernel at its own / another choice */
    size_t n_val;       /* mass dimensions: distinct member values */
};

/*
 * Multivariate: one set's joint estimator, each dimension a column of cap
 * entries ([j * cap + k]) so that a candidate's terms add up column by column.
 */
struct mv_set {
    size_t n;           /* members; the prior is kept apart (its log weight: w[n]) */
    double *mu;         /* the members' internal values */
    double *lz;         /* densities: the member's log norm; mass: the u-th distinct value's */
    double *val;        /* mass dimensions: the distinct member values, ascending */
    size_t *id;         /* mass dimensions: the member's value among val */
    double *w;          /* log weights, the prior's last */
    struct mv_dim *dim; /* [d] */
};

/* gauss_mass(a, b) = mass, for the last (a, b) that hashed here; log_mass its log or NaN */
struct memo_entry {
    double a, b, mass, log_mass;
};

struct tpe {
    struct tunep_searcher base;
    struct tunep_tpe_config c;
    const struct tunep_tpe_kernels *kern; /* tpe_kernel.h's, for this CPU */
    struct memo_entry *memo;              /* 2^TPE_MEMO_BITS entries */
    size_t d;                             /* modelled (non-constant) dimensions */
    struct dim *dims;

    /* trials, one slot each, in on_start order; values in internal coordinates */
    size_t n_slots, cap_slots;
    int64_t *ids;
    double *scores;
    unsigned char *state;
    double *vals;     /* [slot * d + j]; NaN: no usable value */
    size_t *by_id;    /* slots by id */
    size_t *by_score; /* completed slots by score (best first), ties by id */
    size_t n_complete;

    /* several objectives (m > 1, MOTPE: search/motpe.h); per slot, grown on completion */
    size_t m;
    double *mo_loss; /* [slot * m + k]: a completed trial's losses (NaN: missing) */
    double *mo_w;    /* a good trial's weight in l(x), set by split() */
    size_t cap_mo;   /* slots mo_loss and mo_w have room for */

    /* scratch, for cap_scratch slots; one block */
    size_t cap_scratch, cap_cat;
    void *scratch;
    unsigned char *member; /* per slot: 0, 1 below, 2 above */
    double *slot_w;        /* per slot: its weight in its set */
    uint64_t *items;       /* tunep_np_argsort's keys and positions */
    size_t *sort_work;     /* tunep_np_argsort's scratch, 2 (cap + TUNEP_TPE_LANES) */
    uint32_t *rank;        /* per slot: its value's rank in its set (kde_finish, ties) */
    int missing;           /* some member lacks a value: weights differ per dimension */
    size_t weighed[3];     /* per set: the dimension slot_w holds weights for (d: all) */
    struct kde1 below, above;
    double *mv_lp;       /* multivariate: per-component log terms */
    double *mv_tab;      /* multivariate: a mass dimension's term per distinct value */
    struct mv_set mv[2]; /* multivariate: below, above */
    double *cand;        /* [n_ei * d] candidates: coordinate or index */
    double *cand_score;
    double *cand_log;          /* [n_ei]: one set's log densities (kde_log_all) */
    size_t *cand_lo, *cand_hi; /* [n_ei]: kernel windows (kde_log_all) */
    struct trunc_ends *ends;   /* per below kernel (the prior's last): for the draws */
    unsigned char *ends_ok;    /* ends[k] holds this dimension's kernel k */
};

/* ---- small numerics ------------------------------------------------------- */

/* The standard normal's mass in [a, b], a <= b, computed in the tail that keeps precision. */
static double gauss_mass(double a, double b)
{
    if (b - a < 1e-5) /* midpoint rule: relative error below (b-a)^2 (m^2+1) / 24 */
        return (b - a) * exp(-0.125 * (a + b) * (a + b)) / TPE_SQRT_2PI;
    if (b <= 0.0)
        return 0.5 * (erfc(-b * M_SQRT1_2) - erfc(-a * M_SQRT1_2));
    if (a >= 0.0)
        return 0.5 * (erfc(a * M_SQRT1_2) - erfc(b * M_SQRT1_2));
    if (a < -TPE_CUT && b > TPE_CUT) /* both tails below 1.2e-19 */
        return 1.0;
    return 1.0 - 0.5 * (erfc(-a * M_SQRT1_2) + erfc(b * M_SQRT1_2));
}

/*
 * gauss_mass through a direct-mapped memo of its last arguments per slot:
 * the same bits as calling it. Cell masses repeat: integer ranges' cells and
 * centres sit on a grid and their kernels share a few widths.
 */
static struct memo_entry *memo_find(struct memo_entry *memo, double a, double b)
{
    uint64_t ua, ub, ea, eb;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    uint64_t h = (ua ^ (ub * 0x9e3779b97f4a7c15u)) * 0xff51afd7ed558ccdu;
    struct memo_entry *e = &memo[h >> (64 - TPE_MEMO_BITS)];
    memcpy(&ea, &e->a, sizeof ea);
    memcpy(&eb, &e->b, sizeof eb);
    if (ea != ua || eb != ub) { /* compared as bits: -0.0 is not 0.0, NaN is itself */
        e->a = a;
        e->b = b;
        e->mass = gauss_mass(a, b);
        e->log_mass = (double)NAN; /* when first asked */
    }
    return e;
}

static double gauss_mass_memo(struct memo_entry *memo, double a, double b)
{
    return memo_find(memo, a, b)->mass;
}

/* log(gauss_mass(a, b)), through the memo. */
static double gauss_log_mass_memo(struct memo_entry *memo, double a, double b)
{
    struct memo_entry *e = memo_find(memo, a, b);
    if (isnan(e->log_mass))
        e->log_mass = log(e->mass);
    return e->log_mass;
}

/*
 * N(mu, sig) truncated to [low, high]: its standard bounds a, b and their
 * CDFs (survival functions when both ends lie in the upper tail), which
 * every draw from the same kernel shares.
 */
struct trunc_ends {
    double a, b, pa, pb;
};

static struct trunc_ends truncnorm_ends(double mu, double sig, double low, double high)
{
    struct trunc_ends e = {(low - mu) / sig, (high - mu) / sig, 0.0, 0.0};
    if (e.a < 0.0) {
        e.pa = gsl_cdf_ugaussian_P(e.a);
        e.pb = gsl_cdf_ugaussian_P(e.b);
    } else { /* both ends in the upper tail: invert the survival function */
        e.pa = gsl_cdf_ugaussian_Q(e.a);
        e.pb = gsl_cdf_ugaussian_Q(e.b);
    }
    return e;
}

/* A draw from N(mu, sig) truncated to [low, high] by inversion (Optuna's _truncnorm.ppf). */
static double truncnorm_from(const struct trunc_ends *e, double mu, double sig, double low,
                             double high, double u)
{
    double z;
    if (e->a < 0.0)
        z = gsl_cdf_ugaussian_Pinv(e->pa + u * (e->pb - e->pa));
    else
        z = gsl_cdf_ugaussian_Qinv(e->pa - u * (e->pa - e->pb));
    if (!(z >= e->a)) /* NaN too */
        z = e->a;
    if (z > e->b)
        z = e->b;
    double x = mu + sig * z;
    return x < low ? low : x > high ? high : x;
}

static double truncnorm_draw(double mu, double sig, double low, double high, double u)
{
    struct trunc_ends e = truncnorm_ends(mu, sig, low, high);
    return truncnorm_from(&e, mu, sig, low, high, u);
}

/* Optuna's default_weights(x)[rank]: a ramp from 1/x to 1 for all but the newest 25. */
static double ramp_weight(size_t rank, size_t x)
{
    if (x <= TPE_FLAT_WEIGHTS || rank >= x - TPE_FLAT_WEIGHTS)
        return 1.0;
    size_t num = x - TPE_FLAT_WEIGHTS; /* np.linspace(1 / x, 1, num) */
    double lo = 1.0 / (double)x;
    if (num == 1)
        return lo;
    return lo + (double)rank * ((1.0 - lo) / (double)(num - 1));
}

/*
 * The first index of the non-decreasing a[0..n) with a[k] >= x (strict: a[k] > x):
 * the number of elements before it, halving the range with a select rather than a
 * branch (the data would mispredict half of them).
 */
static size_t lower_bound(const double *a, size_t n, double x, int strict)
{
    if (n == 0)
        return 0;
    const double *base = a;
    while (n > 1) {
        size_t half = n / 2;
        int before = strict ? !(base[half] > x) : !(base[half] >= x);
        base = before ? base + half : base;
        n -= half;
    }
    return (size_t)(base - a) + (strict ? !(*base > x) : !(*base >= x));
}

/* ---- parameters: internal coordinates and back ---------------------------- */

static int value_number(const struct tunep_value *v, double *ret)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: *ret = v->u.d; return isfinite(v->u.d);
        case TUNEP_V_INT: *ret = (double)v->u.i; return 1;
        case TUNEP_V_BOOL: *ret = v->u.b ? 1.0 : 0.0; return 1;
        case TUNEP_V_STRING:
        case TUNEP_V_ABSENT: break;
    }
    return 0;
}

static int value_equal(const struct tunep_value *a, const struct tunep_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
        case TUNEP_V_DOUBLE: return a->u.d == b->u.d;
        case TUNEP_V_INT: return a->u.i == b->u.i;
        case TUNEP_V_BOOL: return (a->u.b != 0) == (b->u.b != 0);
        case TUNEP_V_STRING: return strcmp(a->u.s, b->u.s) == 0;
        case TUNEP_V_ABSENT: break;
    }
    return 0;
}

/* An index in [0, kmax] from a double, rounding half to even as numpy's round. */
static double clamp_index(double x, double kmax)
{
    double i = nearbyint(x);
    if (!(i > 0.0))
        return 0.0;
    return i > kmax ? kmax : i;
}

static uint64_t index_u64(double i, uint64_t kmax)
{
    if (!(i > 0.0))
        return 0;
    if (i >= (double)kmax) /* (double)kmax may round above kmax: compare before converting */
        return kmax;
    return (uint64_t)i;
}

/* Integer ranges: the step between indices, and the largest index. */
static uint64_t int_step(const struct tunep_param *p)
{
    return p->dist == TUNEP_DIST_RANDINT || p->dist == TUNEP_DIST_LOGRANDINT ? 1u : (uint64_t)p->iq;
}

static uint64_t int_kmax(const struct tunep_param *p)
{
    uint64_t span = (uint64_t)p->ihi - (uint64_t)p->ilo; /* Ray: randint's high is exclusive */
    return int_step(p) == 1u && (p->dist == TUNEP_DIST_RANDINT || p->dist == TUNEP_DIST_LOGRANDINT)
               ? span - 1u
               : span / int_step(p);
}

/* Sets up a dimension for parameter p; TUNE_ECONFIG for what TPE cannot model. */
static tune_status dim_init(struct dim *m, size_t param, const struct tunep_param *p,
                            tune_error *err)
{
    memset(m, 0, sizeof *m);
    m->param = param;
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM:
            m->kind = DIM_CONT;
            m->low = p->lo;
            m->high = p->hi;
            break;
        case TUNEP_DIST_LOGUNIFORM: /* the base only rescales log space, which TPE does not see */
            m->kind = DIM_CONT;
            m->low = log(p->lo);
            m->high = log(p->hi);
            break;
        case TUNEP_DIST_RANDN:
        case TUNEP_DIST_QRANDN:
            /*
             * Normals are modelled through their CDF, u = Phi((x - mean) / sd) on [0, 1],
             * rather than rejected or cut at mean +- 4 sd: the prior is then Ray's normal
             * itself and no value Ray could draw is out of reach. A value is mean + sd
             * Phi^-1(u), u kept 2^-53 from the ends (+-8.2 sd), and qrandn rounds it to q.
             * qrandn is scored as continuous in u: far in the tails its cells are
             * narrower than a double resolves in u.
             */
            m->kind = DIM_CONT;
            m->low = 0.0;
            m->high = 1.0;
            break;
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM: {
            double klo = nearbyint(p->lo / p->q), khi = nearbyint(p->hi / p->q);
            m->kind = DIM_DISC;
            m->kq_lo = klo;
            m->kmax = khi - klo;
            if (p->dist == TUNEP_DIST_QLOGUNIFORM) {
                m->logd = 1;
                m->v0 = klo * p->q;
                m->step = p->q;
            }
            break;
        }
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_LOGRANDINT:
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_QLOGRANDINT:
            m->kind = DIM_DISC;
            m->kmax = (double)int_kmax(p);
            m->logd = p->dist == TUNEP_DIST_LOGRANDINT || p->dist == TUNEP_DIST_QLOGRANDINT;
            m->v0 = (double)p->ilo;
            m->step = (double)int_step(p);
            break;
        case TUNEP_DIST_CHOICE:
            m->kind = DIM_CAT;
            m->n_cat = p->n_values;
            m->kmax = (double)(p->n_values - 1);
            m->low = -0.5; /* unused by the categorical kernel */
            m->high = m->kmax + 0.5;
            break;
        case TUNEP_DIST_GRID:
            return tunep_error_set(err, TUNE_ECONFIG,
                                   "tpe cannot search a grid_search axis ('%s'): use choice",
                                   p->name);
        case TUNEP_DIST_CONST:
        case TUNEP_DIST_COUNT:
            return tunep_error_set(err, TUNE_EINTERNAL, "'%s' is not a searchable parameter",
                                   p->name);
    }
    if (m->kind == DIM_DISC) {
        if (m->logd) { /* Optuna: log(low - step/2) .. log(high + step/2); low >= step here */
            m->low = log(m->v0 - 0.5 * m->step);
            m->high = log(m->v0 + (m->kmax + 0.5) * m->step);
        } else {
            m->low = -0.5;
            m->high = m->kmax + 0.5;
        }
    }
    if (!(m->low < m->high) || !isfinite(m->low) || !isfinite(m->high))
        return tunep_error_set(err, TUNE_ECONFIG, "tpe cannot model the range of '%s'", p->name);
    return TUNE_OK;
}

/*
 * Whether a dimension scores by the kernel mass of a value's cell: Optuna 3.1
 * does so for integer and stepped ranges (IntDistribution, FloatDistribution
 * with step), but a log integer range has no q there, so it scores by the
 * density at log(value), like a continuous one (qloguniform, which Optuna
 * lacks, follows the log integers).
 */
static int scored_by_mass(const struct dim *m)
{
    return m->kind == DIM_DISC && !m->logd;
}

/* The internal coordinate of index i of a discrete dimension. */
static double disc_coord(const struct dim *m, double i)
{
    return m->logd ? log(m->v0 + i * m->step) : i;
}

/* The cell of index i in internal coordinates, within the bounds. */
static void disc_cell(const struct dim *m, double i, double *ret_a, double *ret_b)
{
    double a, b;
    if (m->logd) {
        a = log(m->v0 + (i - 0.5) * m->step);
        b = log(m->v0 + (i + 0.5) * m->step);
    } else {
        a = i - 0.5;
        b = i + 0.5;
    }
    *ret_a = a < m->low ? m->low : a;
    *ret_b = b > m->high ? m->high : b;
}

/* The index nearest to internal coordinate x (Optuna rounds in value space). */
static double disc_index(const struct dim *m, double x)
{
    if (m->logd)
        return clamp_index((exp(x) - m->v0) / m->step, m->kmax);
    return clamp_index(x, m->kmax);
}

/* A value's internal coordinate (the index for CAT), or NaN when it has none. */
static double to_internal(const struct dim *m, const struct tunep_param *p,
                          const struct tunep_value *v)
{
    double x, i;
    if (m->kind == DIM_CAT) {
        for (size_t k = 0; k < p->n_values; k++)
            if (value_equal(&p->values[k], v))
                return (double)k;
        return (double)NAN;
    }
    if (!value_number(v, &x))
        return (double)NAN;
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM: return x < p->lo ? p->lo : x > p->hi ? p->hi : x;
        case TUNEP_DIST_LOGUNIFORM:
            x = x > 0.0 ? log(x) : m->low;
            return x < m->low ? m->low : x > m->high ? m->high : x;
        case TUNEP_DIST_RANDN:
        case TUNEP_DIST_QRANDN: return gsl_cdf_ugaussian_P((x - p->lo) / p->hi);
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM:
            i = clamp_index(nearbyint(x / p->q) - m->kq_lo, m->kmax);
            break;
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_LOGRANDINT:
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_QLOGRANDINT:
            if (v->type == TUNEP_V_INT) { /* exact, past 2^53 too */
                uint64_t q = int_step(p);
                uint64_t off = v->u.i <= p->ilo ? 0u : (uint64_t)v->u.i - (uint64_t)p->ilo;
                i = (double)(off / q + (off % q > q / 2 ? 1u : 0u));
                i = i > m->kmax ? m->kmax : i;
            } else {
                i = clamp_index((x - (double)p->ilo) / m->step, m->kmax);
            }
            break;
        default: return (double)NAN;
    }
    return disc_coord(m, i);
}

/* Writes the value at internal coordinate x (CONT), or of index x (DISC, CAT). */
static void emit_value(const struct dim *m, const struct tunep_param *p, double x,
                       struct tunep_value *out)
{
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM: /* Ray's [low, high) */
            out->type = TUNEP_V_DOUBLE;
            if (x >= p->hi)
                x = nextafter(p->hi, p->lo);
            out->u.d = x < p->lo ? p->lo : x;
            return;
        case TUNEP_DIST_LOGUNIFORM:
            x = exp(x);
            if (x >= p->hi)
                x = nextafter(p->hi, 0.0);
            out->type = TUNEP_V_DOUBLE;
            out->u.d = x < p->lo ? p->lo : x;
            return;
        case TUNEP_DIST_RANDN:
        case TUNEP_DIST_QRANDN: {
            double u = x < 0x1.0p-53 ? 0x1.0p-53 : x > 1.0 - 0x1.0p-53 ? 1.0 - 0x1.0p-53 : x;
            double v = p->lo + p->hi * gsl_cdf_ugaussian_Pinv(u);
            out->type = TUNEP_V_DOUBLE;
            out->u.d = p->dist == TUNEP_DIST_QRANDN ? nearbyint(v / p->q) * p->q : v;
            return;
        }
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM: /* what space.c's nearbyint(x / q) * q gives */
            out->type = TUNEP_V_DOUBLE;
            out->u.d = (m->kq_lo + x) * p->q;
            return;
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_LOGRANDINT:
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_QLOGRANDINT: {
            uint64_t u = (uint64_t)p->ilo + index_u64(x, int_kmax(p)) * int_step(p);
            int64_t v;
            memcpy(&v, &u, sizeof v); /* low + offset, which fits: two's complement */
            out->type = TUNEP_V_INT;
            out->u.i = v;
            return;
        }
        case TUNEP_DIST_CHOICE: *out = p->values[index_u64(x, p->n_values - 1)]; return;
        default: break;
    }
    *out = p->values[0];
}

/* ---- trial bookkeeping ---------------------------------------------------- */

static tune_status grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return TUNE_OK;
    size_t cap2 = *cap ? *cap : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *np = tunep_realloc(*p, *cap * size, cap2 * size);
    if (!np)
        return TUNE_ENOMEM;
    *p = np;
    *cap = cap2;
    return TUNE_OK;
}

/* Makes room for one more slot in every per-slot array (all or nothing). */
static tune_status reserve_slot(struct tpe *t)
{
    size_t need = t->n_slots + 1, cap = t->cap_slots;
    if (need <= cap)
        return TUNE_OK;
    size_t cap2 = cap ? 2 * cap : 64;
    int64_t *ids = tunep_malloc(cap2 * sizeof *ids);
    double *scores = tunep_malloc(cap2 * sizeof *scores);
    unsigned char *state = tunep_malloc(cap2);
    double *vals = tunep_malloc(cap2 * (t->d ? t->d : 1) * sizeof *vals);
    size_t *by_id = tunep_malloc(cap2 * sizeof *by_id);
    size_t *by_score = tunep_malloc(cap2 * sizeof *by_score);
    if (!ids || !scores || !state || !vals || !by_id || !by_score) {
        tunep_free(ids);
        tunep_free(scores);
        tunep_free(state);
        tunep_free(vals);
        tunep_free(by_id);
        tunep_free(by_score);
        return TUNE_ENOMEM;
    }
    if (t->n_slots) {
        memcpy(ids, t->ids, t->n_slots * sizeof *ids);
        memcpy(scores, t->scores, t->n_slots * sizeof *scores);
        memcpy(state, t->state, t->n_slots);
        memcpy(vals, t->vals, t->n_slots * t->d * sizeof *vals);
        memcpy(by_id, t->by_id, t->n_slots * sizeof *by_id);
        memcpy(by_score, t->by_score, t->n_complete * sizeof *by_score);
    }
    tunep_free(t->ids);
    tunep_free(t->scores);
    tunep_free(t->state);
    tunep_free(t->vals);
    tunep_free(t->by_id);
    tunep_free(t->by_score);
    t->ids = ids;
    t->scores = scores;
    t->state = state;
    t->vals = vals;
    t->by_id = by_id;
    t->by_score = by_score;
    t->cap_slots = cap2;
    return TUNE_OK;
}

/* The position of id in by_id, or where it would go; *found says which. */
static size_t find_id(const struct tpe *t, int64_t id, int *found)
{
    size_t lo = 0, hi = t->n_slots;
    if (hi > 0 && t->ids[t->by_id[hi - 1]] < id) { /* ids mostly arrive in order */
        *found = 0;
        return hi;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ids[t->by_id[mid]] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < t->n_slots && t->ids[t->by_id[lo]] == id;
    return lo;
}

static void list_remove(size_t *list, size_t *n, size_t slot)
{
    for (size_t k = 0; k < *n; k++)
        if (list[k] == slot) {
            memmove(list + k, list + k + 1, (*n - k - 1) * sizeof *list);
            (*n)--;
            return;
        }
}

/* Inserts slot into dimension j's value order, after equal values (room reserved). */
static void order_insert(struct tpe *t, size_t j, size_t slot)
{
    struct dim *m = &t->dims[j];
    double x = t->vals[slot * t->d + j];
    size_t lo = 0, hi = m->n_order;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->vals[m->order[mid] * t->d + j] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(m->order + lo + 1, m->order + lo, (m->n_order - lo) * sizeof *m->order);
    m->order[lo] = slot;
    m->n_order++;
}

/* Better: a larger score, then the earlier trial (Optuna's stable sort in trial order). */
static int score_before(const struct tpe *t, size_t a, size_t b)
{
    if (t->scores[a] != t->scores[b])
        return t->scores[a] > t->scores[b];
    return t->ids[a] < t->ids[b];
}

static void score_insert(struct tpe *t, size_t slot)
{
    size_t lo = 0, hi = t->n_complete;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (score_before(t, t->by_score[mid], slot))
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(t->by_score + lo + 1, t->by_score + lo, (t->n_complete - lo) * sizeof *t->by_score);
    t->by_score[lo] = slot;
    t->n_complete++;
}

static tune_status tpe_on_start(struct tunep_searcher *s, int64_t id,
                                const struct tunep_value *values)
{
    struct tpe *t = (struct tpe *)s;
    const tune_space *space = t->base.space;
    if (!values)
        return TUNE_EINVAL;
    for (size_t j = 0; j < t->d; j++)
        if (grow((void **)&t->dims[j].order, &t->dims[j].cap_order, t->n_slots + 1, sizeof(size_t)))
            return TUNE_ENOMEM;
    if (reserve_slot(t))
        return TUNE_ENOMEM;
    int found;
    size_t pos = find_id(t, id, &found), slot;
    if (found) { /* started again (a retry, a restored trial): its latest values count */
        slot = t->by_id[pos];
        if (t->state[slot] == SLOT_COMPLETE)
            list_remove(t->by_score, &t->n_complete, slot);
        for (size_t j = 0; j < t->d; j++)
            list_remove(t->dims[j].order, &t->dims[j].n_order, slot);
    } else {
        slot = t->n_slots++;
        memmove(t->by_id + pos + 1, t->by_id + pos, (slot - pos) * sizeof *t->by_id);
        t->by_id[pos] = slot;
        t->ids[slot] = id;
    }
    t->state[slot] = SLOT_PENDING;
    t->scores[slot] = -(double)INFINITY;
    for (size_t j = 0; j < t->d; j++) {
        const struct dim *m = &t->dims[j];
        double x = to_internal(m, &space->params[m->param], &values[m->param]);
        t->vals[slot * t->d + j] = x;
        if (!isnan(x))
            order_insert(t, j, slot);
    }
    return TUNE_OK;
}

static tune_status tpe_on_result(struct tunep_searcher *s, int64_t id, double budget, double score)
{
    (void)s, (void)id, (void)budget, (void)score; /* TPE models final scores only */
    return TUNE_OK;
}

static tune_status tpe_on_complete(struct tunep_searcher *s, int64_t id, int has_score,
                                   double budget, double score)
{
    struct tpe *t = (struct tpe *)s;
    (void)budget;
    int found;
    size_t pos = find_id(t, id, &found);
    if (!found) /* never started here: there are no values to learn from */
        return TUNE_OK;
    size_t slot = t->by_id[pos];
    if (t->state[slot] == SLOT_COMPLETE)
        list_remove(t->by_score, &t->n_complete, slot);
    if (!has_score) {
        t->state[slot] = SLOT_GONE; /* an ERROR: Optuna ignores failed trials */
        return TUNE_OK;
    }
    t->state[slot] = SLOT_COMPLETE;
    t->scores[slot] = isnan(score) ? -(double)INFINITY : score; /* the worst of all */
    score_insert(t, slot);
    return TUNE_OK;
}

/*
 * Several objectives: the trial's scores (larger is better, -inf for a
 * missing or NaN value) become its losses, NaN where missing (pareto.h's
 * order); its first score keeps the single-objective bookkeeping. Scores of
 * another count than the study's forget the trial, as NSGA-II does.
 */
static tune_status tpe_on_complete_values(struct tunep_searcher *s, int64_t id, int has_scores,
                                          const double *scores, size_t m)
{
    struct tpe *t = (struct tpe *)s;
    if (!has_scores || m != t->m || !scores)
        return tpe_on_complete(s, id, 0, 0.0, 0.0);
    int found;
    size_t pos = find_id(t, id, &found);
    if (!found)
        return TUNE_OK;
    size_t slot = t->by_id[pos], cap = t->cap_mo;
    if (grow((void **)&t->mo_w, &cap, slot + 1, sizeof *t->mo_w) ||
        grow((void **)&t->mo_loss, &t->cap_mo, slot + 1, m * sizeof *t->mo_loss))
        return TUNE_ENOMEM;
    for (size_t k = 0; k < m; k++)
        t->mo_loss[slot * m + k] =
            isnan(scores[k]) || scores[k] == -HUGE_VAL ? (double)NAN : -scores[k];
    return tpe_on_complete(s, id, 1, 0.0, scores[0]);
}

static tune_status tpe_mo_on_complete(struct tunep_searcher *s, int64_t id, int has_score,
                                      double budget, double score)
{
    (void)budget;
    return tpe_on_complete_values(s, id, has_score, &score, 1);
}

/* ---- scratch -------------------------------------------------------------- */

enum { KDE_ARRAYS = 7 }; /* mu sig isig coef w reach_hi reach_lo */

static void kde_bind(struct kde1 *e, double *p, size_t cap)
{
    e->mu = p;
    e->sig = p + cap;
    e->isig = p + 2 * cap;
    e->coef = p + 3 * cap;
    e->w = p + 4 * cap;
    e->reach_hi = p + 5 * cap;
    e->reach_lo = p + 6 * cap;
}

/* Room for n slots (one block, so that a failure changes nothing). */
static tune_status scratch_reserve(struct tpe *t, size_t n)
{
    if (n <= t->cap_scratch)
        return TUNE_OK;
    size_t cap = t->cap_scratch ? t->cap_scratch : 64;
    while (cap < n)
        cap *= 2;
    size_t d = t->d ? t->d : 1, cat = t->cap_cat;
    /* kde arrays, slot_w, mv_lp, mv_tab, per set: mv mu, lz and val (cap x d) and w; pmfs;
     * then ends, items (uint64_t), sort_work (2 cap + 16 size_t), per set: mv id (cap x d size_t)
     * and slot (cap size_t), rank (uint32_t), member and ends_ok (bytes); keys hold positions in 32
     * bits */
    if (cap > UINT32_MAX / 2) /* keys 2 rank + 1 and positions in 32 bits */
        return TUNE_ENOMEM;
    size_t n_doubles = 2 * KDE_ARRAYS * cap + 3 * cap + 2 * (3 * cap * d + cap) + 2 * cat;
    size_t rest = cap * (sizeof(struct trunc_ends) + sizeof(uint64_t) + 4 * sizeof(size_t) +
                         sizeof(uint32_t) + 2) +
                  (2 * cap * d + 2 * TUNEP_TPE_LANES) * sizeof(size_t);
    if (n_doubles > (SIZE_MAX / 2 - rest) / sizeof(double))
        return TUNE_ENOMEM;
    double *p = tunep_malloc(n_doubles * sizeof(double) + rest);
    if (!p)
        return TUNE_ENOMEM;
    tunep_free(t->scratch);
    t->scratch = p;
    t->cap_scratch = cap;
    kde_bind(&t->below, p, cap);
    p += KDE_ARRAYS * cap;
    kde_bind(&t->above, p, cap);
    p += KDE_ARRAYS * cap;
    t->slot_w = p;
    p += cap;
    t->mv_lp = p;
    p += cap;
    t->mv_tab = p;
    p += cap;
    for (size_t s = 0; s < 2; s++) {
        t->mv[s].mu = p;
        p += cap * d;
        t->mv[s].lz = p;
        p += cap * d;
        t->mv[s].val = p;
        p += cap * d;
        t->mv[s].w = p;
        p += cap;
    }
    t->below.pmf = p;
    p += cat;
    t->above.pmf = p;
    p += cat;
    t->ends = (struct trunc_ends *)(void *)p;
    t->items = (uint64_t *)(void *)(t->ends + cap);
    t->sort_work = (size_t *)(void *)(t->items + cap);
    t->mv[0].id = t->sort_work + 2 * cap + 2 * TUNEP_TPE_LANES;
    t->mv[1].id = t->mv[0].id + cap * d;
    t->below.slot = t->mv[1].id + cap * d;
    t->above.slot = t->below.slot + cap;
    t->rank = (uint32_t *)(void *)(t->above.slot + cap);
    t->member = (unsigned char *)(t->rank + cap);
    t->ends_ok = t->member + cap;
    return TUNE_OK;
}

/* ---- the split: below (the best gamma(n)), above (the rest and the pending) */

static int has_values(const struct tpe *t, size_t slot, size_t j)
{
    if (j < t->d)
        return !isnan(t->vals[slot * t->d + j]);
    for (size_t i = 0; i < t->d; i++)
        if (isnan(t->vals[slot * t->d + i]))
            return 0;
    return 1;
}

/*
 * Several objectives: the completed trials in trial order (Optuna's), split
 * by tunep_motpe_split() into nb good ones, whose weights in l(x) go to mo_w.
 */
static tune_status split_mo(struct tpe *t, size_t nb)
{
    size_t n = t->n_complete, m = t->m, k = 0;
    double *y = tunep_malloc((n ? n : 1) * m * sizeof *y),
           *w = tunep_malloc((n ? n : 1) * sizeof *w);
    size_t *slot = tunep_malloc((n ? n : 1) * sizeof *slot);
    unsigned char *below = tunep_malloc(n ? n : 1);
    tune_status st = !y || !w || !slot || !below ? TUNE_ENOMEM : TUNE_OK;
    for (size_t i = 0; !st && i < t->n_slots; i++) {
        size_t s = t->by_id[i];
        if (t->state[s] == SLOT_COMPLETE) {
            memcpy(y + k * m, t->mo_loss + s * m, m * sizeof *y);
            slot[k++] = s;
        }
    }
    if (!st)
        st = tunep_motpe_split(y, k, m, nb, below, NULL);
    size_t kb = 0;
    for (size_t i = 0; !st && i < k; i++)
        if (below[i]) { /* the good ones' rows, compacted in place */
            memmove(y + kb * m, y + i * m, m * sizeof *y);
            slot[kb++] = slot[i];
        }
    if (!st && !t->c.uniform_weights_below)
        st = tunep_motpe_weights(y, kb, m, w, NULL);
    for (size_t i = 0; !st && i < kb; i++) {
        t->member[slot[i]] = 1;
        t->mo_w[slot[i]] = t->c.uniform_weights_below ? 1.0 : w[i];
    }
    tunep_free(y);
    tunep_free(w);
    tunep_free(slot);
    tunep_free(below);
    return st;
}

static tune_status split(struct tpe *t)
{
    size_t n = t->n_complete;
    double g = ceil(t->c.gamma * (double)n); /* as np.ceil(0.1 * n): 0.1 * 30 gives 4 */
    /* Several objectives: no cap, as Optuna 5.0's default_gamma_multiobjective */
    size_t nb = g < (double)TPE_MAX_BELOW || t->m > 1 ? (size_t)g : TPE_MAX_BELOW;
    if (nb > n)
        nb = n;
    for (size_t s = 0; s < t->n_slots; s++) {
        unsigned char st = t->state[s];
        t->member[s] = st == SLOT_COMPLETE || (st == SLOT_PENDING && t->c.constant_liar) ? 2 : 0;
    }
    if (t->m > 1) {
        tune_status st = split_mo(t, nb);
        if (st)
            return st;
    } else {
        for (size_t k = 0; k < nb; k++)
            t->member[t->by_score[k]] = 1;
    }
    t->missing = 0;
    for (size_t s = 0; s < t->n_slots && !t->missing; s++)
        t->missing = t->member[s] && !has_values(t, s, t->d);
    t->weighed[1] = t->weighed[2] = SIZE_MAX;
    return TUNE_OK;
}

/*
 * Gives each member of set `which` that has a value in dimension j (in all
 * of them when j == d) its weight, default_weights(count) in trial order,
 * into slot_w; with several objectives the good set's weights are split()'s,
 * the same in every dimension (Optuna masks them to the members with values).
 */
static void weigh(struct tpe *t, unsigned char which, size_t j)
{
    size_t count = 0, rank = 0;
    if (!t->missing) /* the usual case: the same weights in every dimension */
        j = t->d;
    if (t->weighed[which] == j)
        return;
    t->weighed[which] = j;
    if (which == 1 && t->m > 1) {
        for (size_t s = 0; s < t->n_slots; s++)
            if (t->member[s] == 1)
                t->slot_w[s] = t->mo_w[s];
        return;
    }
    for (size_t k = 0; k < t->n_slots; k++) {
        size_t s = t->by_id[k];
        count += t->member[s] == which && has_values(t, s, j);
    }
    for (size_t k = 0; k < t->n_slots; k++) {
        size_t s = t->by_id[k];
        if (t->member[s] == which && has_values(t, s, j))
            t->slot_w[s] = ramp_weight(rank++, count);
    }
}

/* ---- univariate estimators ------------------------------------------------ */

/*
 * Set e's width of each of its n centres mu (sorted, the prior's centre
 * prior_mu among them at p_at): the distance to the farther neighbour among
 * [low, the centres, high], clipped to [range / min(100, n + 2), range]. x:
 * scratch for n + 3 values.
 */
static void kde_widths(const struct tpe *t, const struct dim *m, struct kde1 *e, size_t n,
                       size_t p_at, double *x)
{
    size_t n_all = n + 1;
    double range = m->high - m->low;
    double minsig = range / fmin(100.0, 1.0 + (double)n_all), maxsig = range;
    double *sig_all = e->isig, *sig = e->sig; /* isig: free until the coefficients */
    x++;                                      /* x[-1] .. x[n_all]: low, centres, high */
    x[-1] = m->low;
    memcpy(x, e->mu, p_at * sizeof *x);
    x[p_at] = e->prior_mu;
    memcpy(x + p_at + 1, e->mu + p_at, (n - p_at) * sizeof *x);
    x[n_all] = m->high;
    t->kern->widths(x - 1, n_all, minsig, maxsig, sig_all);
    if (!t->c.consider_endpoints && n_all >= 2) { /* the outer ones: the inner gap only */
        double right = x[1] - x[0], left = x[n_all - 1] - x[n_all - 2];
        sig_all[0] = right < minsig ? minsig : right > maxsig ? maxsig : right;
        sig_all[n_all - 1] = left < minsig ? minsig : left > maxsig ? maxsig : left;
    }
    memcpy(sig, sig_all, p_at * sizeof *sig);
    memcpy(sig + p_at, sig_all + p_at + 1, (n - p_at) * sizeof *sig);
}

/*
 * Finishes set `which`'s estimator for dimension j from its n members in
 * e->mu (sorted) and e->w (weights, summing to wsum with the prior's):
 * Optuna's _calculate_numerical_params (or _calculate_categorical_params),
 * with the prior's centre sorted in among the observations for the
 * neighbour widths.
 */
static void kde_finish(struct tpe *t, struct kde1 *e, unsigned char which, size_t j, size_t n,
                       double wsum)
{
    const struct dim *m = &t->dims[j];
    double *mu = e->mu, *w = e->w;
    double range = m->high - m->low;
    e->prior_mu = 0.5 * (m->low + m->high);
    e->prior_sig = range;
    e->prior_w = t->c.prior_weight / wsum;
    t->kern->div_n(w, n, wsum);

    if (m->kind == DIM_CAT) {
        /* prior_weight / (n + 1) on every choice and 1 on its own, normalised */
        double c = (double)m->n_cat, v = t->c.prior_weight / (double)(n + 1);
        e->cat_hit = (v + 1.0) / (c * v + 1.0);
        e->cat_miss = v / (c * v + 1.0);
        double base = e->prior_w / c, miss = e->cat_miss, gain = e->cat_hit - e->cat_miss;
        for (size_t k = 0; k < n; k++)
            base += w[k] * miss;
        for (size_t i = 0; i < m->n_cat; i++)
            e->pmf[i] = base;
        for (size_t k = 0; k < n;) { /* members by choice: one running sum per choice */
            size_t i = (size_t)mu[k];
            double acc = e->pmf[i];
            for (; k < n && (size_t)mu[k] == i; k++)
                acc += w[k] * gain;
            e->pmf[i] = acc;
        }
        e->n = n;
        return;
    }

    /*
     * Optuna's order: without equal values it is the value order, kept up to date
     * in m->order; with them, numpy's argsort of [members in trial order, prior].
     */
    size_t p_at = lower_bound(mu, n, e->prior_mu, 1);
    int ties = (p_at > 0 && mu[p_at - 1] == e->prior_mu) || t->kern->has_ties(mu, n);
    if (ties) {
        /*
         * numpy's argsort on keys that rank the values (tunep_np_argsort): a member
         * with the r-th smallest of the set's values gets 2 r + 1, the prior's centre
         * 2 r + 1 as well if it equals that value, else twice the number of values
         * below it
         */
        size_t p_lt = lower_bound(mu, n, e->prior_mu, 0);
        uint32_t r = 0, below = 0;
        for (size_t k = 0; k < n; k++) {
            r += (uint32_t)(mu[k] != mu[k > 0 ? k - 1 : 0]); /* a new value */
            t->rank[e->slot[k]] = r;
            below = k < p_lt ? r + 1 : below; /* distinct values below the prior's */
        }
        uint32_t prior_key = 2 * below + (uint32_t)(p_lt < n && mu[p_lt] == e->prior_mu);
        uint64_t *it = t->items;
        double *vt = e->reach_hi, *wt = e->reach_lo; /* free until the widths and reach bounds */
        size_t c = 0;
        for (size_t k = 0; k < t->n_slots; k++) { /* written always, kept by the count */
            size_t s = t->by_id[k];
            double v = t->vals[s * t->d + j];
            int in = t->member[s] == which && !isnan(v); /* has_values(t, s, j) */
            it[c] = TUNEP_NP_ITEM(in ? 2 * t->rank[s] + 1 : 0, c);
            vt[c] = v;
            wt[c] = in ? t->slot_w[s] : 0.0;
            c += (size_t)in;
        }
        t->kern->div_n(wt, c, wsum);
        it[c] = TUNEP_NP_ITEM(prior_key, c);
        tunep_np_argsort(t->kern, it, n + 1, t->sort_work);
        for (size_t k = 0, o = 0; k <= n; k++) {
            size_t i = TUNEP_NP_POS(it[k]);
            if (i == n) {
                p_at = k;
                continue;
            }
            mu[o] = vt[i];
            w[o++] = wt[i];
        }
    }
    kde_widths(t, m, e, n, p_at, e->reach_hi); /* reach_hi: free until the reach bounds */
    double *sig = e->sig;
    if (ties) /* kernels with the same centre and width are one kernel of their summed weight */
        n = t->kern->merge(mu, sig, w, n);
    e->n = n;
    /*
     * Optuna 3.1's truncated-normal density: phi(z) / Z without 1/sigma (see the top).
     * Z = 1 for kernels more than TPE_CUT widths inside both bounds (gauss_mass's
     * answer there); the others, near a bound, ask it.
     */
    int dens = !scored_by_mass(m);
    double norm = dens ? TPE_SQRT_2PI : 1.0, *isig = e->isig, *coef = e->coef;
    t->kern->fit_coef(mu, sig, w, n, m->low, m->high, TPE_CUT, norm, isig, coef);
    for (size_t k = 0; k < n; k++)
        if (isnan(coef[k]))
            coef[k] = w[k] / (gauss_mass_memo(t->memo, (m->low - mu[k]) * isig[k],
                                              (m->high - mu[k]) * isig[k]) *
                              norm);
    t->kern->reach(mu, sig, n, TPE_CUT, e->reach_hi, e->reach_lo);
    double pz = gauss_mass((m->low - e->prior_mu) / range, (m->high - e->prior_mu) / range);
    e->prior_coef = dens ? e->prior_w / (pz * TPE_SQRT_2PI) : e->prior_w / pz;
}

/*
 * Fits both sets' estimators for dimension j (below: 1, above: 2): their
 * members with a value there, in value order, in one pass.
 */
static void kde_fit(struct tpe *t, size_t j)
{
    const struct dim *m = &t->dims[j];
    weigh(t, 1, j);
    weigh(t, 2, j);
    const size_t *order = m->order;
    const unsigned char *member = t->member;
    const double *vals = t->vals + j, *slot_w = t->slot_w;
    double *mu1 = t->below.mu, *w1 = t->below.w, *mu2 = t->above.mu, *w2 = t->above.w;
    double ws1 = t->c.prior_weight, ws2 = t->c.prior_weight;
    size_t n1 = 0, n2 = 0, d = t->d, *slot1 = t->below.slot, *slot2 = t->above.slot;
    for (size_t k = 0; k < m->n_order; k++) {
        size_t s = order[k];
        if (member[s] == 2) {
            mu2[n2] = vals[s * d];
            w2[n2] = slot_w[s];
            slot2[n2] = s;
            ws2 += w2[n2++];
        } else if (member[s] == 1) {
            mu1[n1] = vals[s * d];
            w1[n1] = slot_w[s];
            slot1[n1] = s;
            ws1 += w1[n1++];
        }
    }
    kde_finish(t, &t->below, 1, j, n1, ws1);
    kde_finish(t, &t->above, 2, j, n2, ws2);
}

/*
 * log of the density at a (dens), or of the mass of the cell [a, b]: the
 * prior's term plus the kernels' (densities in tpe_kernel.h's lanes).
 */
static double kde_log(struct tpe *t, const struct kde1 *e, int dens, double a, double b)
{
    size_t lo = lower_bound(e->reach_hi, e->n, a, 0); /* kernels before lo end left of a */
    size_t hi = lower_bound(e->reach_lo, e->n, b, 1); /* kernels from hi on start right of b */
    double sum;
    if (dens) {
        double z = (a - e->prior_mu) / e->prior_sig;
        sum = e->prior_coef * exp(-0.5 * z * z);
        if (hi > lo)
            sum += t->kern->gauss_sum(e->mu + lo, e->isig + lo, e->coef + lo, hi - lo, a);
    } else {
        sum = e->prior_coef * gauss_mass_memo(t->memo, (a - e->prior_mu) / e->prior_sig,
                                              (b - e->prior_mu) / e->prior_sig);
        for (size_t k = lo; k < hi; k++)
            sum += e->coef[k] * gauss_mass_memo(t->memo, (a - e->mu[k]) * e->isig[k],
                                                (b - e->mu[k]) * e->isig[k]);
    }
    return log(sum);
}

/*
 * out[c] = kde_log(t, e, 1, x[c], x[c]) for c < m: the candidates' windows
 * found together (their binary searches interleaved, so that they overlap
 * rather than each waiting on its own loads), the sums one by one.
 */
static void kde_log_all(struct tpe *t, const struct kde1 *e, const double *x, size_t m, double *out)
{
    size_t *lo = t->cand_lo, *hi = t->cand_hi, n = e->n, len = n;
    const double *rh = e->reach_hi, *rl = e->reach_lo;
    for (size_t c = 0; c < m; c++)
        lo[c] = hi[c] = 0;
    if (n > 0) {
        while (len > 1) { /* lower_bound's halving, for all candidates at each step */
            size_t half = len / 2;
            for (size_t c = 0; c < m; c++) {
                lo[c] += !(rh[lo[c] + half] >= x[c]) ? half : 0;
                hi[c] += !(rl[hi[c] + half] > x[c]) ? half : 0;
            }
            len -= half;
        }
        for (size_t c = 0; c < m; c++) {
            lo[c] += (size_t) !(rh[lo[c]] >= x[c]);
            hi[c] += (size_t) !(rl[hi[c]] > x[c]);
        }
    }
    for (size_t c = 0; c < m; c++) {
        double z = (x[c] - e->prior_mu) / e->prior_sig;
        double sum = e->prior_coef * exp(-0.5 * z * z);
        if (hi[c] > lo[c])
            sum += t->kern->gauss_sum(e->mu + lo[c], e->isig + lo[c], e->coef + lo[c],
                                      hi[c] - lo[c], x[c]);
        out[c] = sum;
    }
    t->kern->log_n(out, out, m);
}

/* A component by weight, n for the prior (Optuna's rng.choice over [observations, prior]). */
static size_t pick_component(const double *w, size_t n, double u)
{
    double acc = 0.0;
    for (size_t k = 0; k < n; k++) {
        acc += w[k];
        if (u < acc)
            return k;
    }
    return n;
}

/* A choice from component k's categorical kernel (k == n: the prior, uniform). */
static double cat_draw(const struct kde1 *e, size_t k, size_t n_cat, double u)
{
    size_t c;
    if (k == e->n) {
        c = (size_t)(u * (double)n_cat);
    } else {
        size_t own = (size_t)e->mu[k];
        double x = u / e->cat_miss; /* in units of cat_miss: own first, then the others */
        double hit_units = e->cat_hit / e->cat_miss;
        if (x < hit_units) {
            c = own;
        } else {
            c = (size_t)(x - hit_units);
            if (c >= n_cat - 1)
                c = n_cat - 2;
            if (c >= own)
                c++;
        }
    }
    return (double)(c < n_cat ? c : n_cat - 1);
}

/* Optuna's sample_independent for dimension j, into out[param]. */
static void suggest_dim(struct tpe *t, size_t j, gsl_rng *r, struct tunep_value *out)
{
    const struct dim *m = &t->dims[j];
    struct kde1 *l = &t->below, *g = &t->above;
    size_t n_ei = (size_t)t->c.n_ei_candidates;
    kde_fit(t, j);
    double *cand = t->cand, *score = t->cand_score;
    for (size_t c = 0; c < n_ei; c++) /* the components first, then the draws, as Optuna */
        cand[c] = (double)pick_component(l->w, l->n, gsl_rng_uniform(r));
    for (size_t k = 0; k <= l->n; k++) /* each kernel's ends, when a candidate first needs them */
        t->ends_ok[k] = 0;
    for (size_t c = 0; c < n_ei; c++) {
        size_t k = (size_t)cand[c];
        double u = gsl_rng_uniform(r);
        if (m->kind == DIM_CAT) {
            cand[c] = cat_draw(l, k, m->n_cat, u);
            continue;
        }
        double mu = k < l->n ? l->mu[k] : l->prior_mu, sg = k < l->n ? l->sig[k] : l->prior_sig;
        if (!t->ends_ok[k]) {
            t->ends[k] = truncnorm_ends(mu, sg, m->low, m->high);
            t->ends_ok[k] = 1;
        }
        double x = truncnorm_from(&t->ends[k], mu, sg, m->low, m->high, u);
        cand[c] = m->kind == DIM_DISC ? disc_index(m, x) : x;
    }
    size_t best = 0;
    if (m->kind == DIM_CONT) { /* all candidates at once */
        kde_log_all(t, l, cand, n_ei, score);
        kde_log_all(t, g, cand, n_ei, t->cand_log);
        for (size_t c = 0; c < n_ei; c++) {
            score[c] -= t->cand_log[c];
            if (score[c] > score[best] || isnan(score[best])) /* the first best, as np.argmax */
                best = c;
        }
        emit_value(m, &t->base.space->params[m->param], cand[best], &out[m->param]);
        return;
    }
    for (size_t c = 0; c < n_ei; c++) {
        size_t dup = c;
        if (m->kind != DIM_CONT) /* a discrete value drawn again scores the same */
            for (size_t c2 = 0; c2 < c && dup == c; c2++)
                if (cand[c2] == cand[c])
                    dup = c2;
        if (dup != c) {
            score[c] = score[dup];
        } else if (m->kind == DIM_CAT) {
            score[c] = log(l->pmf[(size_t)cand[c]]) - log(g->pmf[(size_t)cand[c]]);
        } else if (scored_by_mass(m)) {
            double a, b;
            disc_cell(m, cand[c], &a, &b);
            score[c] = kde_log(t, l, 0, a, b) - kde_log(t, g, 0, a, b);
        } else {
            double x = m->kind == DIM_DISC ? disc_coord(m, cand[c]) : cand[c];
            score[c] = kde_log(t, l, 1, x, x) - kde_log(t, g, 1, x, x);
        }
        if (score[c] > score[best] || isnan(score[best])) /* the first best, as np.argmax */
            best = c;
    }
    emit_value(m, &t->base.space->params[m->param], cand[best], &out[m->param]);
}

/* ---- multivariate --------------------------------------------------------- */

/*
 * Fits set `which` jointly into ms: the members (all values present) in trial
 * order, their log weights (the prior's last), per dimension Scott's width
 * and the log norms; for mass dimensions also the members' distinct values,
 * from the dimension's value order. Returns the number of members.
 */
static size_t mv_fit(struct tpe *t, struct mv_set *ms, unsigned char which)
{
    size_t d = t->d, cap = t->cap_scratch, n = 0;
    size_t *slot_id = t->sort_work, *row_slot = t->sort_work + cap; /* scratch */
    double *w = ms->w;
    weigh(t, which, d);
    double wsum = t->c.prior_weight;
    for (size_t k = 0; k < t->n_slots; k++) {
        size_t s = t->by_id[k];
        if (t->member[s] != which || !has_values(t, s, d))
            continue;
        for (size_t j = 0; j < d; j++)
            ms->mu[j * cap + n] = t->vals[s * d + j];
        row_slot[n] = s;
        w[n] = t->slot_w[s];
        wsum += w[n++];
    }
    ms->n = n;
    w[n] = t->c.prior_weight;
    t->kern->div_n(w, n + 1, wsum);
    t->kern->log_n(w, w, n + 1);
    /* Scott's rule as Optuna (SIGMA0_MAGNITUDE 0.2), then the magic clip */
    double sigma0 = 0.2 * pow((double)(n > 0 ? n : 1), -1.0 / ((double)d + 4.0));
    double v = t->c.prior_weight / (double)(n + 1); /* choices: prior_weight / (n + 1) each */
    for (size_t j = 0; j < d; j++) {
        const struct dim *m = &t->dims[j];
        struct mv_dim *md = &ms->dim[j];
        double range = m->high - m->low, minsig = range / fmin(100.0, (double)n + 2.0);
        double mid = 0.5 * (m->low + m->high), sg = sigma0 * range;
        double *mu = ms->mu + j * cap, *lz = ms->lz + j * cap;
        md->sig = sg = sg < minsig ? minsig : sg > range ? range : sg;
        if (m->kind == DIM_CAT) {
            double c = (double)m->n_cat;
            md->lhit = log((1.0 + v) / (c * v + 1.0));
            md->lmiss = log((0.0 + v) / (c * v + 1.0));
            continue;
        }
        double pz = gauss_mass((m->low - mid) / range, (m->high - mid) / range);
        if (!scored_by_mass(m)) {
            md->prior_lz = -log(pz * TPE_SQRT_2PI);
            for (size_t k = 0; k < n; k++) {
                double z =
                    m->kind == DIM_DISC /* on a grid: repeats */
                        ? gauss_mass_memo(t->memo, (m->low - mu[k]) / sg, (m->high - mu[k]) / sg)
                        : gauss_mass((m->low - mu[k]) / sg, (m->high - mu[k]) / sg);
                lz[k] = z * TPE_SQRT_2PI;
            }
            t->kern->log_n(lz, lz, n);
            for (size_t k = 0; k < n; k++)
                lz[k] = -lz[k];
            continue;
        }
        /* mass: one term per distinct value, the members pointing to theirs */
        md->prior_lz = -log(pz);
        double *val = ms->val + j * cap;
        size_t u = 0, *id = ms->id + j * cap;
        for (size_t k = 0; k < m->n_order; k++) {
            size_t s = m->order[k];
            if (t->member[s] != which || !has_values(t, s, d))
                continue;
            double x = t->vals[s * d + j];
            if (u == 0 || x != val[u - 1])
                val[u++] = x;
            slot_id[s] = u - 1;
        }
        md->n_val = u;
        for (size_t i = 0; i < u; i++)
            lz[i] = -gauss_log_mass_memo(t->memo, (m->low - val[i]) / sg, (m->high - val[i]) / sg);
        for (size_t k = 0; k < n; k++)
            id[k] = slot_id[row_slot[k]];
    }
    return n;
}

/* log of set ms's joint density at candidate x[d] (indices for DISC and CAT). */
static double mv_log(struct tpe *t, const struct mv_set *ms, const double *x)
{
    size_t d = t->d, cap = t->cap_scratch, n = ms->n;
    double *lp = t->mv_lp, *tab = t->mv_tab, prior = ms->w[n];
    memcpy(lp, ms->w, n * sizeof *lp);
    for (size_t j = 0; j < d; j++) { /* each term as the prior's below, for all members */
        const struct dim *m = &t->dims[j];
        const struct mv_dim *md = &ms->dim[j];
        const double *mu = ms->mu + j * cap;
        double range = m->high - m->low, mid = 0.5 * (m->low + m->high);
        if (m->kind == DIM_CAT) {
            t->kern->mv_cat(lp, mu, n, x[j], md->lhit, md->lmiss);
            prior += -log((double)m->n_cat);
        } else if (!scored_by_mass(m)) {
            double xc = m->kind == DIM_DISC ? disc_coord(m, x[j]) : x[j];
            t->kern->mv_dens(lp, mu, ms->lz + j * cap, n, xc, md->sig);
            double z = (xc - mid) / range;
            prior += -0.5 * z * z + md->prior_lz;
        } else {
            double a, b, sg = md->sig;
            const double *val = ms->val + j * cap, *lz = ms->lz + j * cap;
            disc_cell(m, x[j], &a, &b);
            for (size_t i = 0; i < md->n_val; i++)
                tab[i] = gauss_log_mass_memo(t->memo, (a - val[i]) / sg, (b - val[i]) / sg) + lz[i];
            t->kern->mv_gather_add(lp, tab, ms->id + j * cap, n);
            prior +=
                gauss_log_mass_memo(t->memo, (a - mid) / range, (b - mid) / range) + md->prior_lz;
        }
    }
    lp[n] = prior;
    double mx = t->kern->max_n(lp, n + 1); /* maxima are exact: any order gives its bits */
    return mx + log(t->kern->exp_sum(lp, n + 1, mx));
}

/* Optuna's sample_relative: candidates drawn whole from one component each. */
static void suggest_joint(struct tpe *t, gsl_rng *r, struct tunep_value *out)
{
    size_t d = t->d, n_ei = (size_t)t->c.n_ei_candidates, cap = t->cap_scratch;
    struct mv_set *below = &t->mv[0], *above = &t->mv[1];
    size_t nl = mv_fit(t, below, 1);
    mv_fit(t, above, 2);
    double *cand = t->cand, *score = t->cand_score, *wl = t->mv_lp;
    for (size_t k = 0; k < nl; k++) /* the below set's weights, back from logs for the draw */
        wl[k] = exp(below->w[k]);
    for (size_t c = 0; c < n_ei; c++)
        cand[c * d] = (double)pick_component(wl, nl, gsl_rng_uniform(r));
    for (size_t c = 0; c < n_ei; c++) {
        size_t k = (size_t)cand[c * d];
        for (size_t j = 0; j < d; j++) {
            const struct dim *m = &t->dims[j];
            double u = gsl_rng_uniform(r), x;
            double centre = k == nl ? 0.5 * (m->low + m->high) : below->mu[j * cap + k];
            if (m->kind == DIM_CAT) {
                double nc = (double)m->n_cat, v = t->c.prior_weight / (double)(nl + 1);
                double hit = (v + 1.0) / (nc * v + 1.0);
                if (k == nl) {
                    x = floor(u * nc);
                } else if (u < hit) {
                    x = centre;
                } else { /* uniform over the other choices */
                    x = floor((u - hit) / (1.0 - hit) * (nc - 1.0));
                    x = x > nc - 2.0 ? nc - 2.0 : x;
                    x += x >= centre ? 1.0 : 0.0;
                }
                x = x > m->kmax ? m->kmax : x;
            } else {
                double sg = k == nl ? m->high - m->low : below->dim[j].sig;
                x = truncnorm_draw(centre, sg, m->low, m->high, u);
                if (m->kind == DIM_DISC)
                    x = disc_index(m, x);
            }
            cand[c * d + j] = x;
        }
    }
    size_t best = 0;
    for (size_t c = 0; c < n_ei; c++) {
        score[c] = mv_log(t, below, cand + c * d) - mv_log(t, above, cand + c * d);
        if (score[c] > score[best] || isnan(score[best]))
            best = c;
    }
    for (size_t j = 0; j < d; j++) {
        const struct dim *m = &t->dims[j];
        emit_value(m, &t->base.space->params[m->param], cand[best * d + j], &out[m->param]);
    }
}

/* ---- the searcher --------------------------------------------------------- */

static tune_status tpe_suggest(struct tunep_searcher *s, int64_t id, gsl_rng *r,
                               struct tunep_value *out, tune_error *err)
{
    struct tpe *t = (struct tpe *)s;
    const tune_space *space = t->base.space;
    (void)id;
    if (!r || !out)
        return tunep_error_set(err, TUNE_EINVAL, "tpe: rng and out must not be NULL");
    if (t->n_complete < (size_t)t->c.n_startup_trials || t->d == 0) {
        tunep_space_sample(space, r, 0, 0, out);
        return TUNE_OK;
    }
    if (scratch_reserve(t, t->n_slots + 3))
        return tunep_error_set(err, TUNE_ENOMEM, "tpe: out of memory for %zu trials", t->n_slots);
    for (size_t i = 0; i < space->n; i++) /* constants pass through */
        if (space->params[i].dist == TUNEP_DIST_CONST)
            out[i] = space->params[i].values[0];
    if (split(t))
        return tunep_error_set(err, TUNE_ENOMEM, "tpe: out of memory for %zu trials", t->n_slots);
    if (t->c.multivariate) {
        suggest_joint(t, r, out);
    } else {
        for (size_t j = 0; j < t->d; j++)
            suggest_dim(t, j, r, out);
        tunep_space_mask(space, out); /* conditional parameters outside the chosen option */
    }
    return TUNE_OK;
}

static void tpe_free(struct tunep_searcher *s)
{
    struct tpe *t = (struct tpe *)s;
    if (!t)
        return;
    if (t->dims)
        for (size_t j = 0; j < t->d; j++)
            tunep_free(t->dims[j].order);
    tunep_free(t->dims);
    tunep_free(t->ids);
    tunep_free(t->scores);
    tunep_free(t->state);
    tunep_free(t->vals);
    tunep_free(t->by_id);
    tunep_free(t->by_score);
    tunep_free(t->mo_loss);
    tunep_free(t->mo_w);
    tunep_free(t->scratch);
    tunep_free(t->cand);
    tunep_free(t->cand_score);
    tunep_free(t->cand_log);
    tunep_free(t->cand_lo);
    tunep_free(t->memo);
    tunep_free(t->mv[0].dim);
    tunep_free(t);
}

tune_status tunep_tpe_log_densities(struct tunep_searcher *s, size_t param,
                                    const struct tunep_value *v, double *ret_log_l,
                                    double *ret_log_g)
{
    struct tpe *t = (struct tpe *)s;
    size_t j = 0;
    while (j < t->d && t->dims[j].param != param)
        j++;
    if (!v || !ret_log_l || !ret_log_g || j == t->d)
        return TUNE_EINVAL;
    const struct dim *m = &t->dims[j];
    double x = to_internal(m, &t->base.space->params[param], v);
    if (isnan(x))
        return TUNE_EINVAL;
    if (scratch_reserve(t, t->n_slots + 3))
        return TUNE_ENOMEM;
    if (split(t))
        return TUNE_ENOMEM;
    kde_fit(t, j);
    if (m->kind == DIM_CAT) {
        *ret_log_l = log(t->below.pmf[(size_t)x]);
        *ret_log_g = log(t->above.pmf[(size_t)x]);
    } else if (scored_by_mass(m)) {
        double a, b;
        disc_cell(m, disc_index(m, x), &a, &b);
        *ret_log_l = kde_log(t, &t->below, 0, a, b);
        *ret_log_g = kde_log(t, &t->above, 0, a, b);
    } else {
        *ret_log_l = kde_log(t, &t->below, 1, x, x);
        *ret_log_g = kde_log(t, &t->above, 1, x, x);
    }
    return TUNE_OK;
}

static const struct tunep_searcher_ops tpe_ops = {
    .name = "tpe",
    .suggest = tpe_suggest,
    .on_start = tpe_on_start,
    .on_result = tpe_on_result,
    .on_complete = tpe_on_complete,
    .free = tpe_free,
};

/* Several objectives: every completion through on_complete_values. */
static const struct tunep_searcher_ops tpe_mo_ops = {
    .name = "tpe",
    .suggest = tpe_suggest,
    .on_start = tpe_on_start,
    .on_result = tpe_on_result,
    .on_complete = tpe_mo_on_complete,
    .free = tpe_free,
    .on_complete_values = tpe_on_complete_values,
};

void tunep_tpe_config_default(struct tunep_tpe_config *c)
{
    if (!c)
        return;
    c->n_startup_trials = 10;
    c->n_ei_candidates = 24;
    c->prior_weight = 1.0;
    c->consider_endpoints = 0;
    c->multivariate = 0;
    c->constant_liar = 1;
    c->gamma = 0.1;
    c->n_objectives = 1;
    c->uniform_weights_below = 0;
}

tune_status tunep_tpe_new(const tune_space *space, const struct tunep_tpe_config *c, uint64_t seed,
                          struct tunep_searcher **ret, tune_error *err)
{
    struct tunep_tpe_config def;
    (void)seed; /* every draw comes from the trial's own stream, handed to suggest() */
    if (!space || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "tpe: space and ret must not be NULL");
    *ret = NULL;
    if (!c) {
        tunep_tpe_config_default(&def);
        c = &def;
    }
    if (c->n_startup_trials < 0)
        return tunep_error_set(err, TUNE_ECONFIG, "tpe: n_startup_trials must be >= 0");
    if (c->n_ei_candidates < 1 || c->n_ei_candidates > 1000000)
        return tunep_error_set(err, TUNE_ECONFIG, "tpe: n_ei_candidates must be in 1..1000000");
    if (!(c->prior_weight > 0.0) || !isfinite(c->prior_weight))
        return tunep_error_set(err, TUNE_ECONFIG, "tpe: prior_weight must be a number > 0");
    if (!(c->gamma > 0.0 && c->gamma <= 1.0))
        return tunep_error_set(err, TUNE_ECONFIG, "tpe: gamma must be in (0, 1]");
    if (c->n_objectives > TUNEP_PARETO_MAX_OBJECTIVES)
        return tunep_error_set(err, TUNE_ECONFIG, "tpe: at most %d objectives, got %zu",
                               TUNEP_PARETO_MAX_OBJECTIVES, c->n_objectives);
    size_t d = 0, cats = 0;
    for (size_t i = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (p->dist == TUNEP_DIST_GRID)
            return tunep_error_set(err, TUNE_ECONFIG,
                                   "tpe cannot search a grid_search axis ('%s'): use choice",
                                   p->name);
        if (p->n_cond > 0 && c->multivariate)
            return tunep_error_set(err, TUNE_ECONFIG,
                                   "multivariate tpe cannot model conditional parameters ('%s'): "
                                   "set \"multivariate\": false",
                                   p->name);
        d += p->dist != TUNEP_DIST_CONST;
        if (p->dist == TUNEP_DIST_CHOICE && p->n_values > cats)
            cats = p->n_values;
    }

    struct tpe *t = tunep_calloc(1, sizeof *t);
    if (!t)
        return tunep_error_set(err, TUNE_ENOMEM, "tpe: out of memory");
    t->base.space = space;
    t->c = *c;
    t->m = c->n_objectives > 1 ? c->n_objectives : 1;
    t->base.ops = t->m > 1 ? &tpe_mo_ops : &tpe_ops;
    t->cap_cat = cats;
    size_t n_ei = (size_t)c->n_ei_candidates;
    t->dims = tunep_calloc(d ? d : 1, sizeof *t->dims);
    t->cand = tunep_malloc(n_ei * (d ? d : 1) * sizeof *t->cand);
    t->cand_score = tunep_malloc(n_ei * sizeof *t->cand_score);
    t->cand_log = tunep_malloc(n_ei * sizeof *t->cand_log);
    t->cand_lo = tunep_malloc(2 * n_ei * sizeof *t->cand_lo);
    t->memo = tunep_malloc(((size_t)1 << TPE_MEMO_BITS) * sizeof *t->memo);
    t->mv[0].dim = tunep_calloc(2 * (d ? d : 1), sizeof *t->mv[0].dim);
    if (!t->dims || !t->cand || !t->cand_score || !t->cand_log || !t->cand_lo || !t->memo ||
        !t->mv[0].dim) {
        tpe_free(&t->base);
        return tunep_error_set(err, TUNE_ENOMEM, "tpe: out of memory");
    }
    t->kern = tunep_tpe_kernels_best();
    t->cand_hi = t->cand_lo + n_ei;
    t->mv[1].dim = t->mv[0].dim + (d ? d : 1);
    double m0 = gauss_mass((double)INFINITY, (double)INFINITY); /* each entry true from the start */
    for (size_t i = 0; i < ((size_t)1 << TPE_MEMO_BITS); i++)
        t->memo[i] = (struct memo_entry){(double)INFINITY, (double)INFINITY, m0, (double)NAN};
    for (size_t i = 0; i < space->n; i++) {
        if (space->params[i].dist == TUNEP_DIST_CONST)
            continue;
        tune_status st = dim_init(&t->dims[t->d], i, &space->params[i], err);
        if (st) {
            tpe_free(&t->base);
            return st;
        }
        t->d++;
    }
    *ret = &t->base;
    return TUNE_OK;
}
