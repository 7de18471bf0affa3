// Main memory: single-port synchronous RAM of 64-bit words with byte enables (one access per cycle,
// read data one cycle later). Vivado infers block RAM from it. Contents at time zero: in simulation
// the file named by the plusarg `+nanobpf_mem=<hex>` ($readmemh, one 64-bit word per line, `@word`
// addresses allowed), else INIT_FILE when not empty (board builds bake the firmware in).
module nanobpf_main_mem #(
  parameter int unsigned WORDS = 131072,
  parameter string       INIT_FILE = "",
  parameter bit          LOAD_PLUSARG = 1  // 0: never loaded from +nanobpf_mem (a RAM the firmware fills)
) (
  input  logic                     clock,
  input  logic                     en,
  input  logic                     we,
  input  logic [$clog2(WORDS)-1:0] addr,
  input  logic [63:0]              wdata,
  input  logic [7:0]               wstrb,
  output logic [63:0]              rdata
);
  logic [63:0] mem [0:WORDS-1];

  always_ff @(posedge clock) begin
    if (en) begin
      if (we) begin
        for (int b = 0; b < 8; b++) if (wstrb[b]) mem[addr][8*b +: 8] <= wdata[8*b +: 8];
      end
      rdata <= mem[addr];
    end
  end

  initial begin
`ifndef SYNTHESIS
    string f;
    if (LOAD_PLUSARG && $value$plusargs("nanobpf_mem=%s", f)) $readmemh(f, mem);
    else
`endif
    if (INIT_FILE != "") $readmemh(INIT_FILE, mem);
  end
endmodule
