/*
 * libFuzzer target for common/multipart against a known answer (mpform.h): the input is not a
 * body but the source of every choice mpform makes. Each byte read answers one choice (two
 * bytes when there are more than 256 options); past the end every choice is 0, so every input,
 * the empty one included, gives a valid form.
 *
 * In order: the form (boundary of 1-70 RFC 2046 characters, preamble, 1-8 parts named "data",
 * "token" and others, with and without filename, padding, bare-LF line ends, content dense in
 * CR, LF, '-' and delimiter near-misses, epilogue), a chunking of the whole body (whole, one
 * byte at a time, small, large, or cut around the delimiters), a cut point, and a chunking of
 * the cut body.
 *
 * Checked (a violation prints the difference and calls abort()): the whole body parses with no
 * error, every byte taken, the known part count, names and filenames, and the first "data"
 * part's exact size and bytes; a cut before the close delimiter's "--" ends gives
 * MP_ERR_TRUNCATED, a later cut the same answer as the whole body.
 *
 * Build: clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Icommon \
 *            -Itests/fuzz tests/fuzz/fuzz_multipart_oracle.c tests/fuzz/mpform.c \
 *            common/multipart.c -o fuzz_multipart_oracle
 */
#include "mpform.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
    const uint8_t *data;
    size_t size;
    size_t off;
};

static uint32_t next_byte(struct input *in)
{
    return in->off < in->size ? in->data[in->off++] : 0;
}

static uint32_t pick_input(void *ctx, uint32_t n)
{
    struct input *in = ctx;
    uint32_t v = next_byte(in);

    if (n > 256)
        v = v << 8 | next_byte(in);
    return v % n;
}

static void check(const struct mpform *f, size_t len, const struct mpform_plan *plan)
{
    char why[256];

    if (mpform_check(f, len, plan, why, sizeof(why)) != 0) {
        fprintf(stderr, "fuzz_multipart_oracle: boundary \"%s\", %zu-byte body: %s\n", f->boundary,
                f->len, why);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Large (about 150 KiB): static, not on the stack. Each run overwrites them. */
    static struct mpform form;
    static struct mpform_plan plan;
    struct input in = {data, size, 0};
    size_t cut;

    mpform_make(&form, pick_input, &in);
    mpform_plan(&plan, &form, form.len, pick_input, &in);
    check(&form, form.len, &plan);
    cut = form.len > 0 ? pick_input(&in, (uint32_t)form.len) : 0;
    mpform_plan(&plan, &form, cut, pick_input, &in);
    check(&form, cut, &plan);
    return 0;
}
