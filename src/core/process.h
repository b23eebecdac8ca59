/* Whether a process of this host still runs, or is stopped: used after a
 * rank was lost to tell the dead or frozen process of a job from those only
 * waiting for it. */
#ifndef GS_PROCESS_H
#define GS_PROCESS_H

/* 1 when process `pid` of this host exists and is not a zombie, else 0
 * (reads /proc/PID/stat; Linux). */
int gs_process_alive(int pid);

/* 1 when process `pid` of this host is stopped (SIGSTOP, job control or a
 * debugger: state T or t in /proc/PID/stat), else 0. */
int gs_process_stopped(int pid);

#endif
