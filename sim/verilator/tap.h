// A Linux TAP device as one of the DPU's Ethernet ports in the simulation: frames the host's stack
// (or a Python tool on the interface) sends come in, frames the DPU sends out go to it. Needs
// CAP_NET_ADMIN; the interface is created if it does not exist and brought up.
#pragma once

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

class Tap {
  public:
    explicit Tap(const std::string &name) : name_(name) {
        if (name.empty() || name.size() >= IFNAMSIZ) throw std::runtime_error("TAP name '" + name + "': 1 to 15 characters");
        fd_ = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd_ < 0) throw std::runtime_error("TAP " + name + ": /dev/net/tun: " + std::strerror(errno));
        struct ifreq ifr {};
        ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
        std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
        if (ioctl(fd_, TUNSETIFF, &ifr) < 0) fail("TUNSETIFF (needs CAP_NET_ADMIN)");
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0) fail("socket");
        if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
            ifr.ifr_flags |= IFF_UP;
            if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
                close(s);
                fail("bringing the interface up");
            }
        }
        close(s);
    }
    ~Tap() {
        if (fd_ >= 0) close(fd_);
    }
    Tap(const Tap &) = delete;
    Tap &operator=(const Tap &) = delete;

    // Every frame waiting on the interface.
    std::vector<std::vector<uint8_t>> read_all() {
        std::vector<std::vector<uint8_t>> frames;
        std::vector<uint8_t> buf(65536);
        for (;;) {
            ssize_t n = read(fd_, buf.data(), buf.size());
            if (n <= 0) break;
            frames.emplace_back(buf.begin(), buf.begin() + n);
        }
        return frames;
    }
    // One frame out; false when the interface refused it (down, no reader: it is dropped and counted).
    bool write_frame(const std::vector<uint8_t> &f) { return write(fd_, f.data(), f.size()) == (ssize_t)f.size(); }
    const std::string &name() const { return name_; }

  private:
    [[noreturn]] void fail(const std::string &what) {
        std::string msg = "TAP " + name_ + ": " + what + ": " + std::strerror(errno);
        close(fd_);
        fd_ = -1;
        throw std::runtime_error(msg);
    }
    std::string name_;
    int fd_ = -1;
};
