/*
 * host.c - the host name and IP address reports are stamped with (host.h).
 * Both are looked up once per process: the first report pays for it, and a
 * forked isolation child inherits the answer.
 */
#include "engine/host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char host_name[256];
static char host_ip[INET_ADDRSTRLEN];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

/* The source address the kernel would use towards a public address; 0 when there is no route. */
static int routed_ip(char *out, size_t size)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(80)};
    inet_pton(AF_INET, "8.8.8.8", &to.sin_addr); /* connect() on UDP sends nothing */
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    int ok = connect(fd, (const struct sockaddr *)&to, sizeof to) == 0 &&
             getsockname(fd, (struct sockaddr *)&me, &len) == 0 && me.sin_family == AF_INET &&
             me.sin_addr.s_addr != htonl(INADDR_ANY) &&
             inet_ntop(AF_INET, &me.sin_addr, out, (socklen_t)size) != NULL;
    close(fd);
    return ok;
}

/* The first IPv4 address of an interface that is up and not loopback; 0 when none. */
static int interface_ip(char *out, size_t size)
{
    struct ifaddrs *all = NULL;
    int ok = 0;
    if (getifaddrs(&all) != 0)
        return 0;
    for (const struct ifaddrs *a = all; a && !ok; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP) ||
            (a->ifa_flags & IFF_LOOPBACK))
            continue;
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)a->ifa_addr;
        ok = inet_ntop(AF_INET, &in->sin_addr, out, (socklen_t)size) != NULL;
    }
    freeifaddrs(all);
    return ok;
}

static void host_find(void)
{
    if (gethostname(host_name, sizeof host_name) != 0)
        host_name[0] = '\0';
    host_name[sizeof host_name - 1] = '\0';
    if (!routed_ip(host_ip, sizeof host_ip) && !interface_ip(host_ip, sizeof host_ip))
        strcpy(host_ip, "127.0.0.1");
}

const char *tunep_host_name(void)
{
    pthread_once(&host_once, host_find);
    return host_name;
}

const char *tunep_host_ip(void)
{
    pthread_once(&host_once, host_find);
    return host_ip;
}
