// Bus statistics of the simulation (nanobpf-sim --bus-stats): what the SoC's interconnect did while
// frames went through, from its `busActivity` output (hw: nanobpf.common.BusActivity). Counted from
// the cycle the first input beat enters the DPU to the last output beat (when no frame moves, from
// the end of reset to the end of the run): per slave and per core the transactions and the cycles
// the bus served them, and per core the cycles it waited while the bus served another one.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>

#include "nanobpf_soc.h"

class BusStats {
  public:
    static constexpr unsigned kSlaves = NANOBPF_BUS_SLAVES + 1;  // the last one: unmapped addresses
    static constexpr unsigned kCores = NANOBPF_MAX_CORES;

    // One cycle of the interconnect; `counting` false before the first frame enters.
    void cycle(bool counting, bool busy, bool start, bool write, unsigned master, unsigned slave, unsigned waiting) {
        if (!counting) return;
        now_.cycles++;
        if (slave >= kSlaves) slave = kSlaves - 1;
        if (master >= kCores) master = kCores - 1;
        if (busy) {
            now_.busy++;
            now_.cyc[slave][master]++;
        }
        if (start) now_.tx[slave][master]++;
        if (start && write) now_.wr[slave][master]++;
        for (unsigned m = 0; m < kCores; m++)
            if (waiting >> m & 1) now_.wait[m]++;
    }
    // The last beat of an output frame left: the window ends here unless another one follows.
    void frame_out() { at_last_out_ = now_; seen_out_ = true; }

    void print() const {
        const Counts &c = seen_out_ ? at_last_out_ : now_;
        static const char *names[] = NANOBPF_BUS_SLAVE_NAMES;
        std::printf("nanobpf-sim: bus %s: %" PRIu64 " cycles, busy %" PRIu64 " (%.1f%%)\n",
                    seen_out_ ? "from the first frame in to the last frame out" : "over the run", c.cycles, c.busy,
                    c.cycles ? 100.0 * c.busy / c.cycles : 0.0);
        for (unsigned s = 0; s < kSlaves; s++) {
            uint64_t tx = 0, wr = 0, cyc = 0;
            for (unsigned m = 0; m < kCores; m++) tx += c.tx[s][m], wr += c.wr[s][m], cyc += c.cyc[s][m];
            if (!tx && !cyc) continue;
            std::printf("nanobpf-sim: bus slave %-10s %10" PRIu64 " transactions (%" PRIu64 " writes) %11" PRIu64
                        " cycles (%.2f a transaction)\n",
                        s < NANOBPF_BUS_SLAVES ? names[s] : "(unmapped)", tx, wr, cyc, tx ? (double)cyc / tx : 0.0);
        }
        for (unsigned m = 0; m < kCores; m++) {
            uint64_t tx = 0, cyc = 0;
            for (unsigned s = 0; s < kSlaves; s++) tx += c.tx[s][m], cyc += c.cyc[s][m];
            if (!tx && !cyc && !c.wait[m]) continue;
            std::printf("nanobpf-sim: bus core %-2u %10" PRIu64 " transactions %11" PRIu64 " cycles served %11" PRIu64
                        " cycles waited for another core;",
                        m, tx, cyc, c.wait[m]);
            for (unsigned s = 0; s < kSlaves; s++)
                if (c.tx[s][m]) std::printf(" %s %" PRIu64, s < NANOBPF_BUS_SLAVES ? names[s] : "(unmapped)", c.tx[s][m]);
            std::printf("\n");
        }
    }

  private:
    struct Counts {
        uint64_t cycles = 0, busy = 0;
        uint64_t tx[kSlaves][kCores] = {}, wr[kSlaves][kCores] = {}, cyc[kSlaves][kCores] = {}, wait[kCores] = {};
    };
    Counts now_, at_last_out_;
    bool seen_out_ = false;
};
