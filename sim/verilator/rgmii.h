// The Ethernet PHY's side of RGMII at 1 Gbit/s (the board's RTL8211E, as the FPGA's pins see it), for
// the board simulated from its pins (board_main.cpp).
//
// Receive (PHY -> FPGA): each frame goes out as a real PHY sends it: preamble (7 x 0x55), SFD (0xD5), the
// frame, its FCS (CRC-32, computed here: frames in pcap files and from TAPs carry none), then at least
// the 12-byte inter-frame gap. A byte is two nibbles: bits 3:0 with RX_CTL = RX_DV on the clock's
// rising edge, bits 7:4 with RX_CTL = RX_DV xor RX_ER on its falling edge. The harness changes the data
// halfway between the edges (a PHY with its 2 ns receive clock delay: data centred on the clock).
//
// Transmit (FPGA -> PHY): the harness samples TXD/TX_CTL on each edge of the FPGA's TXC; a frame is the
// bytes between TX_EN rising and falling. It must start with the preamble and SFD and end with a good
// FCS: then the frame (without preamble and FCS) is handed on; otherwise it is counted as bad and
// dropped, as the link partner would drop it. A TX_ER (TX_CTL != TX_EN on the falling edge) inside a
// frame marks it bad too.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace rgmii {

inline uint32_t crc32(const std::vector<uint8_t> &d, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= d[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

// The PHY's transmitter towards the FPGA's RGMII receive pins.
class Rx {
  public:
    static constexpr unsigned kGap = 12;  // inter-frame gap, bytes

    // Send at `mbps` Mbit/s on average (below 1000: a longer gap after each frame), as a link partner
    // that offers less than line rate.
    void set_rate(unsigned mbps) { mbps_ = mbps; }
    void push(const std::vector<uint8_t> &frame) { frames_.push_back(frame); }
    bool idle() const { return frames_.empty() && wire_.empty() && gap_ == 0; }
    size_t queued() const { return frames_.size(); }
    uint64_t sent() const { return sent_; }

    // The pins' values for the coming edge: (ctl, nibble). Called once before each rising edge
    // (rising = true) and once before each falling edge.
    void next(bool rising, bool &ctl, uint8_t &nibble) {
        if (rising) {
            if (wire_.empty() && gap_ == 0 && !frames_.empty()) load();
            if (!wire_.empty()) {
                byte_ = wire_.front();
                wire_.pop_front();
                active_ = true;
                if (wire_.empty()) gap_ = kGap + (unsigned)((uint64_t)frame_bytes_ * (1000 - mbps_) / mbps_), sent_++;
            } else {
                active_ = false;
                if (gap_) gap_--;
            }
        }
        ctl = active_;  // RX_DV, then RX_DV xor RX_ER (never an error here)
        nibble = active_ ? (rising ? byte_ & 0xf : byte_ >> 4) : 0;
    }

  private:
    void load() {
        std::vector<uint8_t> f = frames_.front();
        frames_.pop_front();
        while (f.size() < 60) f.push_back(0);  // a PHY's partner pads to the minimum (64 with FCS)
        uint32_t fcs = crc32(f, f.size());
        for (int i = 0; i < 7; i++) wire_.push_back(0x55);
        wire_.push_back(0xd5);
        wire_.insert(wire_.end(), f.begin(), f.end());
        for (int i = 0; i < 4; i++) wire_.push_back((uint8_t)(fcs >> (8 * i)));
        frame_bytes_ = (unsigned)wire_.size() + kGap;
    }
    std::deque<std::vector<uint8_t>> frames_;
    std::deque<uint8_t> wire_;
    unsigned gap_ = 0, mbps_ = 1000, frame_bytes_ = 0;
    uint8_t byte_ = 0;
    bool active_ = false;
    uint64_t sent_ = 0;
};

// The PHY's receiver on the FPGA's RGMII transmit pins.
class Tx {
  public:
    // One edge of TXC with the pins' values; returns true when a good frame ended (then take() it).
    bool edge(bool rising, bool ctl, uint8_t nibble) {
        if (rising) {
            en_ = ctl;
            low_ = nibble & 0xf;
            if (!en_ && in_frame_) return finish();
            return false;
        }
        if (!en_) return false;
        if (ctl != en_) err_ = true;  // TX_ER
        in_frame_ = true;
        bytes_.push_back((uint8_t)(low_ | (nibble & 0xf) << 4));
        return false;
    }
    std::vector<uint8_t> take() { return std::move(frame_); }
    uint64_t good() const { return good_; }
    uint64_t bad() const { return bad_; }

  private:
    bool finish() {
        in_frame_ = false;
        std::vector<uint8_t> b = std::move(bytes_);
        bytes_.clear();
        bool err = err_;
        err_ = false;
        size_t pre = 0;
        while (pre < b.size() && b[pre] == 0x55) pre++;
        if (err || pre != 7 || pre >= b.size() || b[pre] != 0xd5 || b.size() < pre + 1 + 64) {
            bad_++;
            return false;
        }
        std::vector<uint8_t> f(b.begin() + (long)pre + 1, b.end());
        uint32_t want = crc32(f, f.size() - 4), got = 0;
        for (int i = 0; i < 4; i++) got |= (uint32_t)f[f.size() - 4 + i] << (8 * i);
        if (want != got) {
            bad_++;
            return false;
        }
        f.resize(f.size() - 4);
        frame_ = std::move(f);
        good_++;
        return true;
    }
    bool en_ = false, in_frame_ = false, err_ = false;
    uint8_t low_ = 0;
    std::vector<uint8_t> bytes_, frame_;
    uint64_t good_ = 0, bad_ = 0;
};

}  // namespace rgmii
