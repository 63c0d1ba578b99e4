/*
 * alloc.c - the replaceable allocator and a growable text buffer.
 *
 * Every allocation of libtune goes through tunep_malloc/tunep_free so that
 * tune_set_alloc_funcs() can inject failures (jansson's test_chaos pattern).
 * The hooks are process-wide and set before any other call.
 */
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*alloc_fn)(size_t) = malloc;
static void (*free_fn)(void *) = free;

void tune_set_alloc_funcs(void *(*malloc_fn)(size_t), void (*release_fn)(void *))
{
    alloc_fn = malloc_fn ? malloc_fn : malloc;
    free_fn = release_fn ? release_fn : free;
}

void tune_free(void *ptr)
{
    if (ptr)
        free_fn(ptr);
}

void *tunep_malloc(size_t size)
{
    return alloc_fn(size ? size : 1);
}

void *tunep_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    void *p = tunep_malloc(bytes);
    if (p)
        memset(p, 0, bytes > 0 ? bytes : 1);
    return p;
}

void *tunep_realloc(void *ptr, size_t old_size, size_t new_size)
{
    void *p = tunep_malloc(new_size);
    if (!p)
        return NULL;
    if (ptr) {
        memcpy(p, ptr, old_size < new_size ? old_size : new_size);
        free_fn(ptr);
    }
    return p;
}

void tunep_free(void *ptr)
{
    if (ptr)
        free_fn(ptr);
}

char *tunep_strndup(const char *s, size_t n)
{
    char *p = tunep_malloc(n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *tunep_strdup(const char *s)
{
    return s ? tunep_strndup(s, strlen(s)) : NULL;
}

char *tunep_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = tunep_malloc((size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void tunep_buf_init(struct tunep_buf *b)
{
    memset(b, 0, sizeof *b);
}

void tunep_buf_done(struct tunep_buf *b)
{
    tunep_free(b->data);
    memset(b, 0, sizeof *b);
}

static int buf_reserve(struct tunep_buf *b, size_t extra)
{
    if (b->oom)
        return 0;
    if (b->len + extra + 1 <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = tunep_realloc(b->data, b->len + (b->data ? 1 : 0), cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

void tunep_buf_append(struct tunep_buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tunep_buf_puts(struct tunep_buf *b, const char *s)
{
    tunep_buf_append(b, s, strlen(s));
}

void tunep_buf_printf(struct tunep_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        tunep_buf_append(b, small, (size_t)n);
        return;
    }
    if (!buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *tunep_buf_take(struct tunep_buf *b)
{
    if (b->oom) {
        tunep_buf_done(b);
        return NULL;
    }
    if (!b->data && !buf_reserve(b, 0))
        return NULL;
    if (b->len == 0)
        b->data[0] = '\0';
    char *p = b->data;
    memset(b, 0, sizeof *b);
    return p;
}
