// nanobpf-sim: Verilator harness for the NanoBPF SoC.
//
// Loads a firmware image into main memory, runs the SoC until the firmware writes dpu.sim_end, prints
// each core's console line by line ("[core N] ..."), reports bus errors and the cycle count, and
// exits with the firmware's code. The DPU's Ethernet ports take frames from pcap files and write what
// leaves them into pcap files (eth_ports.h). See docs/simulation.md for options and exit codes.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "VNanobpfSoc.h"
#include "bus_stats.h"
#include "uart.h"
#include "cva6_trace.h"
#include "eth_ports.h"
#include "nanobpf_soc.h"  // generated from hw/defs/soc.toml: exit codes, ports, core clock
#include "verilated.h"
#include "verilated_fst_c.h"

namespace {

volatile sig_atomic_t g_stop = 0;  // SIGINT/SIGTERM: drain and end (runs with TAP ports)
void on_stop(int) { g_stop = 1; }

constexpr int kExitTimeout = NANOBPF_SIM_EXIT_TIMEOUT;
constexpr int kExitBusError = NANOBPF_SIM_EXIT_BUS_ERROR;
constexpr int kExitUsage = NANOBPF_SIM_EXIT_USAGE;
constexpr int kExitFinish = NANOBPF_SIM_EXIT_FINISH;
constexpr uint64_t kResetCycles = 16;

const char kUsage[] =
    "usage: nanobpf-sim --firmware FILE.hex [--max-cycles N] [--wave FILE.fst] [--insn-trace FILE] [--uart FILE] [--quiet]\n"
    "  --firmware FILE   main-memory image ($readmemh of 64-bit words, from nanobpf-elf2hex)\n"
    "  --max-cycles N    give up after N core cycles (default 20000000): exit 124\n"
    "  --wave FILE.fst   write an FST waveform of the whole run\n"
    "  --insn-trace FILE write CVA6's instruction trace (every retired instruction, all cores) to FILE\n"
    "  --uart FILE       decode the UART line (8N1 at the reset bit time, dpu.uart_div) into FILE\n"
    "  --quiet           do not echo the console, print only the summary\n"
    "  --host-in FILE    frames (pcap, Ethernet) into the DPU's host port, in file order\n"
    "  --net-in FILE     frames (pcap, Ethernet) into the DPU's network port\n"
    "  --host-out FILE   write the frames leaving the host port (pcap, ns timestamps from the core clock)\n"
    "  --net-out FILE    write the frames leaving the network port\n"
    "                    (input frames start once the firmware sets dpu.datapath_ready)\n"
    "  --gbps R          pace each input port at R Gbit/s at the core clock (default 0: as fast as the DPU takes frames)\n"
    "  --host-tap NAME   a TAP device (created if missing, brought up) as the host port: frames both ways\n"
    "  --net-tap NAME    a TAP device as the network port; with a TAP the run goes on until SIGINT/SIGTERM\n"
    "                    (then dpu.sim_drain: the firmware prints its counters and ends) or --max-cycles\n"
    "  --rx-times FILE   log \"port frame cycle\" when each input frame's first beat enters the DPU\n"
    "  --drain-cycles N  once every input frame is in and the ports have been idle N cycles (default 200000),\n"
    "                    raise dpu.sim_drain: the data-plane firmware prints its counters and ends the run\n"
    "  --bus-stats       print what the interconnect did from the first frame in to the last frame out\n"
    "                    (the whole run without frames): transactions and cycles per slave and per core,\n"
    "                    and the cycles each core waited while the bus served another\n"
    "  --bus-trace FILE  write every transaction the interconnect grants to FILE, one line each:\n"
    "                    cycle, core, slave, r/w, i/d (CVA6's instruction or data cache), address (hex)\n"
    "exit code: the firmware's sim_end code (0 = pass), or the harness's own codes listed in\n"
    "docs/memory-map.md (timeout, bus_error, usage, finish)\n";

struct Options {
    std::string firmware;
    std::string wave;
    std::string insn_trace; // CVA6's own tracer output; empty: discarded
    std::string uart;       // decoded UART bytes; empty: not decoded
    uint64_t max_cycles = 20000000;
    bool quiet = false;
    bool bus_stats = false;
    std::string bus_trace; // --bus-trace FILE; empty: none
    std::string eth_in[EthPorts::kPorts], eth_out[EthPorts::kPorts], tap[EthPorts::kPorts];
    double gbps = 0;
    uint64_t drain_cycles = 200000;
    std::string rx_times;
    bool eth() const {
        for (unsigned p = 0; p < EthPorts::kPorts; p++)
            if (!eth_in[p].empty() || !eth_out[p].empty() || !tap[p].empty()) return true;
        return false;
    }
};

[[noreturn]] void usage_error(const std::string &msg) {
    std::fprintf(stderr, "nanobpf-sim: error: %s\n%s", msg.c_str(), kUsage);
    std::exit(kExitUsage);
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
        } else if (a == "--firmware") {
            o.firmware = value();
        } else if (a == "--wave") {
            o.wave = value();
        } else if (a == "--insn-trace") {
            o.insn_trace = value();
        } else if (a == "--max-cycles") {
            std::string v = value();
            char *end = nullptr;
            o.max_cycles = std::strtoull(v.c_str(), &end, 0);
            if (v.empty() || *end || o.max_cycles == 0) usage_error("--max-cycles: not a positive number: " + v);
        } else if (a == "--uart") {
            o.uart = value();
        } else if (a == "--bus-stats") {
            o.bus_stats = true;
        } else if (a == "--bus-trace") {
            o.bus_trace = value();
        } else if (a == "--quiet") {
            o.quiet = true;
        } else if (a == "--host-in") {
            o.eth_in[NANOBPF_DATAPATH_HOST_PORT] = value();
        } else if (a == "--net-in") {
            o.eth_in[NANOBPF_DATAPATH_NET_PORT] = value();
        } else if (a == "--host-out") {
            o.eth_out[NANOBPF_DATAPATH_HOST_PORT] = value();
        } else if (a == "--net-out") {
            o.eth_out[NANOBPF_DATAPATH_NET_PORT] = value();
        } else if (a == "--host-tap") {
            o.tap[NANOBPF_DATAPATH_HOST_PORT] = value();
        } else if (a == "--net-tap") {
            o.tap[NANOBPF_DATAPATH_NET_PORT] = value();
        } else if (a == "--rx-times") {
            o.rx_times = value();
        } else if (a == "--gbps") {
            std::string v = value();
            char *end = nullptr;
            o.gbps = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || !(o.gbps >= 0)) usage_error("--gbps: not a rate: " + v);
        } else if (a == "--drain-cycles") {
            std::string v = value();
            char *end = nullptr;
            o.drain_cycles = std::strtoull(v.c_str(), &end, 0);
            if (v.empty() || *end || o.drain_cycles == 0) usage_error("--drain-cycles: not a positive number: " + v);
        } else {
            usage_error("unknown argument: " + a);
        }
    }
    if (o.firmware.empty()) usage_error("--firmware is required");
    char resolved[PATH_MAX];
    if (!std::ifstream(o.firmware) || !realpath(o.firmware.c_str(), resolved))
        usage_error("cannot read firmware image " + o.firmware);
    o.firmware = resolved;  // $readmemh runs in a scratch directory (see first_eval_without_trace)
    return o;
}

