/*
 * tdemo: five functions, each built to stress one node of Intel's TopDown tree, so that a
 * TopDown-per-function report (`hrec record -W -g -- examples/topdown/tdemo`, then
 * `hrec report --td-level 2`) has something to teach:
 *
 *   chase    Backend Bound > Memory Bound: pointer chasing through 256 MiB, each load's
 *            address the value of the one before, in an order no prefetcher follows.
 *   divide   Backend Bound > Core Bound: a dependent chain of 64-bit integer divisions,
 *            each waiting for the divider and for the one before.
 *   branchy  Bad Speculation > Branch Mispredicts: a branch on random bits, taken or not
 *            with even odds, which no predictor learns.
 *   fetch    Frontend Bound: 512 jumps, each to the next 64-byte line of 32 KiB of code;
 *            one instruction per fetched line, so the frontend starves the backend.
 *   sum      Retiring: a sum over 16 KiB that stays in the L1 data cache, with nothing to
 *            wait for.
 *
 * main runs each for a fifth of the time given (seconds, default 2) and prints a checksum.
 *
 * Built from the repository root (scripts/make-demo-recordings --rebuild):
 *   gcc -O2 -g -fno-omit-frame-pointer -ffile-prefix-map=$PWD=. -Wl,--build-id \
 *       -o examples/topdown/tdemo examples/topdown/tdemo.c
 * The functions are noinline so each has its own row, and frame pointers make `-g` work.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

/* Elements of chase's buffer (4 bytes each): 256 MiB, larger than the last-level caches of
 * all but the largest servers. */
#define CHASE_LEN (64u << 20)
/* Elements of branchy's and sum's buffers. */
#define SMALL_LEN 4096u

/* GCC keeps no frame pointer in a leaf function that does not use the stack, even with
 * -fno-omit-frame-pointer: the kernel's frame-pointer walk from a sample in it would skip its
 * caller. One call to this at the start makes each workload function a non-leaf, with a
 * frame of its own, so `-g` shows main above it. */
NOINLINE void frame(void)
{
    __asm__ volatile("" ::: "memory");
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A random-looking walk: next[i] = (a * i + c) mod 2^26 is one cycle through every element
 * (a = 1 mod 4, c odd), written in one sequential pass; the step from one address to the
 * next changes every time, so no hardware prefetcher follows it. */
static uint32_t *chase_buffer(void)
{
    uint32_t *next = malloc(CHASE_LEN * sizeof *next);
    if (!next) {
        perror("tdemo: malloc");
        exit(1);
    }
    for (uint32_t i = 0; i < CHASE_LEN; i++)
        next[i] = (uint32_t)((2654435761u * (uint64_t)i + 12345u) & (CHASE_LEN - 1));
    return next;
}

/* Memory Bound: every load waits for the one before, and most miss every cache. */
NOINLINE uint32_t chase(const uint32_t *next, uint32_t at, uint64_t steps)
{
    frame();
    while (steps--)
        at = next[at];
    return at;
}

/* Core Bound: each division needs the quotient of the one before (the divider's latency,
 * over ten cycles, on every iteration). `d` comes from main at run time, so the compiler
 * cannot turn the division into a multiplication. */
NOINLINE uint64_t divide(uint64_t x, uint64_t d, uint64_t steps)
{
    frame();
    while (steps--)
        x = (x + 0x9e3779b97f4a7c15u) / d;
    return x;
}

/* Branch Mispredicts: the branch follows random bits. The empty asm in one arm keeps the
 * compiler from turning the branch into a conditional move. */
NOINLINE uint64_t branchy(const uint8_t *bits, uint64_t steps)
{
    uint64_t s = 0;
    frame();
    for (uint64_t i = 0; i < steps; i++) {
        uint8_t b = bits[i % SMALL_LEN];
        if (b & 1) {
            __asm__ volatile("" ::: "memory");
            s += b;
        } else {
            s ^= s << 1;
        }
    }
    return s;
}

/* Frontend Bound: 512 jumps, each to the start of the next 64-byte line; every fetch
 * brings one useful instruction, and the 32 KiB of code compete for the instruction
 * cache and the decoded-uop cache. */
NOINLINE uint64_t fetch(uint64_t rounds)
{
    uint64_t n = 0;
    frame();
    while (rounds--) {
        __asm__ volatile(".rept 512\n\t"
                         "jmp 1f\n\t"
                         ".p2align 6\n"
                         "1:\n\t"
                         ".endr\n" ::: "memory");
        n++;
    }
    return n;
}

/* Retiring: a sum over data in the L1 cache; the loads hit, the adds are independent of
 * memory, and the loop branch is always predicted. */
NOINLINE uint64_t sum(const uint32_t *v, uint64_t rounds)
{
    uint64_t s = 0;
    frame();
    while (rounds--)
        for (uint32_t i = 0; i < SMALL_LEN; i++)
            s += v[i];
    return s;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    if (!(seconds > 0)) {
        fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
        return 2;
    }
    double share = seconds / 5;
    uint32_t *next = chase_buffer();
    static uint8_t bits[SMALL_LEN];
    static uint32_t small[SMALL_LEN];
    uint64_t r = 88172645463325252u;
    for (uint32_t i = 0; i < SMALL_LEN; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17; /* xorshift64 */
        bits[i] = (uint8_t)r;
        small[i] = (uint32_t)(r >> 32);
    }
    uint64_t check = 0, d = 3 + (uint64_t)argc; /* d = 4 or more: known only at run time */
    uint32_t at = 0;
    double end;

    end = now() + share;
    while (now() < end)
        at = chase(next, at, 1 << 16);
    end = now() + share;
    while (now() < end)
        check += divide(check | 1, d, 1 << 16);
    end = now() + share;
    while (now() < end)
        check += branchy(bits, 1 << 18);
    end = now() + share;
    while (now() < end)
        check += fetch(1 << 10);
    end = now() + share;
    while (now() < end)
        check += sum(small, 1 << 6);

    printf("tdemo: checksum %llx\n", (unsigned long long)(check + at));
    free(next);
    return 0;
}
