/*
 * server.c - the live dashboard's HTTP server (tune.h, "Live dashboard"):
 * libmicrohttpd on a thread of its own, routes as a table, and the limits
 * that keep bad or hostile clients from costing more than a bounded amount.
 *
 * Limits (all libmicrohttpd options, so its parser enforces them):
 *   - max_connections at once (default 64); more are accepted and closed;
 *   - CONN_MEMORY bytes per connection for the request line and headers:
 *     longer URLs get 414, longer headers 431, and a connection can never
 *     hold more (response bodies are shared, reference-counted documents);
 *   - timeout_s (default 10 s) without progress closes a connection, so a
 *     client that stops sending (or reading) frees its slot;
 *   - GET and HEAD only (405 with Allow), no request bodies are read;
 *   - HTTP/1.1 without Host is 400 (libmicrohttpd lets it through).
 * A request line libmicrohttpd cannot parse at all (binary bytes) gets no
 * answer: the connection is closed at the timeout.
 * Total memory is then bounded by max_connections * CONN_MEMORY plus the
 * documents (one report page and trials document at a time, each kept
 * while a response still sends it).
 *
 * On a loopback address a request whose Host header names anything but a
 * loopback host gets 403: a web page the user visits cannot read the
 * experiment through DNS rebinding (a name of the attacker's that resolves
 * to 127.0.0.1 later).
 *
 * The library never prints: libmicrohttpd's own messages go to the log
 * callback at debug level.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dashboard/dashboard.h"
#include "dashboard/options.h"

/* Per-connection memory for the request line and headers (libmicrohttpd's pool). */
#define CONN_MEMORY    (16 * 1024)
#define LISTEN_BACKLOG 64

struct tune_dashboard {
    struct MHD_Daemon *mhd;
    struct tunep_dash_views *views;
    int port;
    int loopback;
    char url[128];
};

typedef tune_status (*view_fn)(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                               tune_error *err);

/* The documents, by exact path; /api/trials/<id> is matched on its own. */
static const struct route {
    const char *path;
    view_fn view;
} routes[] = {
    {"/", tunep_dash_view_page},
    {"/index.html", tunep_dash_view_page},
    {"/api/report", tunep_dash_view_report},
    {"/api/summary", tunep_dash_view_summary},
    {"/api/trials", tunep_dash_view_trials},
};
#define TRIAL_PREFIX "/api/trials/"

/* ---- responses ---------------------------------------------------------------- */

static void free_blob(void *cls)
{
    tunep_dash_blob_unref(cls);
}

static void common_headers(struct MHD_Response *r, const char *type)
{
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    /* The page needs its inline style and script and requests to this server, nothing else. */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; style-src "
                            "'unsafe-inline'; img-src data:; connect-src 'self'; "
                            "frame-ancestors 'none'");
}

static enum MHD_Result send_response(struct MHD_Connection *c, unsigned code,
                                     struct MHD_Response *r)
{
    if (!r)
        return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

/* A short text/plain answer (errors); extra: one more header, or NULL. */
static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, const char *extra_name,
                                 const char *extra_value, const char *fmt, ...) TUNEP_PRINTF(5, 6);
static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, const char *extra_name,
                                 const char *extra_value, const char *fmt, ...)
{
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text - 1, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof text - 1 ? (size_t)n : sizeof text - 2;
    text[len++] = '\n';
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_COPY);
    if (r) {
        common_headers(r, "text/plain; charset=utf-8");
        if (extra_name)
            MHD_add_response_header(r, extra_name, extra_value);
    }
    return send_response(c, code, r);
}

static enum MHD_Result send_doc(struct MHD_Connection *c, struct tunep_dash_doc *doc)
{
    const char *match =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    struct MHD_Response *r;
    unsigned code = MHD_HTTP_OK;
    if (doc->etag[0] && match && strstr(match, doc->etag)) {
        tunep_dash_blob_unref(doc->body);
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        code = MHD_HTTP_NOT_MODIFIED;
    } else {
        r = MHD_create_response_from_buffer_with_free_callback_cls(doc->body->len, doc->body->data,
                                                                   free_blob, doc->body);
        if (!r)
            tunep_dash_blob_unref(doc->body);
    }
    if (r) {
        common_headers(r, doc->type);
        if (doc->etag[0])
            MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, doc->etag);
    }
    return send_response(c, code, r);
}

/* ---- requests ------------------------------------------------------------------ */

/* Whether a Host header's host (before ":port") is a loopback name or address. */
static int loopback_host(const char *host)
{
    char name[256];
    size_t n;
    if (host[0] == '[') {
        const char *end = strchr(host, ']');
        if (!end)
            return 0;
        n = (size_t)(end - host - 1);
        host++;
    } else {
        n = strcspn(host, ":");
    }
    if (n == 0 || n >= sizeof name)
        return 0;
    memcpy(name, host, n);
    name[n] = '\0';
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, name, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, name, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return strcasecmp(name, "localhost") == 0;
}

/* "/api/trials/<id>": the id, digits only; 0 when it is not one. */
static int parse_trial_id(const char *s, int64_t *ret)
{
    int64_t v = 0;
    if (!*s || strlen(s) > 18)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10 + (*s - '0');
    }
    *ret = v;
    return 1;
}

