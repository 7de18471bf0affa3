// Cycle-level benchmark harness of nanobpf.coresel.Dispatch (core select + reorder unit), driven
// by nanobpf-bench-dispatch (sw/python/nanobpf/bench/dispatch.py). The RTL is the real Verilated design; the cores are emulated:
// a core pops a descriptor when idle, works for the packet's service time, then pushes its
// completion. Input (stdin):
//   policy bound n
//   arrival_cycle service_cycles hash      (n lines, arrivals non-decreasing)
// Output (stdout), one line per packet in arrival order:
//   arrival dispatch core start complete release
// A packet waits in an input FIFO (the reassembly buffer's descriptor queue) until the core select
// takes it; slots come from a free list and go back when the reorder unit releases the packet.
#include <cstdint>
#include <cstdio>
#include <deque>
#include <vector>
#include "VDispatch.h"
#include "nanobpf_soc.h"  // pkt_desc / pkt_comp layouts, generated from hw/defs/soc.toml
#include "verilated.h"

#ifndef QUEUES
#error "build with -DQUEUES=<cores> -DSLOTS=<slots>"
#endif

struct Pkt { uint64_t arrival, service, hash, dispatch = 0, core = 0, start = 0, complete = 0, release = 0; };
struct Core { bool busy = false, done = false; uint64_t until = 0, slot = 0; };

struct Ports {
  CData *pop_valid, *pop_ready, *comp_valid, *comp_ready;
  QData *pop_bits, *comp_bits;
};

int main(int argc, char **argv) {
  Verilated::commandArgs(argc, argv);
  unsigned policy, bound;
  size_t n;
  if (scanf("%u %u %zu", &policy, &bound, &n) != 3) { fprintf(stderr, "dispatch_bench: bad header\n"); return 2; }
  std::vector<Pkt> pk(n);
  for (auto &p : pk)
    if (scanf("%lu %lu %lu", &p.arrival, &p.service, &p.hash) != 3) { fprintf(stderr, "dispatch_bench: bad packet line\n"); return 2; }
  auto *d = new VDispatch;
  Ports ports[QUEUES];
#define PORT(i) if (i < QUEUES) ports[i] = {&d->io_cores_##i##_valid, &d->io_cores_##i##_ready, \
    &d->io_comp_##i##_valid, &d->io_comp_##i##_ready, &d->io_cores_##i##_bits, &d->io_comp_##i##_bits};
#if QUEUES > 0
  PORT(0)
#endif
#if QUEUES > 1
  PORT(1)
#endif
#if QUEUES > 2
  PORT(2)
#endif
#if QUEUES > 3
  PORT(3)
#endif
#if QUEUES > 4
  PORT(4)
#endif
#if QUEUES > 5
  PORT(5)
#endif
#if QUEUES > 6
  PORT(6)
#endif
#if QUEUES > 7
  PORT(7)
#endif
  auto tick = [&] { d->clock = 1; d->eval(); d->clock = 0; d->eval(); };
  d->reset = 1; d->io_sched_policy = policy; d->io_sched_bound = bound; d->io_order_timeout = 0; d->io_order_orderConn = 0;
  d->io_out_ready = 1;
  for (int i = 0; i < 4; i++) tick();
  d->reset = 0;
  std::deque<uint64_t> freeSlots;
  for (uint64_t s = 0; s < SLOTS; s++) freeSlots.push_back(s);
  std::vector<int64_t> bySlot(SLOTS, -1);
  std::deque<size_t> waiting;  // arrived, not yet taken by the core select
  Core cores[QUEUES];
  size_t next = 0, released = 0;
  int64_t inSlot = -1;
  uint64_t cycle = 0;
  while (released < n) {
    while (next < n && pk[next].arrival <= cycle) waiting.push_back(next++);
    // ---- drive
    if (inSlot < 0 && !waiting.empty() && !freeSlots.empty()) {
      inSlot = freeSlots.front(); freeSlots.pop_front();
      bySlot[inSlot] = waiting.front();
    }
    d->io_in_valid = inSlot >= 0;
    if (inSlot >= 0) {
      Pkt &p = pk[bySlot[inSlot]];
      d->io_in_bits_desc = NANOBPF_PUT(NANOBPF_PKT_DESC_SLOT, inSlot) | NANOBPF_PUT(NANOBPF_PKT_DESC_LEN, 64) |
                           NANOBPF_PUT(NANOBPF_PKT_DESC_VALID, 1) | NANOBPF_PUT(NANOBPF_PKT_DESC_SEQ, bySlot[inSlot]);
      d->io_in_bits_hash = p.hash & 0xffff;
    }
    for (int i = 0; i < QUEUES; i++) {
      Core &c = cores[i];
      if (c.busy && !c.done && cycle >= c.until) { c.done = true; pk[bySlot[c.slot]].complete = cycle; }
      *ports[i].pop_ready = !c.busy;
      *ports[i].comp_valid = c.done;
      *ports[i].comp_bits = NANOBPF_PUT(NANOBPF_PKT_COMP_SLOT, c.slot) | NANOBPF_PUT(NANOBPF_PKT_COMP_ACTION, 2 /* pass */) |
                            NANOBPF_PUT(NANOBPF_PKT_COMP_LEN, 64) | NANOBPF_PUT(NANOBPF_PKT_COMP_OFFSET, 256);
    }
    d->eval();
    // ---- what fires at this edge
    bool inFire = d->io_in_valid && d->io_in_ready;
    unsigned target = d->io_dispatched_bits;
    bool outFire = d->io_out_valid && d->io_out_ready;
    uint64_t outSlot = NANOBPF_GET(d->io_out_bits_word, NANOBPF_PKT_COMP_SLOT);
    bool pop[QUEUES], comp[QUEUES];
    uint64_t popSlot[QUEUES];
    for (int i = 0; i < QUEUES; i++) {
      pop[i] = *ports[i].pop_valid && *ports[i].pop_ready;
      popSlot[i] = NANOBPF_GET(*ports[i].pop_bits, NANOBPF_PKT_DESC_SLOT);
      comp[i] = *ports[i].comp_valid && *ports[i].comp_ready;
    }
    tick();
    cycle++;
    if (inFire) {
      Pkt &p = pk[bySlot[inSlot]];
      p.dispatch = cycle; p.core = target;
      waiting.pop_front();
      inSlot = -1;
    }
    for (int i = 0; i < QUEUES; i++) {
      Core &c = cores[i];
      if (comp[i]) c.busy = c.done = false;
      if (pop[i]) {
        Pkt &p = pk[bySlot[popSlot[i]]];
        c.busy = true; c.slot = popSlot[i]; c.until = cycle + p.service; p.start = cycle;
      }
    }
    if (outFire) {
      pk[bySlot[outSlot]].release = cycle;
      freeSlots.push_back(outSlot);
      released++;
    }
    if (cycle > 4000000000ull) { fprintf(stderr, "dispatch_bench: no progress\n"); return 1; }
  }
  for (auto &p : pk)
    printf("%lu %lu %lu %lu %lu %lu\n", p.arrival, p.dispatch, p.core, p.start, p.complete, p.release);
  delete d;
  return 0;
}
