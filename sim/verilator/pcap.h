// Classic pcap files (the format tcpdump and Wireshark write): reading Ethernet captures in either
// byte order, microsecond or nanosecond timestamps; writing nanosecond captures. Errors throw
// std::runtime_error naming the file and the record.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace pcap {

constexpr uint32_t kMagicUs = 0xa1b2c3d4, kMagicNs = 0xa1b23c4d, kLinkEthernet = 1;
constexpr uint32_t kMaxRecord = 65535;

struct Frame {
    uint64_t time_ns = 0;
    std::vector<uint8_t> bytes;
};

inline uint32_t swap32(uint32_t v) {
    return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

// Every frame of an Ethernet capture, in file order.
inline std::vector<Frame> read(const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("cannot read " + path);
    auto fail = [&](const std::string &why) {
        std::fclose(f);
        throw std::runtime_error(path + ": " + why);
    };
    uint32_t hdr[6];
    if (std::fread(hdr, 4, 6, f) != 6) fail("not a pcap file (shorter than its 24-byte header)");
    bool swap = false, ns = false;
    if (hdr[0] == kMagicUs || hdr[0] == kMagicNs) {
        ns = hdr[0] == kMagicNs;
    } else if (swap32(hdr[0]) == kMagicUs || swap32(hdr[0]) == kMagicNs) {
        swap = true;
        ns = swap32(hdr[0]) == kMagicNs;
    } else {
        fail("not a pcap file (bad magic; pcapng is not supported: convert it with `editcap -F pcap`)");
    }
    auto u32 = [&](uint32_t v) { return swap ? swap32(v) : v; };
    if (u32(hdr[5]) != kLinkEthernet) fail("link type " + std::to_string(u32(hdr[5])) + " is not Ethernet (1)");
    std::vector<Frame> frames;
    uint32_t rec[4];
    size_t got;
    while ((got = std::fread(rec, 4, 4, f)) == 4) {
        uint32_t len = u32(rec[2]);
        std::string where = "record " + std::to_string(frames.size() + 1);
        if (len > kMaxRecord) fail(where + ": " + std::to_string(len) + " bytes is not a frame");
        if (len < u32(rec[3])) fail(where + ": cut to " + std::to_string(len) + " of " + std::to_string(u32(rec[3])) +
                                    " bytes (capture with a larger snap length)");
        Frame fr;
        fr.time_ns = (uint64_t)u32(rec[0]) * 1000000000ull + (uint64_t)u32(rec[1]) * (ns ? 1 : 1000);
        fr.bytes.resize(len);
        if (len && std::fread(fr.bytes.data(), 1, len, f) != len) fail(where + ": truncated");
        frames.push_back(std::move(fr));
    }
    bool partial = got != 0;
    std::fclose(f);
    if (partial) throw std::runtime_error(path + ": record " + std::to_string(frames.size() + 1) + ": truncated header");
    return frames;
}

// A nanosecond Ethernet capture being written.
class Writer {
  public:
    explicit Writer(const std::string &path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
        if (!f_) throw std::runtime_error("cannot write " + path);
        const uint32_t hdr[6] = {kMagicNs, 0x00040002u /* version 2.4 */, 0, 0, kMaxRecord, kLinkEthernet};
        put(hdr, sizeof hdr);
    }
    ~Writer() {
        if (f_) std::fclose(f_);
    }
    Writer(const Writer &) = delete;
    Writer &operator=(const Writer &) = delete;
    void write(uint64_t time_ns, const std::vector<uint8_t> &bytes) {
        const uint32_t rec[4] = {(uint32_t)(time_ns / 1000000000ull), (uint32_t)(time_ns % 1000000000ull),
                                 (uint32_t)bytes.size(), (uint32_t)bytes.size()};
        put(rec, sizeof rec);
        put(bytes.data(), bytes.size());
        std::fflush(f_);
    }

  private:
    void put(const void *p, size_t n) {
        if (n && std::fwrite(p, 1, n, f_) != n) throw std::runtime_error("cannot write " + path_);
    }
    std::string path_;
    FILE *f_;
};

}  // namespace pcap
