/*
 * importance.c - fANOVA: hyperparameter importance from a random forest.
 *
 * The forest is Optuna's (scikit-learn's RandomForestRegressor with
 * n_estimators 64, max_depth 64, bootstrap samples, every feature considered
 * at every split, squared error): each tree is grown on n observations drawn
 * with replacement. An ordered feature splits at the midpoint between two
 * consecutive distinct values; a categorical one sends a set of values left,
 * found by ordering the values present by their mean (Breiman: the best set
 * is a prefix of that order); values absent from the node go with the side
 * that has more observations, so every box of the tree covers the whole cube.
 *
 * The decomposition is exact for a tree. Per feature, the tree's split
 * points cut [0, 1] into atoms (a categorical feature's atoms are its
 * values, each of width 1/k); every leaf is a box that covers a range (or,
 * categorically, a set) of atoms per feature. With the uniform measure on
 * the cube, the marginal prediction of a feature set S at an atom cell a is
 * the sum over the leaves covering a of value * volume / (the leaf's extent
 * along S), so each leaf adds one constant to a block of cells: a difference
 * array per feature and per pair of features builds every marginal in
 * O(leaves + cells). The variance of a feature's marginal is its main
 * effect's; a pair's marginal variance less both main effects is its pure
 * interaction. Each is divided by the tree's total variance, and the
 * fractions are averaged over the trees whose prediction is not constant.
 *
 * Conditional parameters are left out (importance NaN, as for constants):
 * they have no value in the trials of other options, and Optuna's evaluators
 * too keep only the parameters that every trial has.
 *
 * Deterministic: one generator (tunep_rng_xoshiro256) seeded with the
 * config's seed draws every tree's bootstrap sample and feature order, in
 * tree order.
 */
#include "search/importance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "base/rng.h"
#include "search/searcher.h"

/* ---- the observations ------------------------------------------------------- */

struct data {
    size_t n, d;   /* observations, features (the space's varying parameters) */
    double *x;     /* [n * d]: unit coordinate, or the value's index for categorical features */
    double *y;     /* [n]: centred on its mean */
    int *n_cat;    /* [d]: categories of a categorical feature, 0 for an ordered one */
    size_t *param; /* [d]: the feature's parameter index in the space */
    size_t *unit;  /* [d]: the feature's coordinate in tunep_values_to_unit()'s vector */
};

/* ---- one tree ---------------------------------------------------------------- */

struct node {
    int feature;        /* -1 for a leaf */
    int left, right;    /* child node indices */
    double threshold;   /* ordered: x < threshold goes left */
    uint64_t left_mask; /* categorical: the values that go left */
    double value;       /* the mean of the node's observations */
};

struct tree {
    struct node *nodes;
    size_t n_nodes, cap;
};

/* Scratch space for growing one tree. */
struct grow {
    const struct data *data;
    const struct tunep_importance_config *c;
    struct tree *t;
    size_t *order;        /* [d]: this tree's feature order (ties go to the earlier feature) */
    struct keyed *sorted; /* [n]: a node's observations sorted along one feature */
    size_t *scratch;      /* [n]: the partition of a node's observations */
    int oom;
};

/* An observation's coordinate along the feature being split, for sorting. */
struct keyed {
    double x;
    size_t row;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *p = a, *q = b;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return p->row < q->row ? -1 : p->row > q->row;
}

static int new_node(struct grow *g)
{
    struct tree *t = g->t;
    if (t->n_nodes == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct node *p = tunep_realloc(t->nodes, t->cap * sizeof *p, cap * sizeof *p);
        if (!p) {
            g->oom = 1;
            return -1;
        }
        t->nodes = p;
        t->cap = cap;
    }
    memset(&t->nodes[t->n_nodes], 0, sizeof *t->nodes);
    t->nodes[t->n_nodes].feature = -1;
    return (int)t->n_nodes++;
}

/* The best split of idx[0..m) along ordered feature f: sets *score (the sum of
 * squares explained, larger is better) and *threshold; 0 when none is allowed. */
