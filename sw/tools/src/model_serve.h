/* The device model's native data path (nanobpf-run --serve): the frames of the model's host and network
 * ports handled in C by the loaded program, exactly as nanobpf.devmodel.DeviceModel handles them without
 * PISA (docs/control.md "The native data path"), while the batch commands keep coming on standard input. */
#ifndef NANOBPF_MODEL_SERVE_H
#define NANOBPF_MODEL_SERVE_H

#include "ebpf.h"

struct model_serve_cfg {
    int host_fd, net_fd, up_fd; /* the ports (net_fd -1: none) and the socket to the Python model */
    unsigned max_frame;         /* PISA's params.max_frame: the egress refuses a DECRYPTED shim beyond it */
    long headroom;              /* bytes before the frame in its buffer, as --batch's run */
    const char *stats_map;      /* the program's per-CPU counter array (quic_stats) */
};

/* Run until standard input ends: each complete line goes to command (nanobpf-run's batch commands,
 * which call model_serve_command for the ones below), each frame of a port through the program.
 * Starts paused: the ports are read only after a "resume". Returns the exit status. */
int model_serve(struct ebpf_prog *prog, const struct model_serve_cfg *cfg, void (*command)(char *line));

/* The batch commands of the serve mode; prints the result line and returns 1, or returns 0 for a
 * command that is not one of them:
 *   resume    -> ok      (read the ports again: after a frame went up, or a program handover)
 *   counters  -> counters V0 .. V26 EGRESS_DROP   (the native path's counts since it started, by
 *                NANOBPF_CTRL_STAT_* index, then the egress's drops that are no device counter) */
int model_serve_command(int argc, char **argv);

#endif
