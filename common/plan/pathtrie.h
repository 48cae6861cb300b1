/*
 * pathtrie: route paths with templates, and the one route that answers a request path.
 *
 * A path is split into segments at '/' (the leading one dropped: "/" is one empty segment). A
 * segment that is exactly "{name}" (name: letters, digits, '_' and '-') matches any one non-empty
 * segment; a last segment that is exactly "*" matches the rest of the path, zero or more
 * segments ("/api/\*" matches "/api", "/api/" and "/api/a/b"); every other segment matches only
 * itself. A path with neither is exact, one with a "{name}" and no "*" a template, one that ends
 * in "*" a wildcard.
 *
 * Precedence, for a path that several routes match: an exact path (the route table's hash, not
 * this trie) beats a template, which beats a wildcard. Between two templates, or two wildcards,
 * compare segment by segment from the left: at the first segment where one has a literal and
 * the other a {name} (or a "*"), the literal wins, and a {name} beats a "*". So the longest
 * literal prefix wins, and on a tie the same rule decides from the first segment where they part.
 * Two routes that this cannot order have the same segments but for the names in braces
 * ("/a/{x}" and "/a/{y}"): the trie refuses the second (PATHTRIE_ADD returns -EEXIST).
 *
 * The trie holds the templates and wildcards: a node per distinct prefix, names ignored, each
 * literal edge in one hash table keyed by (parent node, segment). A lookup walks the request's
 * segments, trying at each node the literal child, then the {name} child, then the node's own
 * "*", and backs up when a branch ends without a route; it visits each node at most once, and
 * only nodes whose prefix matches the request's, so its cost follows the path's segments, not
 * the number of routes.
 *
 * Paths are borrowed: the caller keeps them alive and unchanged while the trie lives. Building
 * needs one writer; pathtrie_match on a trie nobody changes may run on any number of threads.
 */
#ifndef SLOWSRV_PATHTRIE_H
#define SLOWSRV_PATHTRIE_H

#include <stddef.h>
#include <stdint.h>

#include "base/strmap.h"

/* Most segments of a template or wildcard path (the lookup recurses once a segment). */
#define PATHTRIE_SEGMENTS_MAX 64

enum pathtrie_kind {
    PATHTRIE_EXACT = 0, /* no {name}, no trailing "*": matched by the route table's hash */
    PATHTRIE_TEMPLATE,  /* a {name} segment, no trailing "*" */
    PATHTRIE_WILDCARD,  /* ends in the segment "*" */
};

/* The kind of path, or -EINVAL with "path: <why>" in why for a path the rules above refuse: a
 * '{' or '}' that is not a whole "{name}" segment, a bad name, a "*" segment not last, a template
 * of more than PATHTRIE_SEGMENTS_MAX segments. A '*' inside a longer segment is a literal. */
int pathtrie_kind_of(const char *path, char *why, size_t whylen);

struct pathtrie_node {
    size_t route;   /* the template ending here, or PATHTRIE_NONE */
    size_t wild;    /* the wildcard whose "*" follows this node, or PATHTRIE_NONE */
    uint32_t param; /* the child by a {name} segment, or 0 (the root is nobody's child) */
};

#define PATHTRIE_NONE ((size_t)-1)

struct pathtrie {
    struct pathtrie_node *nodes; /* count of them, room for cap; [0] is the root */
    size_t count, cap;
    struct strmap edges; /* (parent node, literal segment) -> child node */
    size_t routes;       /* templates and wildcards added */
};

/* An empty trie. Returns 0 or -ENOMEM. */
int pathtrie_init(struct pathtrie *pt);

/* Frees what the trie holds (not the paths). */
void pathtrie_cleanup(struct pathtrie *pt);

/* Adds the template or wildcard `path` (pathtrie_kind_of says which; an exact path is -EINVAL)
 * with `value` (below PATHTRIE_NONE). Returns 0; -EEXIST if a route of the same segments but for
 * its names is there already, its value in *clash; -EINVAL; -ENOMEM. The trie is unchanged on
 * failure but for nodes that no route uses. */
int pathtrie_add(struct pathtrie *pt, const char *path, size_t value, size_t *clash);

/* The value of the route that answers `path` (len bytes, the request's decoded path without
 * the query) by the precedence above, or -1 if none matches. */
long pathtrie_match(const struct pathtrie *pt, const char *path, size_t len);

#endif
