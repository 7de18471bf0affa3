// nanobpf-board-sim: the Genesys2 board simulated from its pins (make board-sim; docs/board.md).
//
// The model is the board's top, nanobpf_genesys2_top, inside boards/genesys2/sim/boardsim (LiteDRAM's
// simulation core for the DDR3, behavioural Xilinx primitives). This harness is everything around the
// FPGA's pins: the 200 MHz oscillator, the MMCM's four output clocks (at board.toml's frequencies: the
// primitive has no timing model), the CPU RESET button, the slide switches, the Ethernet PHY on the
// RGMII pins (rgmii.h: frames from a pcap file or a TAP device in, frames out to a pcap file or the TAP)
// and a terminal on the UART (rgmii.h's neighbour uart.h). Every clock edge is an event on a picosecond
// time line; all edges due at one time are applied, then the model is evaluated once.
//
// Clock frequencies and the UART's baud rate come from board.toml at build time (NB_*_HZ, NB_UART_BAUD:
// nanobpf.board.sim writes them into the build's file list).
#include <signal.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "Vnanobpf_board_sim.h"
#include "cva6_trace.h"
#include "nanobpf_soc.h"  // exit codes
#include "pcap.h"
#include "rgmii.h"
#include "tap.h"
#include "uart.h"
#include "verilated.h"
#include "verilated_fst_c.h"

#if !defined(NB_SYS_HZ) || !defined(NB_CORE_HZ) || !defined(NB_NET_HZ) || !defined(NB_REF_HZ) || !defined(NB_ETH_RX_HZ) || \
    !defined(NB_UART_BAUD)
#error "the board's clocks and baud rate come from its board.toml (nanobpf.board.sim writes -DNB_*_HZ, -DNB_UART_BAUD)"
#endif

namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

constexpr uint64_t kPsPerS = 1000000000000ull;
constexpr uint64_t kResetPs = 2000000;   // CPU RESET held for the first 2 us
constexpr uint64_t kLockPs = 4000000;    // the MMCM locks 4 us in

const char kUsage[] =
    "usage: nanobpf-board-sim [--in FILE.pcap] [--out FILE.pcap] [--tap NAME] [--start-after TEXT] [--until TEXT]\n"
    "                         [--drain-cycles N] [--max-cycles N] [--switches N] [--wave FILE.fst] [--quiet]\n"
    "The Genesys2 board from its pins: frames go into the Ethernet PHY's receive side and what the board\n"
    "sends is taken from its transmit side; the UART console is printed as [uart] lines, LED changes as [led].\n"
    "  --in FILE          frames (pcap, Ethernet, without FCS) into the RJ45, in file order, once the console\n"
    "                     printed a line containing --start-after's text\n"
    "  --out FILE         write the good frames the board sends (pcap; without FCS; ns timestamps)\n"
    "  --tap NAME         a TAP device (created if missing, brought up) as the link partner: its frames go in\n"
    "                     (after --start-after), the board's go to it; the run goes on until SIGINT/SIGTERM\n"
    "  --start-after TEXT hold input frames until a console line contains TEXT (default \"dpu: ready\"; \"\": as soon as\n"
    "                     the board lets the PHY out of reset, 10 ms in)\n"
    "  --until TEXT       end the run (exit 0) once a console line contains TEXT\n"
    "  --drain-cycles N   without a TAP, end the run (exit 0) once every input frame is sent and the link has\n"
    "                     been quiet for N core cycles (default 200000)\n"
    "  --max-cycles N     give up after N core cycles (default 400000000): exit 124\n"
    "  --switches N       the slide switches SW7..0 (default 0; SW0 on: the link self-test echoes frames)\n"
    "  --mbps N           the link partner's rate into the board, 1..1000 Mbit/s (default 1000: back to back)\n"
    "  --wave FILE.fst    write an FST waveform (large: for short runs)\n"
    "  --quiet            print only the summary\n";

struct Options {
    std::string in, out, tap, wave, start_after = "dpu: ready", until;
    uint64_t drain_cycles = 200000, max_cycles = 400000000;
    unsigned switches = 0, mbps = 1000;
    bool quiet = false;
};

[[noreturn]] void usage_error(const std::string &msg) {
    std::fprintf(stderr, "nanobpf-board-sim: error: %s\n%s", msg.c_str(), kUsage);
    std::exit(NANOBPF_SIM_EXIT_USAGE);
}

