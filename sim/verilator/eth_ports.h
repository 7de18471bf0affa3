// The DPU's Ethernet ports in the simulation: frames from pcap files driven into the SoC's `eth.rx`
// stream (user = physical port), frames leaving on `eth.tx` written per physical port into pcap
// files. Cycle-accurate: one 64-bit beat per cycle at most, valid/ready as AXI4-Stream; the two input
// ports share the stream a whole frame at a time, round robin. Optional pacing spaces each port's
// frames at a line rate (Gbit/s at the core clock, preamble and inter-frame gap included).
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "nanobpf_soc.h"
#include "pcap.h"
#include "tap.h"

class EthPorts {
  public:
    static constexpr unsigned kPorts = 4;  // pkt/PISA physical port numbers are 2 bits wide
    static constexpr unsigned kBeat = 8;   // bytes per beat (the SoC's stream width)

    struct Beat {
        bool valid = false, last = false;
        uint64_t data = 0;
        uint8_t keep = 0;
        uint8_t port = 0;
    };

    // in[p]: frames for physical port p (may be empty); out[p]: path of the capture for frames leaving
    // on p ("" = not written, only counted).
    EthPorts(std::vector<pcap::Frame> in[kPorts], const std::string out[kPorts], double gbps)
        : gbps_(gbps) {
        for (unsigned p = 0; p < kPorts; p++) {
            queue_[p].assign(in[p].begin(), in[p].end());
            if (!out[p].empty()) writer_[p] = std::make_unique<pcap::Writer>(out[p]);
        }
    }

    // The input beat for this cycle (held until it is taken).
    Beat rx_beat(uint64_t cycle) {
        if (cur_port_ < 0) pick(cycle);
        Beat b;
        if (cur_port_ < 0) return b;
        const auto &bytes = queue_[cur_port_].front().bytes;
        size_t n = std::min<size_t>(kBeat, bytes.size() - offset_);
        b.valid = true;
        b.port = (uint8_t)cur_port_;
        b.last = offset_ + n == bytes.size();
        b.keep = (uint8_t)((1u << n) - 1);
        for (size_t i = 0; i < n; i++) b.data |= (uint64_t)bytes[offset_ + i] << (8 * i);
        return b;
    }

    // The beat offered this cycle was taken.
    void rx_taken(uint64_t cycle) {
        const auto &bytes = queue_[cur_port_].front().bytes;
        if (offset_ == 0 && rx_times_) std::fprintf(rx_times_, "%d %" PRIu64 " %" PRIu64 "\n", cur_port_, sent_[cur_port_], cycle);
        offset_ += std::min<size_t>(kBeat, bytes.size() - offset_);
        last_activity_ = cycle;
        if (offset_ < bytes.size()) return;
        next_start_[cur_port_] = start_ + pace_cycles(bytes.size());
        queue_[cur_port_].pop_front();
        sent_[cur_port_]++;
        rr_ = (unsigned)cur_port_ + 1;
        cur_port_ = -1;
        offset_ = 0;
    }

    // A beat left the DPU this cycle.
    void tx_beat(uint64_t cycle, uint64_t time_ns, const Beat &b) {
        last_activity_ = cycle;
        for (unsigned i = 0; i < kBeat; i++)
            if (b.keep >> i & 1) frame_.push_back((uint8_t)(b.data >> (8 * i)));
        if (!b.last) return;
        unsigned p = b.port % kPorts;
        received_[p]++;
        if (writer_[p]) writer_[p]->write(time_ns, frame_);
        if (tap_[p] && !tap_[p]->write_frame(frame_)) tap_dropped_[p]++;
        frame_.clear();
    }

    // A TAP device as port p: its frames are taken every `poll` calls, what leaves on p goes to it.
    void attach_tap(unsigned p, std::unique_ptr<Tap> tap) { tap_[p] = std::move(tap); }
    bool has_tap() const {
        for (unsigned p = 0; p < kPorts; p++)
            if (tap_[p]) return true;
        return false;
    }
    void poll_taps(uint64_t cycle) {
        for (unsigned p = 0; p < kPorts; p++) {
            if (!tap_[p]) continue;
            for (auto &f : tap_[p]->read_all()) {
                if (f.empty()) continue;
                pcap::Frame fr;
                fr.bytes = std::move(f);
                queue_[p].push_back(std::move(fr));
                last_activity_ = cycle;
            }
        }
    }
    uint64_t tap_dropped(unsigned p) const { return tap_dropped_[p]; }

    // Log "port frame-index cycle" when each input frame's first beat is taken (latency measurements).
    void log_rx_times(FILE *f) { rx_times_ = f; }

    bool inputs_done() const {
        for (unsigned p = 0; p < kPorts; p++)
            if (!queue_[p].empty()) return false;
        return cur_port_ < 0;
    }
    uint64_t last_activity() const { return last_activity_; }
    uint64_t sent(unsigned p) const { return sent_[p]; }
    uint64_t received(unsigned p) const { return received_[p]; }

  private:
    // Cycles a frame of `bytes` occupies a port at the line rate (preamble + SFD 8, FCS 4, gap 12).
    uint64_t pace_cycles(size_t bytes) const {
        if (gbps_ <= 0) return 0;
        double ns = (double)(bytes + 24) * 8.0 / gbps_;
        return (uint64_t)(ns * (double)NANOBPF_CORE_CLOCK_HZ / 1e9 + 0.5);
    }
    void pick(uint64_t cycle) {
        for (unsigned k = 0; k < kPorts; k++) {
            unsigned p = (rr_ + k) % kPorts;
            if (!queue_[p].empty() && cycle >= next_start_[p]) {
                cur_port_ = (int)p;
                start_ = cycle;
                return;
            }
        }
    }
    double gbps_;
    std::deque<pcap::Frame> queue_[kPorts];
    std::unique_ptr<pcap::Writer> writer_[kPorts];
    std::unique_ptr<Tap> tap_[kPorts];
    uint64_t tap_dropped_[kPorts] = {};
    uint64_t next_start_[kPorts] = {}, sent_[kPorts] = {}, received_[kPorts] = {};
    int cur_port_ = -1;
    unsigned rr_ = 0;
    size_t offset_ = 0;
    uint64_t start_ = 0, last_activity_ = 0;
    std::vector<uint8_t> frame_;
    FILE *rx_times_ = nullptr;
};
