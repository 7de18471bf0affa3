// CVA6's hardware performance monitor without its counters: the same module and ports as CVA6 4.2's
// perf_counters.sv, which nanobpf-rtl-files replaces with this file when hw/defs/soc.toml [cva6]
// perf_counters is false.
//
// Why: CVA6 4.2 keeps nine 64-bit event counters (cache and TLB misses, mispredictions, ...) in
// flip-flops, about 2K LUT and 900 FF per core, and nothing on the DPU reads them (mcycle and minstret
// live in the CSR file and stay). The RISC-V privileged spec lets
// mhpmcounter3..31 be read-only zero, which is what they read here; writes are ignored.
module perf_counters import ariane_pkg::*; (
  input  logic                                    clk_i,
  input  logic                                    rst_ni,
  input  logic                                    debug_mode_i,
  input  logic [4:0]                              addr_i,
  input  logic                                    we_i,
  input  riscv::xlen_t                            data_i,
  output riscv::xlen_t                            data_o,
  input  scoreboard_entry_t [NR_COMMIT_PORTS-1:0] commit_instr_i,
  input  logic [NR_COMMIT_PORTS-1:0]              commit_ack_i,
  input  logic                                    l1_icache_miss_i,
  input  logic                                    l1_dcache_miss_i,
  input  logic                                    itlb_miss_i,
  input  logic                                    dtlb_miss_i,
  input  logic                                    sb_full_i,
  input  logic                                    if_empty_i,
  input  exception_t                              ex_i,
  input  logic                                    eret_i,
  input  bp_resolve_t                             resolved_branch_i
);
  assign data_o = '0;
endmodule
