#include "base/strmap.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a over the bytes, then a 64-bit finaliser (splitmix64's): FNV alone leaves the low bits,
 * which pick the slot, too alike for keys that differ only in their last characters
 * ("/r/00017", "/r/00018"). */
static uint64_t hash_of(uint32_t scope, const char *key, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)scope << 16);
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

int strmap_init(struct strmap *m, size_t max_keys)
{
    size_t n = 8;
    while (n < 2 * max_keys) {
        if (n > SIZE_MAX / 4 / sizeof *m->slots)
            return -ENOMEM;
        n *= 2;
    }
    m->slots = calloc(n, sizeof *m->slots);
    if (!m->slots)
        return -ENOMEM;
    m->mask = n - 1;
    m->count = 0;
    m->max = max_keys;
    return 0;
}

/* The slot holding (scope, key), or the empty slot where a probe for it ends. */
static size_t probe(const struct strmap *m, uint32_t scope, const char *key, size_t len, uint32_t h)
{
    size_t i = h & m->mask;
    for (;;) {
        const struct strmap_slot *s = &m->slots[i];
        if (!s->key ||
            (s->hash == h && s->len == len && s->scope == scope && memcmp(s->key, key, len) == 0))
            return i;
        i = (i + 1) & m->mask;
    }
}

int strmap_resize(struct strmap *m, size_t max_keys)
{
    struct strmap bigger;
    if (max_keys < m->count)
        max_keys = m->count;
    if (strmap_init(&bigger, max_keys) != 0)
        return -ENOMEM;
    for (size_t i = 0; m->slots && i <= m->mask; i++) {
        const struct strmap_slot *s = &m->slots[i];
        if (s->key)
            bigger.slots[probe(&bigger, s->scope, s->key, s->len, s->hash)] = *s;
    }
    bigger.count = m->count;
    free(m->slots);
    *m = bigger;
    return 0;
}

void strmap_cleanup(struct strmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->mask = 0;
    m->count = m->max = 0;
}

long strmap_get_in(const struct strmap *m, uint32_t scope, const char *key, size_t len)
{
    if (!m->slots || len > UINT32_MAX)
        return -1;
    const struct strmap_slot *s =
        &m->slots[probe(m, scope, key, len, (uint32_t)hash_of(scope, key, len))];
    return s->key ? (long)s->value : -1;
}

long strmap_get(const struct strmap *m, const char *key, size_t len)
{
    return strmap_get_in(m, 0, key, len);
}

int strmap_put_in(struct strmap *m, uint32_t scope, const char *key, size_t len, size_t value)
{
    if (len > UINT32_MAX || value > LONG_MAX)
        return -EINVAL;
    uint32_t h = (uint32_t)hash_of(scope, key, len);
    struct strmap_slot *s = &m->slots[probe(m, scope, key, len, h)];
    if (s->key)
        return -EEXIST;
    if (m->count == m->max)
        return -ENOSPC;
    *s = (struct strmap_slot){key, (uint32_t)len, h, scope, value};
    m->count++;
    return 0;
}

int strmap_put(struct strmap *m, const char *key, size_t len, size_t value)
{
    return strmap_put_in(m, 0, key, len, value);
}

int strmap_del(struct strmap *m, const char *key, size_t len)
{
    if (!m->slots || len > UINT32_MAX)
        return -ENOENT;
    size_t hole = probe(m, 0, key, len, (uint32_t)hash_of(0, key, len));
    if (!m->slots[hole].key)
        return -ENOENT;
    /* Backward shift: move up each later key of the run whose home is not between the hole and
     * it, so that every key stays reachable from its home without a gap. */
    for (size_t i = (hole + 1) & m->mask; m->slots[i].key; i = (i + 1) & m->mask) {
        size_t home = m->slots[i].hash & m->mask;
        if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole].key = NULL;
    m->count--;
    return 0;
}