static int split_ordered(struct grow *g, const size_t *idx, size_t m, size_t f, double total,
                         double *score, double *threshold)
{
    const struct data *D = g->data;
    struct keyed *s = g->sorted;
    for (size_t k = 0; k < m; k++) {
        s[k].x = D->x[idx[k] * D->d + f];
        s[k].row = idx[k];
    }
    qsort(s, m, sizeof *s, cmp_keyed);
    size_t min_leaf = (size_t)g->c->min_samples_leaf;
    double left = 0, best = -(double)INFINITY;
    int found = 0;
    for (size_t k = 0; k + 1 < m; k++) {
        left += D->y[s[k].row];
        size_t nl = k + 1, nr = m - nl;
        double xa = s[k].x, xb = s[k + 1].x;
        if (!(xb > xa) || nl < min_leaf || nr < min_leaf)
            continue;
        double right = total - left;
        double sc = left * left / (double)nl + right * right / (double)nr;
        if (sc > best) {
            best = sc;
            *threshold = xa + (xb - xa) / 2;
            found = 1;
        }
    }
    *score = best;
    return found;
}

/* The best split of idx[0..m) along categorical feature f with k values: the
 * values present ordered by mean, split at the best prefix. */
static int split_categorical(struct grow *g, const size_t *idx, size_t m, size_t f, int k,
                             double total, double *score, uint64_t *mask)
{
    const struct data *D = g->data;
    double sum[TUNEP_IMPORTANCE_MAX_CATEGORIES] = {0};
    size_t count[TUNEP_IMPORTANCE_MAX_CATEGORIES] = {0};
    int present[TUNEP_IMPORTANCE_MAX_CATEGORIES], n_present = 0;
    for (size_t r = 0; r < m; r++) {
        int c = (int)D->x[idx[r] * D->d + f];
        sum[c] += D->y[idx[r]];
        count[c]++;
    }
    for (int c = 0; c < k; c++)
        if (count[c])
            present[n_present++] = c;
    /* Insertion sort by mean, ties by value index: at most 64 values. */
    for (int a = 1; a < n_present; a++) {
        int c = present[a], b = a;
        double mc = sum[c] / (double)count[c];
        while (b > 0) {
            int p = present[b - 1];
            double mp = sum[p] / (double)count[p];
            if (mp < mc || (mp == mc && p < c))
                break;
            present[b] = p;
            b--;
        }
        present[b] = c;
    }
    size_t min_leaf = (size_t)g->c->min_samples_leaf, nl = 0;
    double left = 0, best = -(double)INFINITY;
    uint64_t set = 0, present_mask = 0;
    int found = 0;
    for (int a = 0; a < n_present; a++)
        present_mask |= (uint64_t)1 << present[a];
    for (int a = 0; a + 1 < n_present; a++) {
        int c = present[a];
        left += sum[c];
        nl += count[c];
        set |= (uint64_t)1 << c;
        size_t nr = m - nl;
        if (nl < min_leaf || nr < min_leaf)
            continue;
        double right = total - left;
        double sc = left * left / (double)nl + right * right / (double)nr;
        if (sc > best) {
            best = sc;
            /* Values absent here go with the larger side. */
            *mask = nl >= nr ? set | ~present_mask : set;
            found = 1;
        }
    }
    *score = best;
    return found;
}

