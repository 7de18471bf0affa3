// CVA6's instruction tracer in a Verilator model (the SoC's harness and the board's: sim/verilator).
#pragma once

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

// CVA6's Verilator-only mock tracer opens "trace_hart_00.dasm" in the current directory at the first
// eval() (where initial blocks run) and logs every instruction of every core into that one shared
// file. Run that first eval in a scratch directory where the name links to /dev/null: no stray file
// in the user's directory, no disk filled by long runs (unless --insn-trace names a file).
template <class Top>
void first_eval_without_trace(Top &top, const std::string &insn_trace, int usage_exit) {
    char cwd[PATH_MAX];
    char scratch[] = "/tmp/nanobpf-sim.XXXXXX";
    if (!getcwd(cwd, sizeof cwd) || !mkdtemp(scratch)) {
        std::perror("scratch directory");
        std::exit(usage_exit);
    }
    std::string link = std::string(scratch) + "/trace_hart_00.dasm";
    std::string target = "/dev/null";
    if (!insn_trace.empty()) {
        FILE *f = std::fopen(insn_trace.c_str(), "w");
        if (!f) {
            std::fprintf(stderr, "cannot write instruction trace %s\n", insn_trace.c_str());
            std::exit(usage_exit);
        }
        std::fclose(f);
        char *abs = realpath(insn_trace.c_str(), nullptr);
        target = abs;
        std::free(abs);
    }
    if (symlink(target.c_str(), link.c_str()) != 0 || chdir(scratch) != 0) {
        std::perror("scratch directory");
        std::exit(usage_exit);
    }
    top.eval();
    if (chdir(cwd) != 0) std::perror("chdir back");
    unlink(link.c_str());
    rmdir(scratch);
}