static enum MHD_Result send_view_error(struct MHD_Connection *c, const tune_error *err,
                                       tune_status rs)
{
    char text[512];
    tune_error_format(err, text, sizeof text);
    if (rs == TUNE_ENOTFOUND)
        return send_text(c, MHD_HTTP_NOT_FOUND, NULL, NULL, "404 not found: %s", text);
    tunep_log(TUNE_LOG_WARN, "dashboard: %s", text);
    return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "500 %s", text);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
    struct tune_dashboard *d = cls;
    (void)upload_data, (void)upload_data_size, (void)req_cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW, "GET, HEAD",
                         "405 method not allowed: the dashboard is read-only (GET and HEAD)");
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host && strcmp(version, MHD_HTTP_VERSION_1_0) != 0)
        return send_text(c, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                         "400 bad request: HTTP/1.1 requires a Host header");
    if (d->loopback) {
        if (host && !loopback_host(host))
            return send_text(c, MHD_HTTP_FORBIDDEN, NULL, NULL,
                             "403 forbidden: this dashboard answers requests for localhost only");
    }
    struct tunep_dash_doc doc = {0};
    tune_error err;
    tune_status rs = TUNE_ENOTFOUND;
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++)
        if (strcmp(url, routes[i].path) == 0) {
            rs = routes[i].view(d->views, &doc, &err);
            if (rs)
                return send_view_error(c, &err, rs);
            return send_doc(c, &doc);
        }
    int64_t id;
    if (strncmp(url, TRIAL_PREFIX, strlen(TRIAL_PREFIX)) == 0 &&
        parse_trial_id(url + strlen(TRIAL_PREFIX), &id)) {
        if ((rs = tunep_dash_view_trial(d->views, id, &doc, &err)))
            return send_view_error(c, &err, rs);
        return send_doc(c, &doc);
    }
    return send_text(c, MHD_HTTP_NOT_FOUND, NULL, NULL,
                     "404 not found (the dashboard serves /, /api/report, /api/summary, "
                     "/api/trials and /api/trials/<id>)");
}

/* libmicrohttpd's own messages (a client that broke off, a refused connection). */
static void mhd_log(void *cls, const char *fmt, va_list ap) TUNEP_PRINTF(2, 0);
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char text[512];
    (void)cls;
    vsnprintf(text, sizeof text, fmt, ap);
    text[strcspn(text, "\n")] = '\0';
    tunep_log(TUNE_LOG_DEBUG, "dashboard: %s", text);
}

/* ---- starting and stopping ------------------------------------------------------- */

/* Resolves host and listens on it (*ret_fd); sets d's port, loopback and url. */
static tune_status listen_on(const char *host, int port, struct tune_dashboard *d, int *ret_fd,
                             tune_error *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    int gai = getaddrinfo(host, NULL, &hints, &ai);
    if (gai != 0)
        return tunep_error_set(err, TUNE_EINVAL, "dashboard: cannot resolve host '%s': %s", host,
                               gai_strerror(gai));
    int fd = -1, one = 1;
    if (ai->ai_family == AF_INET)
        ((struct sockaddr_in *)ai->ai_addr)->sin_port = htons((uint16_t)port);
    else if (ai->ai_family == AF_INET6)
        ((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons((uint16_t)port);
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return tunep_error_set(
            err, TUNE_EIO, "dashboard: cannot listen on %s port %d: %s%s", host, port, strerror(e),
            e == EADDRINUSE ? " (choose another port, or 0 for any free one)" : "");
    }
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char addr[INET6_ADDRSTRLEN] = "";
    getsockname(fd, (struct sockaddr *)&sa, &len);
    if (sa.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&sa;
        d->port = ntohs(s6->sin6_port);
        d->loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ||
                      (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) && s6->sin6_addr.s6_addr[12] == 127);
        inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof addr);
        snprintf(d->url, sizeof d->url, "http://[%s]:%d/", addr, d->port);
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&sa;
        d->port = ntohs(s4->sin_port);
        d->loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
        inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof addr);
        snprintf(d->url, sizeof d->url, "http://%s:%d/", addr, d->port);
    }
    freeaddrinfo(ai);
    *ret_fd = fd;
    return TUNE_OK;
}

int tune_dashboard_available(void)
{
    return 1;
}

tune_status tune_dashboard_start(const tune_dashboard_options *o, tune_dashboard **ret_dashboard,
                                 tune_error *err)
{
    tune_status rs = tunep_dash_options_check(o, err);
    if (rs)
        return rs;
    if (!ret_dashboard)
        return tunep_error_set(err, TUNE_EINVAL, "dashboard: ret_dashboard must not be NULL");
    *ret_dashboard = NULL;
    struct tune_dashboard *d = tunep_calloc(1, sizeof *d);
    if (!d)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    if ((rs = tunep_dash_views_open(o->experiment_dir, o->refresh_ms, &d->views, err)))
        goto fail;
    int fd = -1;
    if ((rs = listen_on(o->host, o->port, d, &fd, err)))
        goto fail;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (strchr(d->url, '['))
        flags |= MHD_USE_IPv6;
    d->mhd = MHD_start_daemon(flags, 0, NULL, NULL, answer, d, MHD_OPTION_LISTEN_SOCKET, fd,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
                              MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    if (!d->mhd) {
        close(fd);
        rs =
            tunep_error_set(err, TUNE_EIO, "dashboard: cannot start the HTTP server on %s", d->url);
        goto fail;
    }
    *ret_dashboard = d;
    return TUNE_OK;
fail:
    tune_dashboard_stop(d);
    return rs;
}

const char *tune_dashboard_url(const tune_dashboard *d)
{
    return d ? d->url : "";
}

int tune_dashboard_port(const tune_dashboard *d)
{
    return d ? d->port : 0;
}

int tune_dashboard_is_loopback(const tune_dashboard *d)
{
    return d ? d->loopback : 0;
}

void tune_dashboard_stop(tune_dashboard *d)
{
    if (!d)
        return;
    if (d->mhd)
        MHD_stop_daemon(d->mhd); /* joins its thread and closes the listening socket */
    tunep_dash_views_close(d->views);
    tunep_free(d);
}