/* Grows the subtree of idx[0..m) at depth; returns its node index, or -1 on OOM. */
static int grow_node(struct grow *g, size_t *idx, size_t m, int depth)
{
    const struct data *D = g->data;
    int id = new_node(g);
    if (id < 0)
        return -1;
    double total = 0, lo = (double)INFINITY, hi = -(double)INFINITY;
    for (size_t r = 0; r < m; r++) {
        double y = D->y[idx[r]];
        total += y;
        lo = y < lo ? y : lo;
        hi = y > hi ? y : hi;
    }
    g->t->nodes[id].value = total / (double)m;
    if (m < (size_t)g->c->min_samples_split || depth >= g->c->max_depth || !(hi > lo))
        return id;

    /* The split that explains the most: strictly better than the parent's own
     * sum of squares, and than every feature earlier in this tree's order. */
    double best = total * total / (double)m, threshold = 0;
    uint64_t mask = 0;
    best += fabs(best) * 1e-12;
    int feature = -1;
    for (size_t o = 0; o < D->d; o++) {
        size_t f = g->order[o];
        double sc, th = 0;
        uint64_t mk = 0;
        int ok = D->n_cat[f] ? split_categorical(g, idx, m, f, D->n_cat[f], total, &sc, &mk)
                             : split_ordered(g, idx, m, f, total, &sc, &th);
        if (ok && sc > best) {
            best = sc;
            feature = (int)f;
            threshold = th;
            mask = mk;
        }
    }
    if (feature < 0)
        return id;

    /* Partition idx in place, keeping each side's order. */
    size_t nl = 0, nr = 0;
    for (size_t r = 0; r < m; r++) {
        double x = D->x[idx[r] * D->d + (size_t)feature];
        int left = D->n_cat[feature] ? (int)((mask >> (int)x) & 1) : x < threshold;
        if (left)
            idx[nl++] = idx[r];
        else
            g->scratch[nr++] = idx[r];
    }
    memcpy(idx + nl, g->scratch, nr * sizeof *idx);
    int l = grow_node(g, idx, nl, depth + 1);
    if (l < 0)
        return -1;
    int r = grow_node(g, idx + nl, nr, depth + 1);
    if (r < 0)
        return -1;
    struct node *nd = &g->t->nodes[id]; /* nodes may have moved */
    nd->feature = feature;
    nd->threshold = threshold;
    nd->left_mask = mask;
    nd->left = l;
    nd->right = r;
    return id;
}

/* ---- the decomposition of one tree ----------------------------------------------- */

/* A tree's leaves as boxes over the atoms of each feature. */
struct boxes {
    size_t n_leaves, d;
    double *value;   /* [n_leaves] */
    double *lo, *hi; /* [n_leaves * d]: ordered features' extents */
    uint64_t *mask;  /* [n_leaves * d]: categorical features' value sets */
    double *size;    /* [n_leaves * d]: the extent's measure (width, or share of values) */
    double *vol;     /* [n_leaves]: the product of the sizes */
    double **cuts;   /* [d]: each ordered feature's sorted distinct split points */
    size_t *n_cuts;  /* [d] */
    size_t *a0, *a1; /* [n_leaves * d]: ordered features' atom ranges [a0, a1) */
    size_t *n_atoms; /* [d]: atoms per feature */
    double **width;  /* [d]: each atom's measure */
};

struct walk {
    const struct tree *t;
    const struct data *D;
    struct boxes *b;
    double *lo, *hi; /* [depth][d] stacks */
    uint64_t *mask;
};

