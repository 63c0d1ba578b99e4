/*
 * host.h - where trials run, for the store's pid, hostname and node_ip.
 */
#ifndef TUNE_ENGINE_HOST_H
#define TUNE_ENGINE_HOST_H

/* This machine's host name (gethostname()); "" when it has none. Found once, never NULL. */
const char *tunep_host_name(void);
/*
 * This machine's IPv4 address as Ray's node_ip is found: the source address
 * of a route to a public address (a UDP socket connected to it; nothing is
 * sent), else the first non-loopback interface's, else "127.0.0.1". Found
 * once, never NULL.
 */
const char *tunep_host_ip(void);

#endif /* TUNE_ENGINE_HOST_H */
