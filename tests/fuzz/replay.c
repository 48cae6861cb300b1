/*
 * A plain driver for the fuzz targets, for any compiler (gcc has no libFuzzer): runs
 * LLVMFuzzerTestOneInput() once on each file named, and on each regular file of each directory
 * named (in name order, dot files skipped), as libFuzzer does when given files. Each input is an
 * exact-size heap copy, so a sanitizer build catches reads past its end. LLVMFuzzerInitialize()
 * runs first when the target has one.
 *
 * Usage: replay_<name> FILE|DIR...
 * Prints how many inputs ran. Exit status 0 when every input ran; 1 when a file cannot be read,
 * is over REPLAY_MAX_INPUT bytes, or when no input at all was found (an empty corpus must not
 * pass). A target's failed check ends the process (abort or trap); the input being run is named on
 * stderr first when the signal can be caught.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLAY_MAX_INPUT (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* The input being run, for the crash message; written only between inputs. */
static const char *volatile current;

static void on_crash(int sig)
{
    static const char head[] = "replay: crashed on input ";
    const char *name = current;

    if (write(STDERR_FILENO, head, sizeof(head) - 1) < 0 ||
        write(STDERR_FILENO, name ? name : "(none)", strlen(name ? name : "(none)")) < 0 ||
        write(STDERR_FILENO, "\n", 1) < 0) {
        /* Nothing more can be said from a signal handler. */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Runs one file; returns 0, or -1 when it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long size;
    int rc = -1;

    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "replay: cannot size %s\n", path);
        fclose(f);
        return -1;
    }
    if ((unsigned long)size > REPLAY_MAX_INPUT) {
        fprintf(stderr, "replay: %s: %ld bytes, over the %u-byte limit\n", path, size,
                REPLAY_MAX_INPUT);
        fclose(f);
        return -1;
    }
    /* Exactly size bytes (one for an empty input, as malloc(0) may give NULL). */
    buf = malloc(size ? (size_t)size : 1);
    if (buf && fread(buf, 1, (size_t)size, f) == (size_t)size) {
        current = path;
        LLVMFuzzerTestOneInput(buf, (size_t)size);
        current = NULL;
        rc = 0;
    }
    if (rc)
        fprintf(stderr, "replay: cannot read %s\n", path);
    free(buf);
    fclose(f);
    return rc;
}

static int not_dot(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

/* Runs every regular file of dir; adds to *ran; returns 0 or -1. */
static int run_dir(const char *dir, unsigned *ran)
{
    struct dirent **list;
    int n = scandir(dir, &list, not_dot, alphasort);
    int rc = 0;

    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s\n", dir);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        int len = snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);

        if (len < 0 || (size_t)len >= sizeof(path)) {
            fprintf(stderr, "replay: path too long in %s\n", dir);
            rc = -1;
        } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) == 0)
                ++*ran;
            else
                rc = -1;
        }
        free(list[i]);
    }
    free(list);
    return rc;
}

int main(int argc, char **argv)
{
    static const int sigs[] = {SIGABRT, SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGTRAP};
    unsigned ran = 0;
    int rc = 0;

    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        signal(sigs[i], on_crash);
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;

        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: cannot find %s\n", argv[i]);
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &ran) != 0)
                rc = 1;
        } else if (run_file(argv[i]) == 0) {
            ran++;
        } else {
            rc = 1;
        }
    }
    printf("replay: %u inputs ran\n", ran);
    if (ran == 0) {
        fprintf(stderr, "replay: no input found (usage: %s FILE|DIR...)\n", argv[0]);
        rc = 1;
    }
    return rc;
}
