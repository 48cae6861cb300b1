/*
 * target: reading a request target as received, the same for every engine and for the control
 * API: its path with dot segments resolved, and its query parameters percent-decoded. Pure
 * functions over the caller's buffers; any thread.
 */
#ifndef SLOWSRV_TARGET_H
#define SLOWSRV_TARGET_H

#include <stddef.h>

/* The value of hexadecimal digit c (0 to 15), or -1. */
int target_hex_digit(char c);

/* The bytes before the path of an absolute-form target (RFC 9112 section 3.2.2:
 * "http://example.com:8080/echo?x" has 25, "HTTPS://h/" 10): its scheme, "://" and authority;
 * 0 for any other target. Only http and https are taken, in any case; a target with no path
 * after its authority ("http://h?x") is not taken either (0). */
size_t target_absolute_prefix(const char *t, size_t len);

/* Writes path[0..len) (starting with '/') with its dot segments resolved (RFC 3986 section
 * 5.2.4: "/a/./b" is "/a/b", "/a/../b" is "/b", never above "/") into out, which has room for
 * len bytes. Returns the length written. */
size_t target_path_resolve(const char *path, size_t len, char *out);

/* Finds query parameter `name` in query[0..len) (the part after '?'): the first whose
 * percent-decoded name is `name` exactly (case counts), and writes its percent-decoded value into
 * buf (buflen >= 1 bytes, NUL-terminated; what does not fit is left out). Returns the whole
 * decoded length, or -1 if there is no such parameter; a name with no '=' has the empty value. */
long target_query_param(const char *query, size_t len, const char *name, char *buf, size_t buflen);

#endif
