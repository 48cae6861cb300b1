/* Unit tests of base/utf8: what is well-formed UTF-8 and what is not. */
#include "base/utf8.h"

#include "check.h"

/* Well-formed: ASCII, 2-, 3- and 4-byte sequences up to U+10FFFF. Not: a lone continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, a sequence cut short, 0xc0, 0xff. */
static void utf8_valid_takes_well_formed_text_only(void)
{
    static const char *const good[] = {"",
                                       "abc",
                                       "\xc3\xa9",
                                       "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80",
                                       "\xf4\x8f\xbf\xbf",
                                       "\xed\x9f\xbf",
                                       "a\xc2\x80z"};
    static const char *const bad[] = {
        "\x80",         "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
        "\xf0\x90\x80", "\xc3",     "\xff",         "ok\xe2\x82"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK_INT(utf8_valid(good[i], strlen(good[i])), 1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(utf8_valid(bad[i], strlen(bad[i])), 0);
    /* A sequence longer than what is there to read is not taken. */
    CHECK_INT(utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 2), 0);
    CHECK_INT(utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 3), 3);
}

int main(void)
{
    utf8_valid_takes_well_formed_text_only();
    return CHECK_DONE();
}
