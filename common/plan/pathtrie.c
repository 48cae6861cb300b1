#include "plan/pathtrie.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* 1 if the segment s (n bytes) is "{name}". */
static int is_param(const char *s, size_t n)
{
    if (n < 3 || s[0] != '{' || s[n - 1] != '}')
        return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (!name_char(s[i]))
            return 0;
    return 1;
}

static int is_star(const char *s, size_t n)
{
    return n == 1 && s[0] == '*';
}

/* The end of the segment that starts at s, in a path that ends at end. */
static const char *segment_end(const char *s, const char *end)
{
    const char *slash = memchr(s, '/', (size_t)(end - s));
    return slash ? slash : end;
}

int pathtrie_kind_of(const char *path, char *why, size_t whylen)
{
    if (path[0] != '/') {
        snprintf(why, whylen, "path: must start with /");
        return -EINVAL;
    }
    const char *end = path + strlen(path);
    int params = 0, star = 0;
    size_t segments = 0;
    for (const char *s = path + 1;; s++) {
        const char *e = segment_end(s, end);
        size_t n = (size_t)(e - s);
        segments++;
        if (is_param(s, n)) {
            params = 1;
        } else if (memchr(s, '{', n) || memchr(s, '}', n)) {
            snprintf(why, whylen,
                     "path: braces go around a whole segment, {name} of letters, digits, _ or -, "
                     "as in /api/orders/{id}");
            return -EINVAL;
        } else if (is_star(s, n)) {
            if (e != end) {
                snprintf(why, whylen,
                         "path: * matches the rest, so only as the last segment, "
                         "as in /api/*");
                return -EINVAL;
            }
            star = 1;
        }
        if (e == end)
            break;
        s = e;
    }
    if ((params || star) && segments > PATHTRIE_SEGMENTS_MAX) {
        snprintf(why, whylen, "path: a template has at most %d segments", PATHTRIE_SEGMENTS_MAX);
        return -EINVAL;
    }
    return star ? PATHTRIE_WILDCARD : params ? PATHTRIE_TEMPLATE : PATHTRIE_EXACT;
}

/* A new node with no route and no child; its index, or 0 when out of memory. */
static uint32_t new_node(struct pathtrie *pt)
{
    if (pt->count == pt->cap) {
        size_t cap = pt->cap ? 2 * pt->cap : 16;
        if (cap > UINT32_MAX)
            return 0;
        struct pathtrie_node *n = realloc(pt->nodes, cap * sizeof *n);
        if (!n)
            return 0;
        pt->nodes = n;
        pt->cap = cap;
    }
    pt->nodes[pt->count] = (struct pathtrie_node){PATHTRIE_NONE, PATHTRIE_NONE, 0};
    return (uint32_t)pt->count++;
}

int pathtrie_init(struct pathtrie *pt)
{
    *pt = (struct pathtrie){0};
    if (strmap_init(&pt->edges, 16) != 0 || new_node(pt) != 0) {
        pathtrie_cleanup(pt);
        return -ENOMEM;
    }
    return 0;
}

void pathtrie_cleanup(struct pathtrie *pt)
{
    free(pt->nodes);
    pt->nodes = NULL;
    pt->count = pt->cap = pt->routes = 0;
    strmap_cleanup(&pt->edges);
}

/* The child of node by the literal segment s (n bytes), made if it is missing; 0 when out of
 * memory. */
static uint32_t literal_child(struct pathtrie *pt, uint32_t node, const char *s, size_t n)
{
    long at = strmap_get_in(&pt->edges, node, s, n);
    if (at > 0)
        return (uint32_t)at;
    if (pt->edges.count == pt->edges.max && strmap_resize(&pt->edges, 2 * pt->edges.max) != 0)
        return 0;
    uint32_t child = new_node(pt);
    if (child && strmap_put_in(&pt->edges, node, s, n, child) != 0)
        return 0;
    return child;
}

int pathtrie_add(struct pathtrie *pt, const char *path, size_t value, size_t *clash)
{
    char why[8];
    int kind = pathtrie_kind_of(path, why, sizeof why);
    if (kind != PATHTRIE_TEMPLATE && kind != PATHTRIE_WILDCARD)
        return -EINVAL;
    const char *end = path + strlen(path);
    uint32_t node = 0;
    size_t *slot = NULL;
    for (const char *s = path + 1;; s++) {
        const char *e = segment_end(s, end);
        size_t n = (size_t)(e - s);
        if (is_star(s, n)) {
            slot = &pt->nodes[node].wild;
            break;
        }
        uint32_t next;
        if (is_param(s, n)) {
            next = pt->nodes[node].param;
            if (!next && (next = new_node(pt)) != 0)
                pt->nodes[node].param = next;
        } else {
            next = literal_child(pt, node, s, n);
        }
        if (!next)
            return -ENOMEM;
        node = next;
        if (e == end) {
            slot = &pt->nodes[node].route;
            break;
        }
        s = e;
    }
    if (*slot != PATHTRIE_NONE) {
        if (clash)
            *clash = *slot;
        return -EEXIST;
    }
    *slot = value;
    pt->routes++;
    return 0;
}

struct walk {
    const struct pathtrie *pt;
    const char *end; /* of the request's path */
    long wild;       /* the first wildcard met, the best one: -1 until then */
};

/* The template under `node` that matches the path from the segment at seg (NULL: the path has
 * ended), or -1. Tries the literal child, then the {name} child; the node's own "*" is kept in
 * w->wild if none was met before, for when no template matches at all. The first wildcard met
 * is the best: every one met later has a {name} or a "*" where it had a literal, or a "*" where
 * it had a {name}. */
static long walk(struct walk *w, uint32_t node, const char *seg)
{
    const struct pathtrie_node *n = &w->pt->nodes[node];
    if (seg) {
        const char *e = segment_end(seg, w->end);
        const char *next = e == w->end ? NULL : e + 1;
        long child = strmap_get_in(&w->pt->edges, node, seg, (size_t)(e - seg));
        long r = child > 0 ? walk(w, (uint32_t)child, next) : -1;
        if (r < 0 && n->param && e > seg)
            r = walk(w, n->param, next);
        if (r >= 0)
            return r;
    } else if (n->route != PATHTRIE_NONE) {
        return (long)n->route;
    }
    if (n->wild != PATHTRIE_NONE && w->wild < 0)
        w->wild = (long)n->wild;
    return -1;
}

long pathtrie_match(const struct pathtrie *pt, const char *path, size_t len)
{
    if (!pt->routes || len == 0 || path[0] != '/')
        return -1;
    struct walk w = {pt, path + len, -1};
    long r = walk(&w, 0, path + 1);
    return r >= 0 ? r : w.wild;
}
