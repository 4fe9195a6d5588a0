#ifndef MEMORYPRESSURE_CBENCHSUPPORT_H
#define MEMORYPRESSURE_CBENCHSUPPORT_H
// What the benchmark harnesses need from C that Swift cannot call: prctl is variadic.

// prctl(PR_SET_CHILD_SUBREAPER, 1): processes orphaned below this one (the backends of a
// postmaster that was killed) become its children, so that it reaps them instead of leaving
// them to PID 1 (which, in a container, may never reap them). 0, or -1 with errno.
int bench_become_child_subreaper(void);

#endif
