#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/strmap.h"
#include "check.h"

#define KEYS 10000

static char keys[KEYS][16];

static void strmap_finds_every_key_and_misses_the_others(void)
{
    struct strmap m;
    CHECK_INT(strmap_init(&m, KEYS), 0);
    for (size_t i = 0; i < KEYS; i++) {
        snprintf(keys[i], sizeof keys[i], "/r/%05zu", i);
        CHECK_INT(strmap_put(&m, keys[i], strlen(keys[i]), i), 0);
    }
    size_t found = 0, missed = 0;
    for (size_t i = 0; i < KEYS; i++) {
        char other[16];
        found += strmap_get(&m, keys[i], strlen(keys[i])) == (long)i;
        snprintf(other, sizeof other, "/r/%05zu", i + KEYS);
        missed += strmap_get(&m, other, strlen(other)) == -1;
    }
    CHECK_INT(found, KEYS);
    CHECK_INT(missed, KEYS);
    /* A prefix or an extension of a key is another key. */
    CHECK_INT(strmap_get(&m, "/r/0000", 7), -1);
    CHECK_INT(strmap_get(&m, "/r/000001", 9), -1);
    CHECK_INT(strmap_get(&m, "/r/00001", 8), 1);
    strmap_cleanup(&m);
}

static void strmap_refuses_a_key_twice_and_past_its_size(void)
{
    struct strmap m;
    CHECK_INT(strmap_init(&m, 2), 0);
    CHECK_INT(strmap_put(&m, "/a", 2, 7), 0);
    CHECK_INT(strmap_put(&m, "/a", 2, 8), -EEXIST);
    CHECK_INT(strmap_get(&m, "/a", 2), 7);
    CHECK_INT(strmap_put(&m, "/b", 2, 1), 0);
    CHECK_INT(strmap_put(&m, "/c", 2, 2), -ENOSPC);
    CHECK_INT(strmap_get(&m, "/c", 2), -1);
    CHECK_INT(strmap_del(&m, "/a", 2), 0);
    CHECK_INT(strmap_del(&m, "/a", 2), -ENOENT);
    CHECK_INT(strmap_put(&m, "/c", 2, 2), 0);
    CHECK_INT(strmap_get(&m, "/c", 2), 2);
    strmap_cleanup(&m);
}

/* Deleting keys in any order leaves every other key reachable (the backward shift closes each
 * hole without cutting a probe run). */
static void strmap_deletes_keep_the_rest_reachable(void)
{
    struct strmap m;
    CHECK_INT(strmap_init(&m, KEYS), 0);
    for (size_t i = 0; i < KEYS; i++) {
        snprintf(keys[i], sizeof keys[i], "k%zu", i * 7919);
        CHECK_INT(strmap_put(&m, keys[i], strlen(keys[i]), i), 0);
    }
    size_t deleted = 0;
    for (size_t i = 0; i < KEYS; i += 3)
        deleted += strmap_del(&m, keys[i], strlen(keys[i])) == 0;
    size_t right = 0;
    for (size_t i = 0; i < KEYS; i++)
        right += strmap_get(&m, keys[i], strlen(keys[i])) == (i % 3 == 0 ? -1 : (long)i);
    CHECK_INT(deleted, (KEYS + 2) / 3);
    CHECK_INT(right, KEYS);
    CHECK_INT(m.count, KEYS - deleted);
    strmap_cleanup(&m);
}

/* A key's scope is part of it: the same bytes in two scopes are two keys, each with its value,
 * and the calls without _in are scope 0. A resize keeps every key and makes room for more. */
static void strmap_scopes_part_keys_and_resize_keeps_them(void)
{
    struct strmap m;
    CHECK_INT(strmap_init(&m, 4), 0);
    CHECK_INT(strmap_put_in(&m, 1, "a", 1, 10), 0);
    CHECK_INT(strmap_put_in(&m, 2, "a", 1, 20), 0);
    CHECK_INT(strmap_put(&m, "a", 1, 30), 0);
    CHECK_INT(strmap_put_in(&m, 2, "a", 1, 21), -EEXIST);
    CHECK_INT(strmap_get_in(&m, 1, "a", 1), 10);
    CHECK_INT(strmap_get_in(&m, 2, "a", 1), 20);
    CHECK_INT(strmap_get_in(&m, 0, "a", 1), 30);
    CHECK_INT(strmap_get_in(&m, 3, "a", 1), -1);
    CHECK_INT(strmap_put_in(&m, 3, "b", 1, 40), 0);
    CHECK_INT(strmap_put_in(&m, 4, "b", 1, 50), -ENOSPC);
    CHECK_INT(strmap_resize(&m, 1000), 0);
    static char scoped[900][8];
    for (uint32_t i = 0; i < 900; i++) {
        snprintf(scoped[i], sizeof scoped[i], "k%u", i % 30);
        CHECK_INT(strmap_put_in(&m, i / 30 + 10, scoped[i], strlen(scoped[i]), i), 0);
    }
    size_t found = 0;
    for (uint32_t i = 0; i < 900; i++)
        found += strmap_get_in(&m, i / 30 + 10, scoped[i], strlen(scoped[i])) == (long)i;
    CHECK_INT(found, 900);
    CHECK_INT(strmap_get_in(&m, 2, "a", 1), 20);
    CHECK_INT(strmap_get(&m, "a", 1), 30);
    CHECK_INT(m.count, 904);
    strmap_cleanup(&m);
}

int main(void)
{
    strmap_scopes_part_keys_and_resize_keeps_them();
    strmap_finds_every_key_and_misses_the_others();
    strmap_refuses_a_key_twice_and_past_its_size();
    strmap_deletes_keep_the_rest_reachable();
    return CHECK_DONE();
}
