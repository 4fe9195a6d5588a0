// population-worker: one of the processes export-bench starts so that the exporters it measures
// have a machine of 100, 400 or 1000 more processes to report. export-bench compiles it with cc
// into its scratch directory and runs it under several names (symbolic links, so that the kernel's
// process name, comm, differs and grouping by name has work):
//
//   population-worker KIB
//
// It allocates KIB KiB on its heap and writes every page (dirty, private memory, as a small
// real program holds), then writes one byte to file descriptor 3 (the harness's readiness
// pipe) and closes it, and waits for a signal; export-bench ends it with SIGKILL through a pidfd.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s KIB\n", argv[0]);
        return 2;
    }
    char *end;
    long kib = strtol(argv[1], &end, 10);
    if (*end != '\0' || kib < 0 || kib > (1L << 20)) {
        fprintf(stderr, "%s: KIB must be 0 to 1048576, not '%s'\n", argv[0], argv[1]);
        return 2;
    }
    size_t bytes = (size_t)kib * 1024;
    volatile char *block = malloc(bytes ? bytes : 1);
    if (!block) {
        fprintf(stderr, "%s: cannot allocate %ld KiB\n", argv[0], kib);
        return 1;
    }
    for (size_t i = 0; i < bytes; i += 4096) block[i] = (char)(i >> 12 | 1);
    if (write(3, "r", 1) != 1) {
        perror("population-worker: write to the readiness pipe (fd 3)");
        return 1;
    }
    close(3);
    for (;;) pause();
}