uint64_t number(const std::string &flag, const std::string &v) {
    char *end = nullptr;
    uint64_t n = std::strtoull(v.c_str(), &end, 0);
    if (v.empty() || *end) usage_error(flag + ": not a number: " + v);
    return n;
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (a == "--in") o.in = value();
        else if (a == "--out") o.out = value();
        else if (a == "--tap") o.tap = value();
        else if (a == "--wave") o.wave = value();
        else if (a == "--start-after") o.start_after = value();
        else if (a == "--until") o.until = value();
        else if (a == "--drain-cycles") o.drain_cycles = number(a, value());
        else if (a == "--max-cycles") o.max_cycles = number(a, value());
        else if (a == "--switches") o.switches = (unsigned)number(a, value());
        else if (a == "--mbps") o.mbps = (unsigned)number(a, value());
        else if (a == "--quiet") o.quiet = true;
        else usage_error("unknown argument: " + a);
    }
    if (o.max_cycles == 0 || o.drain_cycles == 0) usage_error("--max-cycles and --drain-cycles must be positive");
    if (o.switches > 0xff) usage_error("--switches: 0..255");
    if (o.mbps < 1 || o.mbps > 1000) usage_error("--mbps: 1..1000");
    return o;
}

// A clock: it toggles every `half` ps, the first time at `next`.
struct Clock {
    uint64_t half, next;
    bool level = false;
};

uint64_t half_period(uint64_t hz, const char *name) {
    if (kPsPerS % (2 * hz)) {
        std::fprintf(stderr, "nanobpf-board-sim: the %s clock (%" PRIu64 " Hz) has no whole picosecond half period\n", name, hz);
        std::exit(NANOBPF_SIM_EXIT_USAGE);
    }
    return kPsPerS / (2 * hz);
}

}  // namespace

