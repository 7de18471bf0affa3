// The UART line decoded as a receiver would (the SoC's harness and the board's: sim/verilator).
#pragma once

#include <cstdint>
#include <cstdio>

// Decodes the UART line as a receiver would: 8N1 at `div` clock cycles a bit, sampled mid-bit. Framing
// errors (a stop bit that is not high) are counted and reported: the firmware changed uart_div, or
// the hardware is wrong. sample() is called once a clock cycle with the line's level; it returns the byte
// that ended in that cycle (also written to `out` when there is one), or -1.
class UartDecoder {
  public:
    UartDecoder(FILE *out, unsigned div) : out_(out), div_(div) {}
    int sample(bool line) {
        const unsigned div = div_;
        if (phase_ == 0) {
            if (!line) phase_ = 1, timer_ = div / 2;  // start bit edge: sample in its middle
            return -1;
        }
        if (timer_-- > 0) return -1;
        timer_ = div - 1;
        if (phase_ == 1) {  // middle of the start bit
            phase_ = line ? 0 : 2, bits_ = 0, byte_ = 0;
        } else if (phase_ < 10) {
            byte_ |= (unsigned)line << bits_++;
            phase_++;
        } else {
            phase_ = 0;
            if (!line) {
                framing_errors_++;
                return -1;
            }
            if (out_) std::fputc((int)byte_, out_);
            bytes_++;
            return (int)byte_;
        }
        return -1;
    }
    uint64_t bytes_ = 0, framing_errors_ = 0;

  private:
    FILE *out_;
    unsigned div_;
    unsigned phase_ = 0, bits_ = 0, byte_ = 0;
    int timer_ = 0;
};