/* Records the leaves under node id with the box lo/hi/mask of depth level. */
static void walk_leaves(struct walk *w, int id, int level)
{
    const struct node *nd = &w->t->nodes[id];
    size_t d = w->D->d;
    double *lo = w->lo + (size_t)level * d, *hi = w->hi + (size_t)level * d;
    uint64_t *mask = w->mask + (size_t)level * d;
    if (nd->feature < 0) {
        struct boxes *b = w->b;
        size_t L = b->n_leaves++;
        b->value[L] = nd->value;
        memcpy(b->lo + L * d, lo, d * sizeof *lo);
        memcpy(b->hi + L * d, hi, d * sizeof *hi);
        memcpy(b->mask + L * d, mask, d * sizeof *mask);
        return;
    }
    size_t f = (size_t)nd->feature;
    double *clo = lo + d, *chi = hi + d;
    uint64_t *cmask = mask + d;
    for (int side = 0; side < 2; side++) {
        memcpy(clo, lo, d * sizeof *lo);
        memcpy(chi, hi, d * sizeof *hi);
        memcpy(cmask, mask, d * sizeof *mask);
        if (w->D->n_cat[f])
            cmask[f] = side == 0 ? mask[f] & nd->left_mask : mask[f] & ~nd->left_mask;
        else if (side == 0)
            chi[f] = nd->threshold;
        else
            clo[f] = nd->threshold;
        walk_leaves(w, side == 0 ? nd->left : nd->right, level + 1);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The index of boundary v among 0, cuts..., 1 (v is one of them). */
static size_t boundary(const double *cuts, size_t n, double v)
{
    if (v <= 0)
        return 0;
    if (v >= 1)
        return n + 1;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cuts[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo + 1;
}

static int popcount64(uint64_t m)
{
    return __builtin_popcountll(m);
}

static void boxes_done(struct boxes *b, size_t d)
{
    tunep_free(b->value);
    tunep_free(b->lo);
    tunep_free(b->hi);
    tunep_free(b->mask);
    tunep_free(b->size);
    tunep_free(b->vol);
    tunep_free(b->a0);
    tunep_free(b->a1);
    tunep_free(b->n_cuts);
    tunep_free(b->n_atoms);
    for (size_t f = 0; b->cuts && f < d; f++)
        tunep_free(b->cuts[f]);
    for (size_t f = 0; b->width && f < d; f++)
        tunep_free(b->width[f]);
    tunep_free(b->cuts);
    tunep_free(b->width);
    memset(b, 0, sizeof *b);
}

/* The leaves of t as boxes, with each feature's atoms. 0, or -1 on OOM. */
static int tree_boxes(const struct tree *t, const struct data *D, struct boxes *b)
{
    size_t d = D->d, nn = t->n_nodes, depth = 0;
    memset(b, 0, sizeof *b);
    b->d = d;
    /* A leaf count bound, and the depth for the box stacks. */
    size_t n_leaves = nn / 2 + 1;
    struct walk w = {.t = t, .D = D, .b = b};
    {
        /* depth <= n_nodes; the walk needs one box per level */
        size_t *lvl = tunep_calloc(nn, sizeof *lvl);
        if (!lvl)
            return -1;
        for (size_t i = 0; i < nn; i++) {
            const struct node *nd = &t->nodes[i];
            if (nd->feature >= 0) {
                lvl[nd->left] = lvl[i] + 1;
                lvl[nd->right] = lvl[i] + 1;
            }
            depth = lvl[i] > depth ? lvl[i] : depth;
        }
        tunep_free(lvl);
    }
    depth += 2;
    w.lo = tunep_malloc(depth * d * sizeof *w.lo);
    w.hi = tunep_malloc(depth * d * sizeof *w.hi);
    w.mask = tunep_malloc(depth * d * sizeof *w.mask);
    b->value = tunep_malloc(n_leaves * sizeof *b->value);
    b->lo = tunep_malloc(n_leaves * d * sizeof *b->lo);
    b->hi = tunep_malloc(n_leaves * d * sizeof *b->hi);
    b->mask = tunep_malloc(n_leaves * d * sizeof *b->mask);
    b->size = tunep_malloc(n_leaves * d * sizeof *b->size);
    b->vol = tunep_malloc(n_leaves * sizeof *b->vol);
    b->a0 = tunep_malloc(n_leaves * d * sizeof *b->a0);
    b->a1 = tunep_malloc(n_leaves * d * sizeof *b->a1);
    b->cuts = tunep_calloc(d, sizeof *b->cuts);
    b->width = tunep_calloc(d, sizeof *b->width);
    b->n_cuts = tunep_calloc(d, sizeof *b->n_cuts);
    b->n_atoms = tunep_calloc(d, sizeof *b->n_atoms);
    int rc = -1;
    if (!w.lo || !w.hi || !w.mask || !b->value || !b->lo || !b->hi || !b->mask || !b->size ||
        !b->vol || !b->a0 || !b->a1 || !b->cuts || !b->width || !b->n_cuts || !b->n_atoms)
        goto out;
    for (size_t f = 0; f < d; f++) {
        w.lo[f] = 0;
        w.hi[f] = 1;
        int k = D->n_cat[f];
        w.mask[f] = k == 64 ? ~(uint64_t)0 : k ? ((uint64_t)1 << k) - 1 : 0;
    }
    walk_leaves(&w, 0, 0);

    /* Each ordered feature's split points, and every feature's atoms. */
    for (size_t i = 0; i < nn; i++) {
        const struct node *nd = &t->nodes[i];
        if (nd->feature >= 0 && !D->n_cat[nd->feature])
            b->n_cuts[nd->feature]++;
    }
    for (size_t f = 0; f < d; f++) {
        size_t k = D->n_cat[f] ? (size_t)D->n_cat[f] : b->n_cuts[f] + 1;
        if (!(b->width[f] = tunep_malloc(k * sizeof *b->width[f])))
            goto out;
        if (!D->n_cat[f] && b->n_cuts[f] &&
            !(b->cuts[f] = tunep_malloc(b->n_cuts[f] * sizeof *b->cuts[f])))
            goto out;
        b->n_cuts[f] = 0;
    }
    for (size_t i = 0; i < nn; i++) {
        const struct node *nd = &t->nodes[i];
        if (nd->feature >= 0 && !D->n_cat[nd->feature])
            b->cuts[nd->feature][b->n_cuts[nd->feature]++] = nd->threshold;
    }
    for (size_t f = 0; f < d; f++) {
        if (D->n_cat[f]) {
            b->n_atoms[f] = (size_t)D->n_cat[f];
            for (size_t a = 0; a < b->n_atoms[f]; a++)
                b->width[f][a] = 1.0 / (double)D->n_cat[f];
            continue;
        }
        size_t n = b->n_cuts[f], u = 0;
        if (n > 1)
            qsort(b->cuts[f], n, sizeof *b->cuts[f], cmp_double);
        for (size_t i = 0; i < n; i++)
            if (u == 0 || b->cuts[f][i] != b->cuts[f][u - 1])
                b->cuts[f][u++] = b->cuts[f][i];
        b->n_cuts[f] = u;
        b->n_atoms[f] = u + 1;
        for (size_t a = 0; a <= u; a++)
            b->width[f][a] = (a == u ? 1.0 : b->cuts[f][a]) - (a == 0 ? 0.0 : b->cuts[f][a - 1]);
    }
    for (size_t L = 0; L < b->n_leaves; L++) {
        double vol = 1;
        for (size_t f = 0; f < d; f++) {
            size_t j = L * d + f;
            if (D->n_cat[f]) {
                b->size[j] = (double)popcount64(b->mask[j]) / (double)D->n_cat[f];
            } else {
                b->size[j] = b->hi[j] - b->lo[j];
                b->a0[j] = boundary(b->cuts[f], b->n_cuts[f], b->lo[j]);
                b->a1[j] = boundary(b->cuts[f], b->n_cuts[f], b->hi[j]);
            }
            vol *= b->size[j];
        }
        b->vol[L] = vol;
    }
    rc = 0;
out:
    tunep_free(w.lo);
    tunep_free(w.hi);
    tunep_free(w.mask);
    return rc;
}

/* The atom ranges [a[i], e[i]) that leaf L covers along feature f: one for an
 * ordered feature, one per value for a categorical one. Returns their count. */
static size_t leaf_ranges(const struct boxes *b, const struct data *D, size_t L, size_t f,
                          size_t a[TUNEP_IMPORTANCE_MAX_CATEGORIES],
                          size_t e[TUNEP_IMPORTANCE_MAX_CATEGORIES])
{
    size_t j = L * b->d + f, n = 0;
    if (!D->n_cat[f]) {
        a[0] = b->a0[j];
        e[0] = b->a1[j];
        return 1;
    }
    for (uint64_t m = b->mask[j]; m; m &= m - 1, n++) {
        a[n] = (size_t)__builtin_ctzll(m);
        e[n] = a[n] + 1;
    }
    return n;
}

/* The variance of feature f's marginal (around mean mu); buf has n_atoms + 1 doubles. */
static double main_variance(const struct boxes *b, const struct data *D, size_t f, double mu,
                            double *buf)
{
    size_t na = b->n_atoms[f];
    memset(buf, 0, (na + 1) * sizeof *buf);
    for (size_t L = 0; L < b->n_leaves; L++) {
        double c = b->value[L] * b->vol[L] / b->size[L * b->d + f];
        size_t a[TUNEP_IMPORTANCE_MAX_CATEGORIES], e[TUNEP_IMPORTANCE_MAX_CATEGORIES];
        for (size_t r = 0, nr = leaf_ranges(b, D, L, f, a, e); r < nr; r++) {
            buf[a[r]] += c;
            buf[e[r]] -= c;
        }
    }
    double run = 0, var = 0;
    for (size_t a = 0; a < na; a++) {
        run += buf[a];
        var += b->width[f][a] * (run - mu) * (run - mu);
    }
    return var;
}

/* The variance of the (f, g) marginal; buf has (n_atoms[f] + 1) * (n_atoms[g] + 1) doubles. */
static double pair_variance(const struct boxes *b, const struct data *D, size_t f, size_t g,
                            double mu, double *buf)
{
    size_t nf = b->n_atoms[f], ng = b->n_atoms[g], s = ng + 1;
    memset(buf, 0, (nf + 1) * s * sizeof *buf);
    for (size_t L = 0; L < b->n_leaves; L++) {
        double c = b->value[L] * b->vol[L] / (b->size[L * b->d + f] * b->size[L * b->d + g]);
        size_t a[TUNEP_IMPORTANCE_MAX_CATEGORIES], e[TUNEP_IMPORTANCE_MAX_CATEGORIES];
        size_t p[TUNEP_IMPORTANCE_MAX_CATEGORIES], q[TUNEP_IMPORTANCE_MAX_CATEGORIES];
        size_t na = leaf_ranges(b, D, L, f, a, e), np = leaf_ranges(b, D, L, g, p, q);
        for (size_t i = 0; i < na; i++)
            for (size_t k = 0; k < np; k++) {
                buf[a[i] * s + p[k]] += c;
                buf[a[i] * s + q[k]] -= c;
                buf[e[i] * s + p[k]] -= c;
                buf[e[i] * s + q[k]] += c;
            }
    }
    /* Prefix sums along g, then along f. */
    for (size_t a = 0; a < nf; a++)
        for (size_t e = 1; e < ng; e++)
            buf[a * s + e] += buf[a * s + e - 1];
    for (size_t a = 1; a < nf; a++)
        for (size_t e = 0; e < ng; e++)
            buf[a * s + e] += buf[(a - 1) * s + e];
    double var = 0;
    for (size_t a = 0; a < nf; a++)
        for (size_t e = 0; e < ng; e++) {
            double m = buf[a * s + e] - mu;
            var += b->width[f][a] * b->width[g][e] * m * m;
        }
    return var;
}

/* ---- the estimator ----------------------------------------------------------------- */

void tunep_importance_config_default(struct tunep_importance_config *c)
{
    c->n_trees = 64;
    c->max_depth = 64;
    c->min_samples_split = 2;
    c->min_samples_leaf = 1;
    c->pairs = 1;
    c->seed = 0;
}

void tunep_importance_done(struct tunep_importance *imp)
{
    if (!imp)
        return;
    tunep_free(imp->importance);
    tunep_free(imp->sd);
    tunep_free(imp->pairs);
    memset(imp, 0, sizeof *imp);
}

/* A per-tree fraction's running mean and sum of squared deviations (Welford). */
struct acc {
    double mean, m2;
    int n;
};

static void acc_add(struct acc *a, double v)
{
    double delta = v - a->mean;
    a->n++;
    a->mean += delta / a->n;
    a->m2 += delta * (v - a->mean);
}

/* The mean and the (population) standard deviation; 0 and 0 without values. */
static void acc_get(const struct acc *a, double *mean, double *sd)
{
    *mean = a->n ? a->mean : 0;
    *sd = a->n && a->m2 > 0 ? sqrt(a->m2 / a->n) : 0;
}

tune_status tunep_importance_fanova(const tune_space *space, const struct tunep_value *configs,
                                    const double *y, size_t n,
                                    const struct tunep_importance_config *c,
                                    struct tunep_importance *ret, tune_error *err)
{
    if (!space || (!configs && n) || (!y && n) || !c || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "importance: missing argument");
    if (c->n_trees < 1 || c->n_trees > TUNEP_IMPORTANCE_MAX_TREES)
        return tunep_error_set(err, TUNE_EINVAL, "importance: n_trees must be 1 to %d, got %d",
                               TUNEP_IMPORTANCE_MAX_TREES, c->n_trees);
    if (c->max_depth < 1 || c->max_depth > TUNEP_IMPORTANCE_MAX_DEPTH)
        return tunep_error_set(err, TUNE_EINVAL, "importance: max_depth must be 1 to %d, got %d",
                               TUNEP_IMPORTANCE_MAX_DEPTH, c->max_depth);
    if (c->min_samples_split < 2 || c->min_samples_leaf < 1)
        return tunep_error_set(err, TUNE_EINVAL,
                               "importance: min_samples_split must be at least 2 and "
                               "min_samples_leaf at least 1");
    size_t n_ok = 0;
    for (size_t i = 0; i < n; i++)
        n_ok += isfinite(y[i]) != 0;
    if (n_ok < 2)
        return tunep_error_set(err, TUNE_EINVAL,
                               "importance: needs at least 2 observations with a finite value, "
                               "got %zu",
                               n_ok);

    tune_status rs = TUNE_ENOMEM;
    struct tunep_importance out = {.n_params = space->n, .n_trials = n_ok};
    size_t n_unit = tunep_unit_dims(space), n_cond = 0;
    for (size_t i = 0; i < space->n; i++)
        n_cond += space->params[i].n_cond > 0 && space->params[i].dist != TUNEP_DIST_CONST;
    struct data D = {.n = n_ok, .d = n_unit - n_cond};
    struct tree t = {0};
    struct boxes bx = {0};
    struct acc *acc = NULL;
    double *u = NULL, *buf = NULL, *v_main = NULL;
    size_t *idx = NULL, n_pairs = 0;
    gsl_rng *r = NULL;
    struct grow g = {.data = &D, .c = c, .t = &t};
    size_t d = D.d;

    /* One element more everywhere: no allocation of 0 bytes for an empty space. */
    out.importance = tunep_malloc((space->n + 1) * sizeof *out.importance);
    out.sd = tunep_malloc((space->n + 1) * sizeof *out.sd);
    D.x = tunep_malloc((n_ok * d + 1) * sizeof *D.x);
    D.y = tunep_malloc(n_ok * sizeof *D.y);
    D.n_cat = tunep_calloc(d + 1, sizeof *D.n_cat);
    D.param = tunep_calloc(d + 1, sizeof *D.param);
    D.unit = tunep_calloc(d + 1, sizeof *D.unit);
    u = tunep_malloc((n_unit + 1) * sizeof *u);
    idx = tunep_malloc(n_ok * sizeof *idx);
    g.sorted = tunep_malloc(n_ok * sizeof *g.sorted);
    g.scratch = tunep_malloc(n_ok * sizeof *g.scratch);
    g.order = tunep_malloc((d + 1) * sizeof *g.order);
    v_main = tunep_malloc((d + 1) * sizeof *v_main);
    if (!out.importance || !out.sd || !D.x || !D.y || !D.n_cat || !D.param || !D.unit || !u ||
        !idx || !g.sorted || !g.scratch || !g.order || !v_main)
        goto fail;
    if (c->pairs && d >= 2 && d <= TUNEP_IMPORTANCE_MAX_PAIR_PARAMS)
        n_pairs = d * (d - 1) / 2;
    if (n_pairs && !(out.pairs = tunep_calloc(n_pairs, sizeof *out.pairs)))
        goto fail;
    out.n_pairs = n_pairs;
    if (!(acc = tunep_calloc(d + n_pairs + 1, sizeof *acc)))
        goto fail;

    /* The features, and the observations in their coordinates. */
    for (size_t i = 0, f = 0, ui = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (p->dist == TUNEP_DIST_CONST)
            continue;
        if (p->n_cond > 0) {
            ui++;
            continue;
        }
        D.unit[f] = ui++;
        D.param[f] = i;
        if ((p->dist == TUNEP_DIST_CHOICE || p->dist == TUNEP_DIST_GRID) && p->n_values >= 2 &&
            p->n_values <= TUNEP_IMPORTANCE_MAX_CATEGORIES)
            D.n_cat[f] = (int)p->n_values;
        f++;
    }
    double y_mean = 0;
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!isfinite(y[i]))
            continue;
        tunep_values_to_unit(space, configs + i * space->n, u);
        for (size_t f = 0; f < d; f++) {
            double x = u[D.unit[f]];
            if (D.n_cat[f]) {
                x = floor(x * D.n_cat[f]);
                x = x < 0 ? 0 : x >= D.n_cat[f] ? D.n_cat[f] - 1 : x;
            }
            D.x[k * d + f] = x;
        }
        D.y[k] = y[i];
        y_mean += y[i];
        k++;
    }
    y_mean /= (double)n_ok;
    for (size_t k = 0; k < n_ok; k++)
        D.y[k] -= y_mean;

    if (!(r = gsl_rng_alloc(tunep_rng_xoshiro256)))
        goto fail;
    gsl_rng_set(r, (unsigned long)c->seed);
    size_t buf_cap = 0;
    int used = 0;
    for (int tr = 0; tr < c->n_trees; tr++) {
        /* The bootstrap sample and this tree's feature order. */
        for (size_t k = 0; k < n_ok; k++)
            idx[k] = (size_t)gsl_rng_uniform_int(r, (unsigned long)n_ok);
        for (size_t f = 0; f < d; f++)
            g.order[f] = f;
        for (size_t f = d; f > 1; f--) {
            size_t j = (size_t)gsl_rng_uniform_int(r, (unsigned long)f);
            size_t tmp = g.order[f - 1];
            g.order[f - 1] = g.order[j];
            g.order[j] = tmp;
        }
        t.n_nodes = 0;
        if (grow_node(&g, idx, n_ok, 0) < 0 || g.oom)
            goto fail;
        if (tree_boxes(&t, &D, &bx) < 0)
            goto fail;

        double mu = 0, var = 0, sq = 0;
        for (size_t L = 0; L < bx.n_leaves; L++)
            mu += bx.value[L] * bx.vol[L];
        for (size_t L = 0; L < bx.n_leaves; L++) {
            var += bx.vol[L] * (bx.value[L] - mu) * (bx.value[L] - mu);
            sq += bx.vol[L] * bx.value[L] * bx.value[L];
        }
        /* A constant tree explains nothing: it is left out of the averages. */
        if (!(var > 1e-12 * sq) || !isfinite(var)) {
            boxes_done(&bx, d);
            continue;
        }
        /* Scratch for the marginals: the largest product of two features' atoms. */
        size_t need = 1;
        for (size_t f = 0; f < d; f++) {
            need = bx.n_atoms[f] + 1 > need ? bx.n_atoms[f] + 1 : need;
            for (size_t h = f + 1; n_pairs && h < d; h++) {
                size_t cells = (bx.n_atoms[f] + 1) * (bx.n_atoms[h] + 1);
                need = cells > need ? cells : need;
            }
        }
        if (need > buf_cap) {
            tunep_free(buf);
            if (!(buf = tunep_malloc(need * sizeof *buf)))
                goto fail;
            buf_cap = need;
        }
        for (size_t f = 0; f < d; f++) {
            v_main[f] = main_variance(&bx, &D, f, mu, buf);
            acc_add(&acc[f], v_main[f] / var);
        }
        for (size_t f = 0, p = 0; f < d && n_pairs; f++)
            for (size_t h = f + 1; h < d; h++, p++) {
                double v = pair_variance(&bx, &D, f, h, mu, buf) - v_main[f] - v_main[h];
                acc_add(&acc[d + p], v > 0 ? v / var : 0);
            }
        used++;
        boxes_done(&bx, d);
    }

    for (size_t i = 0; i < space->n; i++)
        out.importance[i] = out.sd[i] = (double)NAN;
    for (size_t f = 0; f < d; f++)
        acc_get(&acc[f], &out.importance[D.param[f]], &out.sd[D.param[f]]);
    for (size_t f = 0, p = 0; f < d && n_pairs; f++)
        for (size_t h = f + 1; h < d; h++, p++) {
            out.pairs[p].a = D.param[f];
            out.pairs[p].b = D.param[h];
            acc_get(&acc[d + p], &out.pairs[p].importance, &out.pairs[p].sd);
        }
    out.n_trees = used;
    *ret = out;
    memset(&out, 0, sizeof out);
    rs = TUNE_OK;
fail:
    if (rs == TUNE_ENOMEM)
        tunep_error_set(err, TUNE_ENOMEM, "importance: out of memory");
    tunep_importance_done(&out);
    boxes_done(&bx, d);
    tunep_free(t.nodes);
    tunep_free(D.x);
    tunep_free(D.y);
    tunep_free(D.n_cat);
    tunep_free(D.param);
    tunep_free(D.unit);
    tunep_free(u);
    tunep_free(idx);
    tunep_free(g.sorted);
    tunep_free(g.scratch);
    tunep_free(g.order);
    tunep_free(v_main);
    tunep_free(buf);
    tunep_free(acc);
    if (r)
        gsl_rng_free(r);
    return rs;
}
