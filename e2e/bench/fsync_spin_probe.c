/* fdatasync latency with and without a thread spinning on the same CPU.
 *
 * docs/durability.md ("Spinning while a sync is in flight") quotes this probe: on a virtual
 * machine, a CPU that halts while the disk works makes the fdatasync's completion slower.
 *
 *   cc -O2 -pthread -o /tmp/fsync_spin_probe e2e/bench/fsync_spin_probe.c
 *   cd DIR_ON_THE_DISK && /tmp/fsync_spin_probe 3000 -2 0 50   # no spinner
 *   cd DIR_ON_THE_DISK && /tmp/fsync_spin_probe 3000  0 0 50   # spinner on CPU 0 (same CPU)
 *   cd DIR_ON_THE_DISK && /tmp/fsync_spin_probe 3000  1 0 50   # spinner on CPU 1
 *
 * Arguments: COUNT SPIN_CPU (-2: no spinner) SYNC_CPU GAP_US. Each sample overwrites 256 B of a
 * pre-filled 4 MiB file (probe.dat in the current directory) and fdatasyncs it; prints p50/p90/p99.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop = 0;
static int spin_cpu = -1;

static void pin(pthread_t thread, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(thread, sizeof set, &set);
}

static void *spinner(void *arg) {
    (void)arg;
    if (spin_cpu >= 0) pin(pthread_self(), spin_cpu);
    while (!stop) __asm__ volatile("pause");
    return 0;
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s COUNT SPIN_CPU SYNC_CPU GAP_US\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), gap = atoi(argv[4]);
    spin_cpu = atoi(argv[2]);
    if (n <= 0) return 2;
    pin(pthread_self(), atoi(argv[3]));
    int fd = open("probe.dat", O_RDWR | O_CREAT, 0644);
    if (fd < 0) { perror("open probe.dat"); return 1; }
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < 1024; i++)
        if (pwrite(fd, buf, sizeof buf, i * 4096L) != (ssize_t)sizeof buf) { perror("pwrite"); return 1; }
    if (fsync(fd) != 0) { perror("fsync"); return 1; }
    pthread_t thread;
    if (spin_cpu != -2) pthread_create(&thread, 0, spinner, 0);
    double *lat = malloc(n * sizeof(double));
    if (!lat) return 1;
    for (int i = 0; i < n; i++) {
        double started = now_us();
        if (pwrite(fd, buf, 256, (i % 1000) * 256L) != 256 || fdatasync(fd) != 0) { perror("write/sync"); return 1; }
        lat[i] = now_us() - started;
        usleep(gap);
    }
    stop = 1;
    if (spin_cpu != -2) pthread_join(thread, 0);
    qsort(lat, n, sizeof(double), by_value);
    printf("spinner=%d sync_cpu=%s gap=%dus p50=%.0f p90=%.0f p99=%.0f\n", spin_cpu, argv[3], gap, lat[n / 2],
           lat[n * 9 / 10], lat[n * 99 / 100]);
    close(fd);
    unlink("probe.dat");
    return 0;
}