// Collects console characters per core and prints whole lines, so output of cores that print at
// the same time does not interleave mid-line.
class Console {
  public:
    explicit Console(bool quiet) : quiet_(quiet) {}
    void put(unsigned core, char c) {
        if (core >= lines_.size()) lines_.resize(core + 1);
        if (c == '\n') {
            flush(core);
        } else if (c != '\r') {
            lines_[core] += c;
        }
    }
    void flush_all() {
        for (unsigned c = 0; c < lines_.size(); c++)
            if (!lines_[c].empty()) flush(c);
    }

  private:
    void flush(unsigned core) {
        if (!quiet_) std::printf("[core %u] %s\n", core, lines_[core].c_str());
        std::fflush(stdout);
        lines_[core].clear();
    }
    bool quiet_;
    std::vector<std::string> lines_;
};

}  // namespace

int main(int argc, char **argv) {
    Options opt = parse(argc, argv);
    std::unique_ptr<EthPorts> eth;
    std::unique_ptr<FILE, int (*)(FILE *)> rx_times_file(nullptr, std::fclose);
    if (opt.eth()) {
        std::vector<pcap::Frame> in[EthPorts::kPorts];
        try {
            for (unsigned p = 0; p < EthPorts::kPorts; p++) {
                if (opt.eth_in[p].empty()) continue;
                in[p] = pcap::read(opt.eth_in[p]);
                for (size_t i = 0; i < in[p].size(); i++)
                    if (in[p][i].bytes.empty()) throw std::runtime_error(opt.eth_in[p] + ": record " + std::to_string(i + 1) + ": empty frame");
            }
            eth = std::make_unique<EthPorts>(in, opt.eth_out, opt.gbps);
            for (unsigned p = 0; p < EthPorts::kPorts; p++)
                if (!opt.tap[p].empty()) eth->attach_tap(p, std::make_unique<Tap>(opt.tap[p]));
            if (!opt.rx_times.empty()) {
                rx_times_file.reset(std::fopen(opt.rx_times.c_str(), "w"));
                if (!rx_times_file) throw std::runtime_error("cannot write " + opt.rx_times);
                eth->log_rx_times(rx_times_file.get());
            }
        } catch (const std::exception &e) {
            usage_error(e.what());
        }
    }
    auto ctx = std::make_unique<VerilatedContext>();
    std::string plusarg = "+nanobpf_mem=" + opt.firmware;
    const char *vargs[] = {argv[0], plusarg.c_str()};
    ctx->commandArgs(2, vargs);
    ctx->traceEverOn(!opt.wave.empty());
    auto top = std::make_unique<VNanobpfSoc>(ctx.get());
    top->clock = 0;
    top->reset = 1;
    first_eval_without_trace(*top, opt.insn_trace, kExitUsage);

    std::unique_ptr<VerilatedFstC> fst;
    if (!opt.wave.empty()) {
        fst = std::make_unique<VerilatedFstC>();
        top->trace(fst.get(), 99);
        fst->open(opt.wave.c_str());
        if (!fst->isOpen()) usage_error("cannot open wave file " + opt.wave);
    }

    Console console(opt.quiet);
    std::unique_ptr<FILE, int (*)(FILE *)> uart_file(nullptr, std::fclose);
    std::unique_ptr<UartDecoder> uart;
    if (!opt.uart.empty()) {
        uart_file.reset(std::fopen(opt.uart.c_str(), "wb"));
        if (!uart_file) usage_error("cannot write UART output " + opt.uart);
        uart = std::make_unique<UartDecoder>(uart_file.get(), NANOBPF_DPU_UART_DIV_RESET);
    }
    uint64_t cycle = 0, bus_errors = 0, rx_stalls = 0;
    BusStats bus;
    std::unique_ptr<FILE, int (*)(FILE *)> bus_trace_file(nullptr, std::fclose);
    if (!opt.bus_trace.empty()) {
        bus_trace_file.reset(std::fopen(opt.bus_trace.c_str(), "w"));
        if (!bus_trace_file) usage_error("cannot write bus trace " + opt.bus_trace);
    }
    FILE *bus_trace = bus_trace_file.get();
    bool frames_in = !eth;  // bus statistics count from the first input beat (without ports: the whole run)
    bool ended = false;
    int code = 0;
    auto t0 = std::chrono::steady_clock::now();
    auto tick = [&]() {
        top->clock = 0;
        top->eval();
        if (fst) fst->dump(ctx->time());
        ctx->timeInc(1);
        top->clock = 1;
        top->eval();
        if (fst) fst->dump(ctx->time());
        ctx->timeInc(1);
    };

    top->reset = 1;
    for (uint64_t i = 0; i < kResetCycles; i++) tick();
    top->reset = 0;
    top->io_eth_tx_ready = 1;
    bool taps = eth && eth->has_tap();
    if (taps) {
        signal(SIGINT, on_stop);
        signal(SIGTERM, on_stop);
    }
    while (!ended && cycle < opt.max_cycles && !ctx->gotFinish()) {
        // Outputs are sampled with the clock low: these are the values the next edge will commit.
        top->clock = 0;
        EthPorts::Beat rx;
        if (eth) {
            if (top->io_datapathReady) rx = eth->rx_beat(cycle);
            top->io_eth_rx_valid = rx.valid;
            top->io_eth_rx_bits_beat_data = rx.data;
            top->io_eth_rx_bits_beat_keep = rx.keep;
            top->io_eth_rx_bits_beat_last = rx.last;
            top->io_eth_rx_bits_user = rx.port;
            if (taps && (cycle & 255) == 0) eth->poll_taps(cycle);
            top->io_simDrain = taps ? (bool)g_stop : eth->inputs_done() && cycle - eth->last_activity() >= opt.drain_cycles;
        }
        top->eval();
        if (eth) {
            if (rx.valid && top->io_eth_rx_ready) {
                eth->rx_taken(cycle);
                frames_in = true;
            }
            else if (rx.valid) rx_stalls++;  // the DPU held a beat back (one beat per cycle is the goal)
            if (top->io_eth_tx_valid) {
                EthPorts::Beat tx;
                tx.data = top->io_eth_tx_bits_beat_data;
                tx.keep = top->io_eth_tx_bits_beat_keep;
                tx.last = top->io_eth_tx_bits_beat_last;
                tx.port = top->io_eth_tx_bits_port;
                eth->tx_beat(cycle, (uint64_t)((double)cycle * 1e9 / NANOBPF_CORE_CLOCK_HZ), tx);
                if (tx.last) bus.frame_out();
            }
        }
        if (bus_trace && top->io_busActivity_start)
            std::fprintf(bus_trace, "%" PRIu64 " %u %u %c %c %08x\n", cycle, (unsigned)top->io_busActivity_master,
                         (unsigned)top->io_busActivity_slave, top->io_busActivity_write ? 'w' : 'r',
                         top->io_busActivity_id0 ? 'd' : 'i', (unsigned)top->io_busActivity_addr);
        if (opt.bus_stats)
            bus.cycle(frames_in, top->io_busActivity_busy, top->io_busActivity_start, top->io_busActivity_write,
                      top->io_busActivity_master,
                      top->io_busActivity_slave, top->io_busActivity_waiting);
        if (top->io_console_valid) console.put(top->io_console_bits_core, (char)top->io_console_bits_char);
        if (uart) uart->sample(top->io_board_uartTx);
        if (top->io_busError_valid) {
            bus_errors++;
            std::printf("[bus] error: core %u %s at 0x%016" PRIx64 " (cycle %" PRIu64 ")\n",
                        (unsigned)top->io_busError_bits_master, top->io_busError_bits_write ? "write" : "read",
                        (uint64_t)top->io_busError_bits_addr, cycle);
        }
        if (top->io_simEnd_valid) {
            ended = true;
            code = top->io_simEnd_bits;
        }
        tick();
        cycle++;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    console.flush_all();
    top->final();
    if (fst) fst->close();

    if (uart && uart->framing_errors_)
        std::printf("nanobpf-sim: UART: %" PRIu64 " framing error(s) (bytes decoded: %" PRIu64 ")\n",
                    uart->framing_errors_, uart->bytes_);
    if (eth) {
        std::printf("nanobpf-sim: eth: host in %" PRIu64 " out %" PRIu64 ", network in %" PRIu64 " out %" PRIu64,
                    eth->sent(NANOBPF_DATAPATH_HOST_PORT), eth->received(NANOBPF_DATAPATH_HOST_PORT),
                    eth->sent(NANOBPF_DATAPATH_NET_PORT), eth->received(NANOBPF_DATAPATH_NET_PORT));
        uint64_t other = 0;
        for (unsigned p = 0; p < EthPorts::kPorts; p++)
            if (p != NANOBPF_DATAPATH_HOST_PORT && p != NANOBPF_DATAPATH_NET_PORT) other += eth->received(p);
        std::printf("%s", other ? (", " + std::to_string(other) + " on no port (a bug)").c_str() : "");
        uint64_t refused = eth->tap_dropped(NANOBPF_DATAPATH_HOST_PORT) + eth->tap_dropped(NANOBPF_DATAPATH_NET_PORT);
        std::printf("%s; input held back %" PRIu64 " cycle(s)\n", refused ? (", " + std::to_string(refused) + " refused by a TAP").c_str() : "",
                    rx_stalls);
    }
    if (opt.bus_stats) bus.print();
    int rc = code;
    const char *how = code == 0 ? "PASS" : "FAIL";
    if (!ended && ctx->gotFinish()) {
        rc = kExitFinish;
        how = "FAIL ($finish before sim_end)";
    } else if (!ended) {
        rc = kExitTimeout;
        how = "TIMEOUT (no sim_end before --max-cycles)";
    } else if (code == 0 && bus_errors) {
        rc = kExitBusError;
        how = "FAIL (bus errors)";
    }
    std::printf("nanobpf-sim: %s: exit code %d after %" PRIu64 " cycles, %" PRIu64
                " bus error(s); %.2f s wall, %.0f cycles/s\n",
                how, rc, cycle, bus_errors, secs, secs > 0 ? cycle / secs : 0.0);
    return rc;
}
