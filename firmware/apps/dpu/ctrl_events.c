/* EVENTS: an event map (RINGBUF, PERF_EVENT_ARRAY) of the attached program drained for the host (the
 * model's _do_events; docs/control.md). The data cores append records to the map's ring in shared memory
 * while they run the program (firmware/ebpf/maps.c); core 0 is the ring's one reader: it takes the
 * oldest records, whole, as many as the response holds (at most the request's max), and the count of
 * records the ring dropped since the last EVENTS. Taken records are gone: a response lost on the way is
 * answered again from the replay cache when the host retransmits, never drained twice. */
#include <string.h>
#include "ctrl.h"

_Static_assert(NANOBPF_EVENTS_RESP_SIZE + NANOBPF_EVENT_REC_SIZE + NANOBPF_CTRL_MAX_EVENT <= NANOBPF_CTRL_MAX_BODY,
               "the largest record fits one response");
_Static_assert(NANOBPF_CTRL_MAX_EVENT == NANOBPF_EVENT_MAX, "the protocol names the runtime's limit");

int ctrl_events(const uint8_t *b, unsigned len, struct ctrl_reply *r) {
    if (len != NANOBPF_EVENTS_REQ_SIZE)
        return ctrl_refuse(r, NANOBPF_CTRL_ST_BAD_LENGTH, "events_req: %u bytes, expected %u", len, NANOBPF_EVENTS_REQ_SIZE);
    char name[NANOBPF_CTRL_NAME_LEN + 1];
    memcpy(name, b, NANOBPF_CTRL_NAME_LEN);
    name[NANOBPF_CTRL_NAME_LEN] = 0;
    unsigned max = ctrl_be16(b + NANOBPF_CTRL_NAME_LEN);
    if (ctrl_be16(b + NANOBPF_CTRL_NAME_LEN + 2)) return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "events_req: reserved not zero");
    const struct ebpf_prog *prog = dpu_prog_current();
    if (!prog) return ctrl_refuse(r, NANOBPF_CTRL_ST_NO_PROG, "no program attached");
    struct ebpf_map *m = ctrl_prog_map(prog, name);
    if (!m) return ctrl_no_map(prog, name, r);
    if (!ebpf_map_is_event(m))
        return ctrl_refuse(r, NANOBPF_CTRL_ST_INVALID, "map %s is not an event map (RINGBUF, PERF_EVENT_ARRAY)", name);
    static uint8_t data[NANOBPF_EVENT_MAX];
    unsigned used = NANOBPF_EVENTS_RESP_SIZE, count = 0;
    uint32_t lost = ebpf_event_take_lost(m), index;
    int n;
    while ((!max || count < max) && (n = ebpf_event_peek(m, data, &index)) >= 0 &&
           used + NANOBPF_EVENT_REC_SIZE + (unsigned)n <= NANOBPF_CTRL_MAX_BODY) {
        uint8_t *rec = r->body + used;
        ctrl_put16(rec, (uint32_t)n), ctrl_put16(rec + 2, 0), ctrl_put32(rec + 4, index);
        memcpy(rec + NANOBPF_EVENT_REC_SIZE, data, (size_t)n);
        used += NANOBPF_EVENT_REC_SIZE + (unsigned)n;
        count++;
        ebpf_event_pop(m);
    }
    ctrl_put32(r->body, lost), ctrl_put32(r->body + 4, ebpf_event_pending(m));
    ctrl_put16(r->body + 8, count), ctrl_put16(r->body + 10, 0);
    r->len = (uint16_t)used;
    return 0;
}