int main(int argc, char **argv) {
    Options opt = parse(argc, argv);
    rgmii::Rx phy_rx;
    rgmii::Tx phy_tx;
    phy_rx.set_rate(opt.mbps);
    std::vector<pcap::Frame> input;
    std::unique_ptr<pcap::Writer> writer;
    std::unique_ptr<Tap> tap;
    try {
        if (!opt.in.empty()) input = pcap::read(opt.in);
        if (!opt.out.empty()) writer = std::make_unique<pcap::Writer>(opt.out);
        if (!opt.tap.empty()) tap = std::make_unique<Tap>(opt.tap);
    } catch (const std::exception &e) {
        usage_error(e.what());
    }
    if (tap) {
        signal(SIGINT, on_stop);
        signal(SIGTERM, on_stop);
    }

    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    ctx->timeunit(-12);
    ctx->timeprecision(-12);
    ctx->traceEverOn(!opt.wave.empty());
    auto top = std::make_unique<Vnanobpf_board_sim>(ctx.get());
    top->cpu_resetn = 0;
    top->mmcm_locked = 0;
    top->sw = opt.switches;
    first_eval_without_trace(*top, "", NANOBPF_SIM_EXIT_USAGE);
    std::unique_ptr<VerilatedFstC> fst;
    if (!opt.wave.empty()) {
        fst = std::make_unique<VerilatedFstC>();
        top->trace(fst.get(), 99);
        fst->open(opt.wave.c_str());
        if (!fst->isOpen()) usage_error("cannot open wave file " + opt.wave);
    }

    // The oscillator, the MMCM's outputs (clk_net, clk_net90 a quarter period later, clk_core, clk_ref) and
    // the PHY's receive clock; the PHY changes its receive data a quarter period after each of its edges.
    enum { SYS, NET, NET90, CORE, REF, RXC, RXDATA, N };
    Clock clk[N];
    clk[SYS] = {half_period(NB_SYS_HZ, "system"), 0};
    clk[NET] = {half_period(NB_NET_HZ, "network"), 0};
    clk[NET90] = {clk[NET].half, clk[NET].half / 2};
    clk[CORE] = {half_period(NB_CORE_HZ, "core"), 0};
    clk[REF] = {half_period(NB_REF_HZ, "reference"), 0};
    clk[RXC] = {half_period(NB_ETH_RX_HZ, "RGMII receive"), 0};
    clk[RXDATA] = {clk[RXC].half, clk[RXC].half / 2};
    const unsigned uart_div = (unsigned)(NB_CORE_HZ / NB_UART_BAUD);

    UartDecoder uart(nullptr, uart_div);
    std::string line;
    bool sending = opt.start_after.empty(), txck = false, ended = false;
    size_t next_in = 0;
    uint64_t t = 0, cycle = 0, quiet_since = 0, tap_dropped = 0, framing = 0;
    unsigned leds = 0x100;  // not yet shown
    int code = 0;
    auto t0 = std::chrono::steady_clock::now();
    auto log = [&](const char *fmt, auto... args) {
        if (!opt.quiet) {
            std::printf(fmt, args...);
            std::fflush(stdout);
        }
    };
    while (!ended) {
        uint64_t now = UINT64_MAX;
        for (auto &c : clk) now = std::min(now, c.next);
        t = now;
        bool core_rise = false;
        for (int i = 0; i < N; i++) {
            Clock &c = clk[i];
            if (c.next != t) continue;
            c.next += c.half;
            if (i == RXDATA) {  // the data for RXC's coming edge: rising if RXC is low now
                bool ctl;
                uint8_t nib;
                phy_rx.next(!clk[RXC].level, ctl, nib);
                top->eth_rxctl = ctl;
                top->eth_rxd = nib;
                continue;
            }
            c.level = !c.level;
            if (i == CORE && c.level) core_rise = true;
        }
        top->sysclk = clk[SYS].level;
        top->mmcm_clk = (uint8_t)(clk[NET].level | clk[NET90].level << 1 | clk[CORE].level << 2 | clk[REF].level << 3);
        top->eth_rxck = clk[RXC].level;
        top->cpu_resetn = t >= kResetPs;
        top->mmcm_locked = t >= kLockPs;
        ctx->time(t);
        top->eval();
        if (fst) fst->dump(t);

        if (top->eth_txck != txck) {  // the PHY samples on both edges of TXC
            txck = top->eth_txck;
            if (phy_tx.edge(txck, top->eth_txctl, top->eth_txd)) {
                std::vector<uint8_t> f = phy_tx.take();
                quiet_since = cycle;
                if (writer) writer->write(t / 1000, f);
                if (tap && !tap->write_frame(f)) tap_dropped++;
            }
        }
        if (!core_rise) continue;
        cycle++;
        int ch = uart.sample(top->uart_rx_out);
        if (ch == '\n') {
            log("[uart] %s\n", line.c_str());
            if (!sending && line.find(opt.start_after) != std::string::npos) sending = true;
            if (!opt.until.empty() && line.find(opt.until) != std::string::npos) ended = true;
            line.clear();
        } else if (ch >= 0 && ch != '\r') {
            line += (char)ch;
        }
        if (top->led != leds) {
            leds = top->led;
            char bits[9];
            for (int b = 0; b < 8; b++) bits[b] = (leds >> (7 - b) & 1) ? '1' : '0';
            bits[8] = 0;
            log("[led] LD7..0 %s at cycle %" PRIu64 "\n", bits, cycle);
        }
        // the PHY sends nothing while the board holds it in reset (eth_phyrst_n, 10 ms after the clocks lock)
        if (sending && top->eth_phyrst_n) {
            while (next_in < input.size() && phy_rx.queued() < 2) phy_rx.push(input[next_in++].bytes);
            if (tap && (cycle & 255) == 0)
                for (auto &f : tap->read_all())
                    if (!f.empty()) phy_rx.push(f);
        }
        if (!phy_rx.idle()) quiet_since = cycle;
        if (tap ? (bool)g_stop : (sending && next_in == input.size() && phy_rx.idle() && cycle - quiet_since >= opt.drain_cycles && opt.until.empty()))
            ended = true;
        if (cycle >= opt.max_cycles) {
            code = NANOBPF_SIM_EXIT_TIMEOUT;
            ended = true;
        }
    }
    framing = uart.framing_errors_;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!line.empty()) log("[uart] %s\n", line.c_str());
    top->final();
    if (fst) fst->close();
    std::printf("nanobpf-board-sim: eth: in %" PRIu64 " frames, out %" PRIu64 " good, %" PRIu64 " bad%s; uart %" PRIu64
                " bytes, %" PRIu64 " framing error(s)\n",
                phy_rx.sent(), phy_tx.good(), phy_tx.bad(),
                tap ? (", " + std::to_string(tap_dropped) + " refused by the TAP").c_str() : "", uart.bytes_, framing);
    if (!sending && !opt.start_after.empty() && (!input.empty() || tap))
        std::printf("nanobpf-board-sim: the console never printed \"%s\": no frame was sent\n", opt.start_after.c_str());
    std::printf("nanobpf-board-sim: %s after %" PRIu64 " core cycles (%.3f ms of board time); %.1f s wall, %.0f cycles/s\n",
                code ? "TIMEOUT" : "END", cycle, (double)t / 1e9, secs, (double)cycle / secs);
    if (code == 0 && (phy_tx.bad() || framing)) code = 1;
    return code;
}
