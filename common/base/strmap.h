/*
 * strmap: a hash table from strings (bytes and a length) to indexes, for lookups whose time does
 * not depend on how many keys it holds (the route table's paths, the service's slots).
 *
 * Open addressing with linear probing, kept at most half full, and deletion by backward shift (no
 * tombstones), so a lookup stops at the first empty slot after a probe or two whatever the count.
 * The number of keys is fixed when the map is made: strmap_put past it returns -ENOSPC and the
 * map never grows.
 *
 * A key may carry a scope, a number that is part of the key: ("a", scope 1) and ("a", scope 2)
 * are two keys (the path trie's edges: the segment under its parent node). The calls without
 * _in use scope 0.
 *
 * Keys are borrowed: the caller keeps a key's bytes alive and unchanged while it is in the map.
 * Writes need one writer and no reader at the same time; strmap_get calls on a map nobody writes
 * may run on any number of threads.
 */
#ifndef SLOWSRV_STRMAP_H
#define SLOWSRV_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap_slot {
    const char *key; /* NULL: empty */
    uint32_t len;
    uint32_t hash; /* the key's hash, compared before the bytes */
    uint32_t scope;
    size_t value;
};

struct strmap {
    struct strmap_slot *slots;
    size_t mask; /* slots - 1: a power of two less one */
    size_t count, max;
};

/* Makes an empty map for up to max_keys keys (its slots: the power of two at least twice that).
 * Returns 0, or -ENOMEM with nothing to free. */
int strmap_init(struct strmap *m, size_t max_keys);

/* Frees the slots (not the keys). The map is empty and unusable until strmap_init. */
void strmap_cleanup(struct strmap *m);

/* The value of key (len bytes), or -1 if the map does not hold it. */
long strmap_get(const struct strmap *m, const char *key, size_t len);

/* Adds key (len bytes, borrowed) with value (at most LONG_MAX). Returns 0; -EEXIST if the map
 * holds the key (its value unchanged); -ENOSPC if it holds max_keys keys already; -EINVAL for a
 * key over 4 GiB or a value over LONG_MAX. */
int strmap_put(struct strmap *m, const char *key, size_t len, size_t value);

/* Removes key (len bytes). Returns 0, or -ENOENT if the map does not hold it. */
int strmap_del(struct strmap *m, const char *key, size_t len);

/* strmap_get and strmap_put of the key (scope, key). */
long strmap_get_in(const struct strmap *m, uint32_t scope, const char *key, size_t len);
int strmap_put_in(struct strmap *m, uint32_t scope, const char *key, size_t len, size_t value);

/* Makes room for max_keys keys (at least the count it holds), moving every key to new slots.
 * Returns 0, or -ENOMEM with the map unchanged. */
int strmap_resize(struct strmap *m, size_t max_keys);

#endif
