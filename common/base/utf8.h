/*
 * utf8: well-formed UTF-8 (RFC 3629), for what the server writes out as JSON (the access log) and
 * what it takes in as JSON (the control API's bodies). Pure functions; any thread.
 */
#ifndef SLOWSRV_UTF8_H
#define SLOWSRV_UTF8_H

#include <stddef.h>

/* Bytes of the well-formed UTF-8 sequence of at least 2 bytes at s (no overlong form, no
 * surrogate, at most U+10FFFF), of which avail are there to read; 0 if there is none. Stops
 * reading at the first byte that does not continue the sequence. */
size_t utf8_seq_len(const unsigned char *s, size_t avail);

/* 1 if s[0..n) is well-formed UTF-8 throughout. */
int utf8_valid(const char *s, size_t n);

#endif
